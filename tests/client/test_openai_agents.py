"""The OpenAI Agents SDK adapter against a live console, with a scripted model (no network)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from agents import Runner, RunResult, RunResultStreaming, RunState
from console_client import InstanceExpired, bindings_digest
from console_client.openai_agents import (
    ALREADY_DONE,
    ConsoleInstance,
    instance_of,
    resolve_interruptions,
)

from beliefs.models import TaskInstance
from tests.client.conftest import LiveConsole, Person, subprocess_environment
from tests.client.scripted_model import RUN_CONFIG, SAID, agent
from tests.client.transfer_tool import (
    ARGUMENTS,
    SANDBOX,
    TRANSFER,
    WORLD,
    Ledger,
    transfer_tool,
)

ROOT = Path(__file__).resolve().parents[2]


def _tool(console: LiveConsole, ledger: Ledger, task_class: str = TRANSFER) -> Any:
    return transfer_tool(console.url, console.key, ledger, task_class)


def _instance(console: LiveConsole) -> dict[str, Any]:
    """The runtime's view of the run's one instance."""
    with console.exclusive():
        instance_id = TaskInstance.objects.get().pk
    response = httpx.get(
        f"{console.url}/api/v1/instances/{instance_id}/",
        headers={"Authorization": f"Api-Key {console.key}"},
    )
    assert response.status_code == 200, response.text
    return response.json()


async def _run(tool: Any, input_or_state: Any, arguments: dict[str, Any] = ARGUMENTS) -> RunResult:
    return await Runner.run(agent(tool, arguments), input_or_state, run_config=RUN_CONFIG)


def _changed(corrected: str) -> str:
    return (
        "The person changed values in the confirmation console; the tool ran with theirs, not "
        f'yours: recipient_account: "{ARGUMENTS["recipient_account"]}" → "{corrected}"'
    )


def test_a_silent_plan_runs_the_tool_without_a_pause(console: LiveConsole) -> None:
    ledger = Ledger()
    result = asyncio.run(_run(_tool(console, ledger, SANDBOX), "pay Bob his rent"))
    assert result.interruptions == []
    assert ledger.calls == [ARGUMENTS]
    assert result.final_output == SAID + "sent to " + ARGUMENTS["recipient_account"]
    instance = _instance(console)
    assert instance["status"] == "ready"
    assert {i["slot"]: i["route"] for i in instance["plan"]} == {
        "recipient_account": "SURFACED",
        "memo": "SILENT",
    }
    # The model's arguments became inference beliefs referring to the world the runtime stated.
    assert instance["world"] == WORLD


def test_an_edit_in_the_console_reaches_the_tool(console: LiveConsole, person: Person) -> None:
    ledger = Ledger()
    tool = _tool(console, ledger)
    first = asyncio.run(_run(tool, "pay Bob his rent"))
    assert len(first.interruptions) == 1 and ledger.calls == []
    prompt = person.wait_for_prompt()
    assert (prompt["route"], prompt["slot"]) == ("CONFIRM", "recipient_account")
    assert prompt["prefill"] == ARGUMENTS["recipient_account"]
    assert prompt["belief"]["source"] == "inference"
    corrected = "NL91 ABNA 0417 1643 00"
    answered = person.answer_when_asked("edit", value=corrected)

    async def resume() -> RunResult:
        state = await resolve_interruptions(first, timeout=30)
        return await _run(tool, state)

    result = asyncio.run(resume())
    answered.result(timeout=30)
    assert ledger.calls == [{"recipient_account": corrected, "memo": "rent"}]
    # The model is told that the person changed its value, and to what.
    assert result.final_output == SAID + "sent to " + corrected + "\n\n" + _changed(corrected)
    instance = _instance(console)
    assert instance["bindings"] == {"recipient_account": corrected, "memo": "rent"}
    assert instance["bindings_digest"] == bindings_digest(instance["bindings"])


def _answered_run(
    console: LiveConsole, person: Person, action: str, **answer: Any
) -> tuple[Ledger, RunResult]:
    """A run that pauses, the person's answer, and the resumed run: what the tool was called
    with, and how the run ended."""
    ledger = Ledger()
    tool = _tool(console, ledger)
    first = asyncio.run(_run(tool, "pay Bob his rent"))
    person.answer(action, **answer)
    state = asyncio.run(resolve_interruptions(first, timeout=30))
    return ledger, asyncio.run(_run(tool, state))


def test_a_confirm_runs_the_tool_with_the_models_value(
    console: LiveConsole, person: Person
) -> None:
    ledger, _ = _answered_run(console, person, "confirm")
    assert ledger.calls == [ARGUMENTS]


def test_a_rejection_reaches_the_model_with_its_reason(
    console: LiveConsole, person: Person
) -> None:
    ledger, result = _answered_run(console, person, "reject", reason="Bob was paid yesterday")
    assert ledger.calls == []
    assert "Bob was paid yesterday" in result.final_output
    assert result.final_output.startswith(SAID + "The person rejected this call")


def test_an_expired_instance_ends_the_wait_with_a_clear_error(console: LiveConsole) -> None:
    ledger = Ledger()
    first = asyncio.run(_run(_tool(console, ledger), "pay Bob his rent"))
    instance_id = _instance(console)["id"]
    console.expire(instance_id)
    with pytest.raises(InstanceExpired, match="expired before the person answered") as caught:
        asyncio.run(resolve_interruptions(first, timeout=30))
    assert caught.value.instance_id == instance_id
    assert ledger.calls == []


RESUME = """
import asyncio, json, sys
from agents import Runner, RunState
from console_client.openai_agents import resolve_interruptions
from tests.client.scripted_model import RUN_CONFIG
from tests.client.scripted_model import agent
from tests.client.transfer_tool import ARGUMENTS, Ledger, transfer_tool

