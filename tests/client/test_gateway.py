"""The MCP gateway between an MCP client and a real upstream MCP server (both over stdio, the
mcp package on both sides), against a live console."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from beliefs.models import Slot, TaskInstance
from tests.client.conftest import LiveConsole, Person, subprocess_environment

pytestmark = pytest.mark.servers

ROOT = Path(__file__).resolve().parents[2]
UPSTREAM = f"{sys.executable} {ROOT / 'tests' / 'client' / 'upstream_server.py'}"
CONFIG = """
principal = "alice"
passthrough = ["get_balance"]

[tools.send_transfer]
task_class = "mcp.payments.send_transfer"
"""


def _over_gateway(console: LiveConsole, tmp_path: Path, use: Any, **environment: str) -> Any:
    ledger = tmp_path / "upstream.jsonl"
    config = tmp_path / "gateway.toml"
    config.write_text(CONFIG)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "console_client.gateway", "--upstream", UPSTREAM, "--config", str(config)],
        cwd=str(ROOT),
        env=subprocess_environment(
            CONSOLE_URL=console.url,
            CONSOLE_API_KEY=console.key,
            CONSOLE_POLL_INTERVAL="0.05",
            UPSTREAM_LEDGER=str(ledger),
            **environment,
        ),
    )

    async def run() -> Any:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await use(session)

    return asyncio.run(run()), ledger


def _sent(ledger: Path) -> list[dict[str, Any]]:
    if not ledger.exists():
        return []
    return [json.loads(line) for line in ledger.read_text().splitlines()]


TRANSFER = {"recipient_account": "DE89 3704 0044 0532 0130 00", "amount": 120}


def test_the_client_sees_the_upstreams_tools_unchanged(
    console: LiveConsole, tmp_path: Path
) -> None:
    async def use(session: ClientSession) -> Any:
        return (await session.list_tools()).tools

    tools, _ = _over_gateway(console, tmp_path, use)
    by_name = {tool.name: tool for tool in tools}
    assert sorted(by_name) == ["get_balance", "send_transfer"]
    schema = by_name["send_transfer"].input_schema
    assert sorted(schema["properties"]) == ["amount", "instant", "recipient_account"]
    assert by_name["send_transfer"].description == "Send money to an account."


def test_a_passthrough_tool_is_never_gated(console: LiveConsole, tmp_path: Path) -> None:
    async def use(session: ClientSession) -> Any:
        return await session.call_tool("get_balance", {})

    result, ledger = _over_gateway(console, tmp_path, use)
    assert not result.is_error and result.content[0].text == "balance: 1000 EUR"
    assert _sent(ledger) == [{"tool": "get_balance"}]
    with console.exclusive():
        assert not TaskInstance.objects.exists()


def test_a_gated_call_waits_for_the_person_and_reaches_the_upstream_with_the_edit(
    console: LiveConsole, person: Person, tmp_path: Path
) -> None:
    def answer() -> None:
        for _ in TRANSFER:  # a class registered on first use: every slot is asked
            prompt = person.wait_for_prompt()
            if prompt["slot"] == "amount":
                person.respond(prompt, "edit", value="99.5")
            else:
                person.respond(prompt, "confirm")

    async def use(session: ClientSession) -> Any:
        answering = asyncio.create_task(asyncio.to_thread(answer))
        result = await session.call_tool("send_transfer", dict(TRANSFER))
        await answering
        return result

    result, ledger = _over_gateway(console, tmp_path, use)
    assert not result.is_error, result
    assert result.content[0].text == "sent 99.5 EUR to DE89 3704 0044 0532 0130 00"
    assert _sent(ledger) == [
        {"tool": "send_transfer", **TRANSFER, "amount": 99.5, "instant": False}
    ]
    with console.exclusive():
        (instance,) = TaskInstance.objects.all()
        assert instance.task_class.key == "mcp.payments.send_transfer"
        assert instance.status == "ready"
        types = dict(
            Slot.objects.filter(task_class=instance.task_class).values_list("key", "value_type")
        )
    # Registered from the input schema: every property, typed, though the call left one out.
    assert types == {"recipient_account": "string", "amount": "number", "instant": "boolean"}


def test_a_rejected_call_returns_the_reason_and_never_reaches_the_upstream(
    console: LiveConsole, person: Person, tmp_path: Path
) -> None:
    def reject() -> None:
        person.respond(person.wait_for_prompt(), "reject", reason="wrong account")

    async def use(session: ClientSession) -> Any:
        rejecting = asyncio.create_task(asyncio.to_thread(reject))
        result = await session.call_tool("send_transfer", dict(TRANSFER))
        await rejecting
        return result

    result, ledger = _over_gateway(console, tmp_path, use)
    assert result.is_error
    assert result.content[0].text == (
        "The person rejected this in the confirmation console: wrong account"
    )
    assert _sent(ledger) == []


def test_a_call_nobody_answers_is_cancelled_and_never_reaches_the_upstream(
    console: LiveConsole, tmp_path: Path
) -> None:
    async def use(session: ClientSession) -> Any:
        return await session.call_tool("send_transfer", dict(TRANSFER))

    result, ledger = _over_gateway(console, tmp_path, use, CONSOLE_WAIT_TIMEOUT="0.5")
    assert result.is_error and "cancelled" in result.content[0].text
    assert _sent(ledger) == []
    with console.exclusive():
        assert TaskInstance.objects.get().status == "cancelled"
