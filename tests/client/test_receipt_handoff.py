"""The adapters hand the receipt on to a separate tool server (client/examples/tool_server.py,
run as its own process), which verifies it against the arguments it executes and redeems it."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import httpx
import pytest
from agents import Runner, RunState
from console_client import AsyncConsole, Console
from console_client.langgraph import confirm
from console_client.openai_agents import ALREADY_DONE, console_tool, resolve_interruptions
from console_client.pydantic_ai import ALREADY_DONE as PYDANTIC_ALREADY_DONE
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command

from beliefs.models import Runtime
from tests.client.conftest import RUNTIME, LiveConsole, Person, subprocess_environment
from tests.client.scripted_model import RUN_CONFIG, SAID, agent
from tests.client.transfer_tool import ARGUMENTS, TRANSFER, WORLD

pytestmark = pytest.mark.servers

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / "client" / "examples" / "tool_server.py"
AUDIENCE = "payments-service"
OTHER_SERVICE = "reporting-service"
CORRECTED = "NL91 ABNA 0417 1643 00"


@dataclass
class ToolServer:
    url: str
    ledger: Path

    def sent(self) -> list[dict[str, Any]]:
        if not self.ledger.exists():
            return []
        return [json.loads(line) for line in self.ledger.read_text().splitlines()]

    def send(self, arguments: dict[str, Any], receipt: str | None) -> httpx.Response:
        return httpx.post(f"{self.url}/transfers", json={**arguments, "receipt": receipt})


@pytest.fixture
def tool_server(console: LiveConsole, tmp_path: Path) -> Iterator[ToolServer]:
    """The tool server, writing what it sent to a ledger file; staff registered its audience
    (and another service's) for the agent's runtime."""
    with console.exclusive():
        Runtime.objects.filter(name=RUNTIME).update(audiences=[AUDIENCE, OTHER_SERVICE])
    ledger = tmp_path / "sent.jsonl"
    environment = subprocess_environment(CONSOLE_URL=console.url, CONSOLE_API_KEY=console.key)
    process = subprocess.Popen(
        [sys.executable, SERVER, "--port", "0", "--audience", AUDIENCE, "--ledger", ledger],
        cwd=ROOT,
        env=environment | {"PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()  # waits until the server listens
        assert first.startswith("listening on "), first
        yield ToolServer(first.removeprefix("listening on ").strip(), ledger)
    finally:
        process.terminate()
        process.wait(timeout=30)


def _receipt_state(console: LiveConsole, instance_id: str) -> str:
    response = httpx.get(
        f"{console.url}/api/v1/instances/{instance_id}/",
        headers={"Authorization": f"Api-Key {console.key}"},
    )
    assert response.status_code == 200, response.text
    return str(response.json()["receipt_state"])


# --- LangGraph ------------------------------------------------------------------------------


class Transfer(TypedDict, total=False):
    recipient_account: str
    memo: str
    instance_id: str
    status: int
    replayed: bool


def _graph(
    console: LiveConsole, server: ToolServer, audience: str, handed: list[str] | None = None
) -> Any:
    """A graph whose send node hands the receipt to the tool server (and to `handed`)."""

    def send(state: Transfer) -> Transfer:
        values = {"recipient_account": state["recipient_account"], "memo": state["memo"]}
        with Console(console.url, console.key, poll_interval=0.05) as client:
            confirmation = confirm(
                TRANSFER,
                "alice",
                values,
                world=WORLD,
                console=client,
                timeout=30,
                audience=audience,
                redeem="tool",
            )
        if confirmation.replayed:  # the tool server used this receipt already
            return {"instance_id": confirmation.instance_id, "replayed": True}
        assert confirmation.receipt is not None and not confirmation.redeemed
        if handed is not None:
            handed.append(confirmation.receipt)
        answer = server.send(dict(confirmation), confirmation.receipt)
        return {"instance_id": confirmation.instance_id, "status": answer.status_code}

    builder = StateGraph(Transfer)
    builder.add_node("send", send)
    builder.add_edge(START, "send")
    builder.add_edge("send", END)
    return builder.compile(checkpointer=InMemorySaver())


CONFIG = {"configurable": {"thread_id": "handoff-1"}}


def test_a_langgraph_node_hands_the_receipt_to_the_tool_server_which_uses_it_once(
    console: LiveConsole, person: Person, tool_server: ToolServer
) -> None:
    server = tool_server
    graph = _graph(console, server, AUDIENCE)
    graph.invoke(dict(ARGUMENTS), CONFIG)
    person.answer("edit", value=CORRECTED)
    done = graph.invoke(Command(resume=True), CONFIG)
    edited = {"recipient_account": CORRECTED, "memo": "rent"}
    assert done["status"] == 200
    assert server.sent() == [edited]  # the person's value, sent by the other process
    assert _receipt_state(console, done["instance_id"]) == "redeemed"

    # The node run again on the same confirmation: a replay, nothing sent again.
    paused = next(s for s in graph.get_state_history(CONFIG) if s.next == ("send",))
    again = graph.invoke(Command(resume=True), paused.config)
    assert again["replayed"] is True
    assert server.sent() == [edited]


def test_the_tool_server_refuses_a_used_tampered_or_misaddressed_receipt(
    console: LiveConsole, person: Person, tool_server: ToolServer
) -> None:
    server = tool_server
    # A receipt addressed to another service: the agent's side hands it on, the server refuses.
    graph = _graph(console, server, OTHER_SERVICE)
    graph.invoke(dict(ARGUMENTS), CONFIG)
    person.answer("confirm")
    refused = graph.invoke(Command(resume=True), CONFIG)
    assert refused["status"] == 403
    assert server.sent() == []
    assert _receipt_state(console, refused["instance_id"]) == "valid"  # never redeemed

    with Console(console.url, console.key) as client:
        token = client.get(refused["instance_id"])["receipt"]
    answer = server.send(dict(ARGUMENTS), token)
    assert (answer.status_code, answer.json()["error"]) == (403, "receipt_audience_mismatch")

    # One addressed to it: other values than the receipt's are refused, the right ones are
    # sent once, and the same receipt a second time is refused.
    other = {"configurable": {"thread_id": "handoff-2"}}
    handed: list[str] = []
    graph = _graph(console, server, AUDIENCE, handed)
    graph.invoke(dict(ARGUMENTS), other)
    person.answer("confirm")
    done = graph.invoke(Command(resume=True), other)
    assert done["status"] == 200 and server.sent() == [ARGUMENTS]
    with Console(console.url, console.key) as client:
        state = client.get(done["instance_id"])
    assert state["receipt_state"] == "redeemed" and state["receipt"] is None

    (token,) = handed
    forged = {**ARGUMENTS, "memo": "rent and a bonus"}
    answer = server.send(forged, token)
    assert (answer.status_code, answer.json()["error"]) == (403, "receipt_digest_mismatch")
    answer = server.send(dict(ARGUMENTS), token)
    assert (answer.status_code, answer.json()["error"]) == (409, "receipt_redeemed")
    assert server.send(dict(ARGUMENTS), None).status_code == 400
    assert server.sent() == [ARGUMENTS]


# --- OpenAI Agents --------------------------------------------------------------------------


def test_a_console_tool_passes_the_receipt_to_its_function_and_the_tool_server_redeems_it(
    console: LiveConsole, person: Person, tool_server: ToolServer
) -> None:
    server = tool_server
    statuses: list[int] = []

    def send_transfer(recipient_account: str, memo: str, receipt: str) -> str:
        """Send a transfer.

        Args:
            recipient_account: The IBAN to send to.
            memo: A note for the recipient.
            receipt: The console's receipt (handed over by the tool, never by the model).
        """
        answer = server.send({"recipient_account": recipient_account, "memo": memo}, receipt)
        statuses.append(answer.status_code)
        return f"sent to {recipient_account}" if answer.is_success else answer.text

    tool = console_tool(
        send_transfer,
        task_class=TRANSFER,
        principal="alice",
        world=WORLD,
        console=lambda: AsyncConsole(console.url, console.key, poll_interval=0.05),
        audience=AUDIENCE,
        redeem="tool",
    )
    # The model is never asked for the receipt.
    assert set(tool.params_json_schema["properties"]) == {"recipient_account", "memo"}

    async def run(input_or_state: Any) -> Any:
        return await Runner.run(agent(tool, ARGUMENTS), input_or_state, run_config=RUN_CONFIG)

    first = asyncio.run(run("pay Bob his rent"))
    person.answer("edit", value=CORRECTED)
    stored = asyncio.run(resolve_interruptions(first, timeout=30)).to_string()

    async def resume() -> Any:
        return await run(await RunState.from_string(agent(tool, ARGUMENTS), stored))

    result = asyncio.run(resume())
    assert result.final_output.startswith(SAID + "sent to " + CORRECTED)
    assert statuses == [200]
    assert server.sent() == [{"recipient_account": CORRECTED, "memo": "rent"}]
    # Resumed again from the same state: the tool server used the receipt, so the function is
    # not called again and the model reads that it already ran.
    again = asyncio.run(resume())
    assert again.final_output == SAID + ALREADY_DONE
    assert statuses == [200]


def test_redeem_by_the_tool_needs_a_receipt_parameter_and_an_audience() -> None:
    def send_transfer(recipient_account: str, memo: str) -> str:
        return "sent"

    def with_receipt(recipient_account: str, memo: str, receipt: str) -> str:
        return "sent"

    with pytest.raises(ValueError, match="`receipt` parameter"):
        console_tool(
            send_transfer, task_class=TRANSFER, principal="alice", audience="x", redeem="tool"
        )
    with pytest.raises(ValueError, match="audience="):
        console_tool(with_receipt, task_class=TRANSFER, principal="alice", redeem="tool")
    with pytest.raises(ValueError, match="redeem must be one of"):
        console_tool(with_receipt, task_class=TRANSFER, principal="alice", redeem="server")


# --- Pydantic AI ----------------------------------------------------------------------------


def test_a_pydantic_ai_tool_passes_the_receipt_to_its_function_and_the_tool_server_redeems_it(
    console: LiveConsole, person: Person, tool_server: ToolServer
) -> None:
    from console_client.pydantic_ai import console_tool as pydantic_tool
    from console_client.pydantic_ai import resolve_approvals
    from pydantic_ai import Agent
    from pydantic_ai.tools import DeferredToolRequests

    from tests.client.test_pydantic_ai import scripted

    statuses: list[int] = []

    def send_transfer(recipient_account: str, memo: str, receipt: str) -> str:
        answer = tool_server.send({"recipient_account": recipient_account, "memo": memo}, receipt)
        statuses.append(answer.status_code)
        return f"sent to {recipient_account}" if answer.is_success else answer.text

    def factory() -> AsyncConsole:
        return AsyncConsole(console.url, console.key, poll_interval=0.05)

    tool = pydantic_tool(
        send_transfer,
        task_class=TRANSFER,
        principal="alice",
        world=WORLD,
        console=factory,
        audience=AUDIENCE,
        redeem="tool",
    )
    assert "receipt" not in tool.tool_def.parameters_json_schema["properties"]
    agent = Agent(scripted(ARGUMENTS), tools=[tool], output_type=[str, DeferredToolRequests])
    first = agent.run_sync("pay Bob his rent")
    person.answer("edit", value=CORRECTED)
    approvals = asyncio.run(resolve_approvals(first.output, console=factory, timeout=30))
    history = first.all_messages()
    done = agent.run_sync(message_history=history, deferred_tool_results=approvals)
    assert done.output.startswith("The tool said: sent to " + CORRECTED)
    assert statuses == [200]
    assert tool_server.sent() == [{"recipient_account": CORRECTED, "memo": "rent"}]
    # Run again on the same approval: the service used the receipt, so nothing is sent.
    again = agent.run_sync(message_history=history, deferred_tool_results=approvals)
    assert again.output == "The tool said: " + PYDANTIC_ALREADY_DONE
    assert statuses == [200]
