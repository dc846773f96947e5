"""The MCP server (python -m console_client.mcp) through the mcp package's stdio client, against
a live console."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from unittest import mock

from console_client import bindings_digest
from console_client.mcp import build_server
from mcp import Client, ClientSession, StdioServerParameters, stdio_client

from tests.client.conftest import LiveConsole, Person
from tests.client.transfer_tool import ARGUMENTS, SANDBOX, TRANSFER, WORLD

ROOT = Path(__file__).resolve().parents[2]

Session = Callable[[Any], Awaitable[Any]]  # given a ClientSession or an in-process Client


def _environment(console: LiveConsole) -> dict[str, str]:
    return {
        "CONSOLE_URL": console.url,
        "CONSOLE_API_KEY": console.key,
        "CONSOLE_PRINCIPAL": "alice",
        "CONSOLE_POLL_INTERVAL": "0.05",
        "CONSOLE_WAIT_TIMEOUT": "30",
    }


def _over_stdio(console: LiveConsole, use: Session) -> Any:
    """Start the MCP server as a subprocess over stdio, as an agent host does, and run `use`
    with a client session."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "console_client.mcp"],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", **_environment(console)},
    )

    async def run() -> Any:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await use(session)

    return asyncio.run(run())


def _with_server(console: LiveConsole, use: Session) -> Any:
    """The same server connected in-process (the mcp package's `Client(server)`): the tools run
    exactly as over stdio, without starting a Python process per test."""

    async def run() -> Any:
        async with Client(build_server()) as client:
            return await use(client)

    with mock.patch.dict(os.environ, _environment(console)):
        return asyncio.run(run())


async def _call(session: Any, tool: str, **arguments: Any) -> tuple[bool, str]:
    result = await session.call_tool(tool, arguments)
    (content,) = result.content
    return result.is_error, content.text


TOOLS = ["request_confirmation", "request_permission", "wait_for_confirmation"]


def test_it_lists_its_tools_over_stdio(console: LiveConsole) -> None:
    async def use(session: ClientSession) -> list[str]:
        return sorted(tool.name for tool in (await session.list_tools()).tools)

    assert _over_stdio(console, use) == TOOLS


def test_it_lists_the_same_tools_in_process(console: LiveConsole) -> None:
    async def use(client: Any) -> list[str]:
        return sorted(tool.name for tool in (await client.list_tools()).tools)

    assert _with_server(console, use) == TOOLS


def test_a_silent_plan_is_ready_at_once(console: LiveConsole) -> None:
    async def use(session: Any) -> tuple[bool, str]:
        return await _call(
            session,
            "request_confirmation",
            task_class=SANDBOX,
            principal="alice",
            values=ARGUMENTS,
            world=WORLD,
        )

    is_error, text = _with_server(console, use)
    assert not is_error, text
    answer = json.loads(text)
    assert answer["status"] == "ready"
    assert answer["bindings"] == ARGUMENTS
    assert answer["bindings_digest"] == bindings_digest(ARGUMENTS)


def test_a_person_edits_while_the_agent_waits(console: LiveConsole, person: Person) -> None:
    corrected = "NL91 ABNA 0417 1643 00"

    async def use(session: Any) -> tuple[dict[str, Any], tuple[bool, str]]:
        _, text = await _call(
            session, "request_confirmation", task_class=TRANSFER, principal="alice",
            values=ARGUMENTS, world=WORLD,
        )  # fmt: skip
        requested = json.loads(text)
        answered = person.answer_when_asked("edit", value=corrected)
        waited = await _call(session, "wait_for_confirmation", instance_id=requested["instance_id"])
        answered.result(timeout=30)
        return requested, waited

    requested, (is_error, text) = _with_server(console, use)
    assert requested["status"] == "awaiting_user"
    assert requested["url"] == f"{console.url}/instances/{requested['instance_id']}/"
    assert requested["blocking"] == 1
    assert not is_error, text
    answer = json.loads(text)
    assert answer["status"] == "ready"
    assert answer["bindings"] == {**ARGUMENTS, "recipient_account": corrected}
    assert answer["bindings_digest"] == bindings_digest(answer["bindings"])


def test_a_rejection_comes_back_with_its_reason(console: LiveConsole, person: Person) -> None:
    async def use(session: Any) -> tuple[bool, str]:
        _, text = await _call(
            session, "request_confirmation", task_class=TRANSFER, principal="alice",
            values=ARGUMENTS,
        )  # fmt: skip
        person.answer("reject", reason="wrong recipient")
        return await _call(
            session, "wait_for_confirmation", instance_id=json.loads(text)["instance_id"]
        )

    is_error, text = _with_server(console, use)
    assert not is_error, text
    answer = json.loads(text)
    assert (answer["status"], answer["rejected"], answer["reason"]) == (
        "cancelled",
        True,
        "wrong recipient",
    )
    assert "bindings" not in answer


def test_an_expired_instance_ends_the_wait_with_a_clear_error(console: LiveConsole) -> None:
    async def use(session: Any) -> tuple[bool, str]:
        _, text = await _call(
            session, "request_confirmation", task_class=TRANSFER, principal="alice",
            values=ARGUMENTS,
        )  # fmt: skip
        console.expire(json.loads(text)["instance_id"])
        return await _call(
            session, "wait_for_confirmation", instance_id=json.loads(text)["instance_id"]
        )

    is_error, text = _with_server(console, use)
    assert is_error
    assert "expired before the person answered" in text
    assert "nothing of it binds" in text


# --- Claude Code's permission-prompt tool ---------------------------------------------------


def _ask_permission(console: LiveConsole, **extra: Any) -> tuple[bool, str]:
    """Claude Code asks whether Bash may run a force-push; the server's answer."""

    async def use(session: Any) -> tuple[bool, str]:
        return await _call(
            session,
            "request_permission",
            tool_name="Bash",
            input={"command": "git push --force origin main"},
            **extra,
        )

    result: tuple[bool, str] = _with_server(console, use)
    return result


def test_request_permission_allows_with_the_input_the_person_confirmed(
    console: LiveConsole, person: Person
) -> None:
    answered = person.answer_when_asked("edit", value="git push origin feature")
    is_error, text = _ask_permission(console, tool_use_id="toolu_01")
    prompt = answered.result(timeout=30)["prompt"]
    assert not is_error, text
    assert json.loads(text) == {
        "behavior": "allow",
        "updatedInput": {"command": "git push origin feature"},
    }
    # The person was shown the agent's command, pre-filled, as an inference to confirm.
    assert prompt["prefill"] == "git push --force origin main"
    assert prompt["route"] == "CONFIRM"
    assert prompt["slot"] == "command"


def test_request_permission_denies_with_the_persons_reason(
    console: LiveConsole, person: Person
) -> None:
    answered = person.answer_when_asked("reject", reason="never force-push main")
    is_error, text = _ask_permission(console)
    answered.result(timeout=30)
    assert not is_error, text
    assert json.loads(text) == {
        "behavior": "deny",
        "message": "The person rejected this in the confirmation console: never force-push main",
    }
