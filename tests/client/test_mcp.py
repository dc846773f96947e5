"""The MCP server (python -m console_client.mcp) through the mcp package's stdio client, against
a live console."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any
from unittest import mock

import pytest
from console_client import bindings_digest
from console_client.mcp import build_server
from mcp import Client, ClientSession, StdioServerParameters, stdio_client

from beliefs.models import Prompt, PromptState, TaskInstance
from tests.client.conftest import LiveConsole, Person, subprocess_environment
from tests.client.transfer_tool import ARGUMENTS, SANDBOX, TRANSFER, WORLD

ROOT = Path(__file__).resolve().parents[2]

Session = Callable[[Any], Awaitable[Any]]  # given a ClientSession or an in-process Client


def _environment(url: str, key: str) -> dict[str, str]:
    return {
        "CONSOLE_URL": url,
        "CONSOLE_API_KEY": key,
        "CONSOLE_PRINCIPAL": "alice",
        "CONSOLE_POLL_INTERVAL": "0.05",
        "CONSOLE_WAIT_TIMEOUT": "30",
        # Progress notifications go only to a call that asked for them (a progress token):
        # test_the_wait_sends_progress_notifications does, and need not wait the default 5 s.
        "CONSOLE_PROGRESS_INTERVAL": "0.1",
    }


def _parameters(url: str, key: str, **environment: str) -> StdioServerParameters:
    """The MCP server as an agent host starts it: a subprocess speaking over stdio."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "console_client.mcp"],
        cwd=ROOT,
        env=subprocess_environment(**{**_environment(url, key), **environment}),
    )


def _over_stdio(console: LiveConsole, use: Session, **environment: str) -> Any:
    """Start the MCP server as a subprocess of its own with this environment, and run `use`
    with a client session (for a setting the shared server does not have)."""
    params = _parameters(console.url, console.key, **environment)

    async def run() -> Any:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await use(session)

    return asyncio.run(run())