url, key, path = sys.argv[1:]
ledger = Ledger()
the_agent = agent(transfer_tool(url, key, ledger), ARGUMENTS)

async def main():
    state = await RunState.from_string(the_agent, open(path).read())
    state = await resolve_interruptions(state, timeout=30)
    result = await Runner.run(the_agent, state, run_config=RUN_CONFIG)
    print(json.dumps({"calls": ledger.calls, "final_output": result.final_output}))

asyncio.run(main())
"""


@pytest.mark.servers
def test_the_run_state_resumes_in_another_process(
    console: LiveConsole, person: Person, tmp_path: Path
) -> None:
    ledger = Ledger()
    first = asyncio.run(_run(_tool(console, ledger), "pay Bob his rent"))
    stored = tmp_path / "run_state.json"
    stored.write_text(first.to_state().to_string())
    corrected = "FR14 2004 1010 0505 0001 3M02 606"
    person.answer("edit", value=corrected)
    done = subprocess.run(
        [sys.executable, "-c", RESUME, console.url, console.key, str(stored)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=subprocess_environment(OPENAI_AGENTS_DISABLE_TRACING="1"),
    )
    assert done.returncode == 0, done.stderr
    output = json.loads(done.stdout.strip().splitlines()[-1])
    assert output["calls"] == [{"recipient_account": corrected, "memo": "rent"}]
    assert output["final_output"] == SAID + "sent to " + corrected + "\n\n" + _changed(corrected)
    assert ledger.calls == []  # this process never ran the tool


def test_run_state_round_trips_before_the_person_answers(console: LiveConsole) -> None:
    """The stored state still names the pending call after a round trip (what a server stores
    while the person has not answered yet)."""
    first = asyncio.run(_run(_tool(console, Ledger()), "pay Bob his rent"))
    tool = _tool(console, Ledger())

    async def reload() -> RunState[Any, Any]:
        return await RunState.from_string(agent(tool, ARGUMENTS), first.to_state().to_string())

    state = asyncio.run(reload())
    (item,) = state.get_interruptions()
    assert item.tool_name == "send_transfer"


# --- receipts: a confirmation binds one call, once ------------------------------------------

OTHER = {"recipient_account": "GB33 BUKB 2020 1555 5555 55", "memo": "999 EUR"}


def _instances(console: LiveConsole) -> list[TaskInstance]:
    with console.exclusive():
        return list(TaskInstance.objects.order_by("created_at"))


def test_a_call_id_reused_with_other_arguments_is_asked_again(
    console: LiveConsole, person: Person
) -> None:
    ledger, _ = _answered_run(console, person, "confirm")
    assert ledger.calls == [ARGUMENTS]
    tool = _tool(console, ledger)
    # The same call id (the scripted model always uses one), other arguments: a new instance
    # that the person is asked about, and nothing runs meanwhile.
    again = asyncio.run(_run(tool, "pay someone 999 EUR", OTHER))
    assert len(again.interruptions) == 1
    assert ledger.calls == [ARGUMENTS]
    first, second = _instances(console)
    assert (first.status, second.status) == ("ready", "awaiting_user")
    prompt = person.wait_for_prompt()
    assert (prompt["slot"], prompt["prefill"]) == ("recipient_account", OTHER["recipient_account"])


def test_one_confirmation_runs_the_tool_once(console: LiveConsole, person: Person) -> None:
    ledger = Ledger()
    tool = _tool(console, ledger)
    first = asyncio.run(_run(tool, "pay Bob his rent"))
    person.answer("confirm")
    stored = asyncio.run(resolve_interruptions(first, timeout=30)).to_string()

    async def resume() -> RunResult:
        state = await RunState.from_string(agent(tool, ARGUMENTS), stored)
        return await _run(tool, state)

    asyncio.run(resume())
    assert ledger.calls == [ARGUMENTS]
    # The same approved state resumed a second time: the receipt is spent, so the tool does not
    # run again, and the model reads that it already ran (no error).
    again = asyncio.run(resume())
    assert again.final_output == SAID + ALREADY_DONE
    assert ledger.calls == [ARGUMENTS]
    assert _instance(console)["receipt_state"] == "redeemed"


async def _streamed(tool: Any, input_or_state: Any) -> RunResultStreaming:
    result = Runner.run_streamed(agent(tool, ARGUMENTS), input_or_state, run_config=RUN_CONFIG)
    async for _ in result.stream_events():
        pass
    return result


def test_a_streamed_run_resolves(console: LiveConsole, person: Person) -> None:
    ledger = Ledger()
    tool = _tool(console, ledger)
    first = asyncio.run(_streamed(tool, "pay Bob his rent"))
    (interruption,) = first.interruptions
    pending = asyncio.run(instance_of(interruption))
    instance_id = _instance(console)["id"]
    assert pending == ConsoleInstance(
        instance_id, f"{console.url}/instances/{instance_id}/", "awaiting_user"
    )
    corrected = "NL91 ABNA 0417 1643 00"
    person.answer("edit", value=corrected)

    async def resume() -> RunResultStreaming:
        state = await resolve_interruptions(first, timeout=30)
        return await _streamed(tool, state)

    result = asyncio.run(resume())
    assert ledger.calls == [{"recipient_account": corrected, "memo": "rent"}]
    assert result.final_output == SAID + "sent to " + corrected + "\n\n" + _changed(corrected)


def test_an_unreachable_console_fails_the_run_with_the_cause_named() -> None:
    import socket

    from agents.exceptions import UserError
    from console_client import AsyncConsole, ConsoleUnavailable
    from console_client.openai_agents import console_tool

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"  # closed once the block ends
    tool = console_tool(
        Ledger().send_transfer,
        task_class=TRANSFER,
        principal="alice",
        console=lambda: AsyncConsole(url, "key"),
    )
    with pytest.raises(UserError) as failed:
        asyncio.run(_run(tool, "pay Bob his rent"))
    assert isinstance(failed.value.__cause__, ConsoleUnavailable)
    message = str(failed.value)
    assert "send_transfer" in message and url in message and "could not be reached" in message
