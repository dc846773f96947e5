"""The Pydantic AI adapter against a live console, with a scripted model (Pydantic AI's own
FunctionModel): deferred approvals answered in the console, edits, rejections, receipts."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from console_client import AsyncConsole, DigestMismatch, NotReady
from console_client.pydantic_ai import (
    ALREADY_DONE,
    INSTANCE,
    console_tool,
    resolve_approvals,
)
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, ToolApproved

from beliefs.models import TaskInstance
from tests.client.conftest import LiveConsole, Person, subprocess_environment
from tests.client.transfer_tool import ARGUMENTS, SANDBOX, TRANSFER, WORLD, Ledger

ROOT = Path(__file__).resolve().parents[2]
SAID = "The tool said: "
CORRECTED = "NL91 ABNA 0417 1643 00"


def scripted(arguments: dict[str, Any]) -> FunctionModel:
    """Calls send_transfer with `arguments` once, then says what the tool answered."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        returned = [
            p
            for p in (last.parts if isinstance(last, ModelRequest) else [])
            if isinstance(p, ToolReturnPart)
        ]
        if returned:
            return ModelResponse(parts=[TextPart(SAID + str(returned[-1].content))])
        return ModelResponse(
            parts=[ToolCallPart("send_transfer", dict(arguments), tool_call_id="call_1")]
        )

    return FunctionModel(respond)


def _agent(console: LiveConsole, ledger: Ledger, task_class: str = TRANSFER) -> Agent[Any, Any]:
    tool = console_tool(
        ledger.send_transfer,
        task_class=task_class,
        principal="alice",
        world=WORLD,
        console=lambda: AsyncConsole(console.url, console.key, poll_interval=0.05),
    )
    return Agent(scripted(ARGUMENTS), tools=[tool], output_type=[str, DeferredToolRequests])


def _factory(console: LiveConsole) -> Any:
    return lambda: AsyncConsole(console.url, console.key, poll_interval=0.05)


def test_a_silent_plan_runs_the_tool_at_once(console: LiveConsole) -> None:
    ledger = Ledger()
    result = _agent(console, ledger, SANDBOX).run_sync("pay Bob his rent")
    assert result.output == SAID + "sent to " + ARGUMENTS["recipient_account"]
    assert ledger.calls == [ARGUMENTS]


@pytest.mark.parametrize("action", ["confirm", "edit", "reject"])
def test_a_blocking_call_waits_for_the_person(
    console: LiveConsole, person: Person, action: str
) -> None:
    ledger = Ledger()
    agent = _agent(console, ledger)
    first = agent.run_sync("pay Bob his rent")
    assert isinstance(first.output, DeferredToolRequests)
    (call,) = first.output.approvals
    (instance,) = _instances(console)
    assert first.output.metadata[call.tool_call_id][INSTANCE] == str(instance.pk)
    assert ledger.calls == []
    answer = {"edit": {"value": CORRECTED}, "reject": {"reason": "not this account"}}
    person.answer(action, **answer.get(action, {}))

    async def resume() -> Any:
        approvals = await resolve_approvals(first.output, console=_factory(console), timeout=30)
        return await agent.run(
            message_history=first.all_messages(), deferred_tool_results=approvals
        )

    result = asyncio.run(resume())
    if action == "reject":
        assert ledger.calls == []
        assert "Their reason: not this account" in result.output
        return
    account = CORRECTED if action == "edit" else ARGUMENTS["recipient_account"]
    assert ledger.calls == [{"recipient_account": account, "memo": "rent"}]
    assert result.output.startswith(SAID + "sent to " + account)
    assert ("The person changed values" in result.output) is (action == "edit")


def _instances(console: LiveConsole) -> list[TaskInstance]:
    with console.exclusive():
        return list(TaskInstance.objects.all())


def test_an_approval_runs_the_tool_once_and_never_without_the_console(
    console: LiveConsole, person: Person
) -> None:
    ledger = Ledger()
    agent = _agent(console, ledger)
    first = agent.run_sync("pay Bob his rent")
    person.answer("confirm")
    approvals = asyncio.run(resolve_approvals(first.output, console=_factory(console), timeout=30))
    history = first.all_messages()
    (call,) = first.output.approvals
    # An approval made up by the caller (no console instance behind it) never runs the tool,
    # nor one whose arguments were changed after the person confirmed.
    forged = DeferredToolResults(approvals={call.tool_call_id: True})
    with pytest.raises(NotReady, match="approved without the console"):
        agent.run_sync(message_history=history, deferred_tool_results=forged)
    tampered = DeferredToolResults(
        approvals={call.tool_call_id: ToolApproved(override_args={**ARGUMENTS, "memo": "x"})},
        metadata=approvals.metadata,
    )
    with pytest.raises(DigestMismatch):
        agent.run_sync(message_history=history, deferred_tool_results=tampered)
    assert ledger.calls == []

    agent.run_sync(message_history=history, deferred_tool_results=approvals)
    assert ledger.calls == [ARGUMENTS]
    # The same approval again: the receipt is spent, the tool does not run.
    again = agent.run_sync(message_history=history, deferred_tool_results=approvals)
    assert again.output == SAID + ALREADY_DONE
    with pytest.raises(DigestMismatch):  # and a replay with other arguments is refused too
        agent.run_sync(message_history=history, deferred_tool_results=tampered)
    assert ledger.calls == [ARGUMENTS]


@pytest.mark.servers
def test_the_offline_example_waits_for_alice_and_sends_her_amount(
    console: LiveConsole, person: Person
) -> None:
    running = subprocess.Popen(
        [sys.executable, ROOT / "client" / "examples" / "pydantic_ai_transfer.py"],
        cwd=ROOT,
        env=subprocess_environment(CONSOLE_URL=console.url, CONSOLE_API_KEY=console.key),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        for _ in range(2):  # a class registered on first use: both slots are asked
            prompt = person.wait_for_prompt()
            if prompt["slot"] == "amount":
                person.respond(prompt, "edit", value="99.5")
            else:
                person.respond(prompt, "confirm")
        out, err = running.communicate(timeout=60)
    finally:
        running.kill()
    assert running.returncode == 0, err
    assert "alice answers at " + console.url + "/instances/" in out
    assert "Done: sent 99.5 EUR to DE89 3704 0044 0532 0130 00" in out