class StdioServer:
    """One `python -m console_client.mcp` subprocess for the module's tests, as an agent host
    keeps one for its session: the server keeps nothing between tool calls (each call reads
    the environment and opens its own connection to the console), and the console's runtime
    key is the same in every test. Its client session lives on an event loop in a thread of
    its own, where `run` runs each test's use of it. Starting Python with the mcp package
    costs some 0.7 s, and it takes 0.15 s more to exit."""

    def __init__(self, params: StdioServerParameters, errlog: IO[str]) -> None:
        self.errlog = errlog
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="mcp-stdio")
        self.thread.start()
        self._stop = asyncio.Event()
        opened: Future[ClientSession] = Future()
        self._held = asyncio.run_coroutine_threadsafe(self._hold(params, opened), self.loop)
        try:
            self.session = opened.result(timeout=60)
        except BaseException:
            self.close()
            raise

    async def _hold(self, params: StdioServerParameters, opened: Future[ClientSession]) -> None:
        try:
            async with (
                stdio_client(params, errlog=self.errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                opened.set_result(session)
                await self._stop.wait()
        except BaseException as error:
            if not opened.done():
                opened.set_exception(error)
            raise

    def run(self, use: Session) -> Any:
        """`use(session)` on the session's loop; what it returns, or what it raised, with the
        server's stderr so far."""
        running = asyncio.run_coroutine_threadsafe(use(self.session), self.loop)
        try:
            return running.result(timeout=120)
        except BaseException as error:
            running.cancel()
            self.errlog.flush()
            error.add_note("The MCP server's stderr:\n" + Path(self.errlog.name).read_text())
            raise

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self._stop.set)
        try:
            self._held.result(timeout=30)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join()
            self.loop.close()


@pytest.fixture(scope="module")
def stdio(
    live_server: Any, agent_key: tuple[str, str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[StdioServer]:
    """The module's one MCP server over stdio; a test using it also uses `console`, which
    stores the key it was started with."""
    path = tmp_path_factory.mktemp("mcp") / "stderr.txt"
    with path.open("w") as errlog:
        server = StdioServer(_parameters(live_server.url, agent_key[0]), errlog)
        try:
            yield server
        finally:
            server.close()


def _with_server(console: LiveConsole, use: Session) -> Any:
    """The same server connected in-process (the mcp package's `Client(server)`): the tools run
    exactly as over stdio, without starting a Python process per test."""

    async def run() -> Any:
        async with Client(build_server()) as client:
            return await use(client)

    with mock.patch.dict(os.environ, _environment(console.url, console.key)):
        return asyncio.run(run())


async def _call(session: Any, tool: str, **arguments: Any) -> tuple[bool, str]:
    result = await session.call_tool(tool, arguments)
    (content,) = result.content
    return result.is_error, content.text


TOOLS = ["request_confirmation", "request_permission", "wait_for_confirmation"]


@pytest.mark.servers
def test_it_lists_its_tools_over_stdio(console: LiveConsole, stdio: StdioServer) -> None:
    async def use(session: ClientSession) -> list[str]:
        return sorted(tool.name for tool in (await session.list_tools()).tools)

    assert stdio.run(use) == TOOLS


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


# --- one call, its own keys, its own types, once --------------------------------------------


def _answer_every_prompt(
    person: Person, done: threading.Event, edits: dict[str, Any] | None = None
) -> Future[list[str]]:
    """Answer each blocking prompt as it appears (an edit where `edits` names its slot, else a
    confirm) until `done` is set; the slots asked, in order."""

    def run() -> list[str]:
        asked: list[str] = []
        while not done.is_set():
            for prompt in person.open_prompts():
                asked.append(prompt["slot"])
                if prompt["slot"] in (edits or {}):
                    person.respond(prompt, "edit", value=(edits or {})[prompt["slot"]])
                else:
                    person.respond(prompt, "confirm")
            done.wait(0.05)
        return asked

    executor = ThreadPoolExecutor(max_workers=1)
    future = executor.submit(run)
    executor.shutdown(wait=False)
    return future


def _permission_over_stdio(
    stdio: StdioServer,
    person: Person,
    calls: list[dict[str, Any]],
    edits: dict[str, Any] | None = None,
) -> tuple[list[dict[str, Any]], list[str]]:
    """Ask request_permission for each call in turn over one stdio session while the person
    answers every prompt; the answers, and the slots the person was asked."""
    done = threading.Event()
    asked = _answer_every_prompt(person, done, edits)

    async def use(session: ClientSession) -> list[dict[str, Any]]:
        answers = []
        for call in calls:
            is_error, text = await _call(session, "request_permission", **call)
            assert not is_error, text
            answers.append(json.loads(text))
        return answers

    try:
        answers = stdio.run(use)
    finally:
        done.set()
    return answers, asked.result(timeout=30)


@pytest.mark.servers
def test_a_call_is_asked_only_its_own_keys(
    console: LiveConsole, person: Person, stdio: StdioServer
) -> None:
    earlier = {"command": "npm test", "timeout": 60000, "description": "run the tests"}
    later = {"command": "terraform apply"}
    answers, asked = _permission_over_stdio(
        stdio,
        person,
        [
            {"tool_name": "Bash", "input": earlier, "tool_use_id": "toolu_1"},
            {"tool_name": "Bash", "input": later, "tool_use_id": "toolu_2"},
        ],
        edits={"command": "terraform plan"},
    )
    assert answers == [
        {"behavior": "allow", "updatedInput": {**earlier, "command": "terraform plan"}},
        {"behavior": "allow", "updatedInput": {"command": "terraform plan"}},
    ]
    # The later call was asked about its one key, not the keys the earlier call brought.
    assert sorted(asked[:3]) == ["command", "description", "timeout"]
    assert asked[3:] == ["command"]
    with console.exclusive():
        last = TaskInstance.objects.order_by("created_at").last()
        assert last is not None and sorted(last.bindings) == ["command"]


@pytest.mark.servers
def test_an_edited_boolean_comes_back_a_boolean(
    console: LiveConsole, person: Person, stdio: StdioServer
) -> None:
    call = {"command": "npm run dev", "run_in_background": True, "timeout": 120000}
    answers, _ = _permission_over_stdio(
        stdio,
        person,
        [{"tool_name": "Bash", "input": call, "tool_use_id": "toolu_1"}],
        edits={"run_in_background": "false", "timeout": "60000"},  # as a browser form sends
    )
    (answer,) = answers
    assert answer["updatedInput"] == {
        "command": "npm run dev",
        "run_in_background": False,
        "timeout": 60000,
    }
    updated = answer["updatedInput"]
    assert updated["run_in_background"] is False and type(updated["timeout"]) is int


@pytest.mark.servers
def test_the_same_tool_use_is_allowed_once(
    console: LiveConsole, person: Person, stdio: StdioServer
) -> None:
    call = {"tool_name": "Bash", "input": {"command": "ls"}, "tool_use_id": "toolu_1"}
    answers, asked = _permission_over_stdio(stdio, person, [call, call])
    assert answers[0] == {"behavior": "allow", "updatedInput": {"command": "ls"}}
    assert answers[1]["behavior"] == "deny"
    assert "already allowed once" in answers[1]["message"]
    assert asked == ["command"]  # the repeat found the same instance: asked once


def test_a_timeout_cancels_the_instance_before_it_denies(console: LiveConsole) -> None:
    async def use(session: ClientSession) -> tuple[bool, str]:
        return await _call(
            session,
            "request_permission",
            tool_name="Bash",
            input={"command": "rm -rf build"},
            tool_use_id="toolu_1",
        )

    is_error, text = _over_stdio(console, use, CONSOLE_WAIT_TIMEOUT="0.3")
    assert not is_error, text
    answer = json.loads(text)
    assert answer["behavior"] == "deny"
    assert "cancelled" in answer["message"]
    with console.exclusive():
        (instance,) = TaskInstance.objects.all()
        assert instance.status == "cancelled"
        assert not Prompt.objects.filter(instance=instance, state=PromptState.OPEN).exists()


@pytest.mark.servers
def test_the_wait_sends_progress_notifications(
    console: LiveConsole, person: Person, stdio: StdioServer
) -> None:
    progressed = threading.Event()
    messages: list[str | None] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        messages.append(message)
        progressed.set()

    def answer_after_progress() -> dict[str, Any]:
        assert progressed.wait(30), "no progress notification while waiting"
        return person.answer("confirm")

    executor = ThreadPoolExecutor(max_workers=1)
    answered = executor.submit(answer_after_progress)
    executor.shutdown(wait=False)

    async def use(session: ClientSession) -> Any:
        return await session.call_tool(
            "request_permission",
            {"tool_name": "Bash", "input": {"command": "ls"}},
            progress_callback=on_progress,
        )

    result = stdio.run(use)
    answered.result(timeout=30)
    assert json.loads(result.content[0].text)["behavior"] == "allow"
    assert messages and "/instances/" in str(messages[0])
