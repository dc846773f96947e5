"""The LangGraph adapter against a live console, with in-memory and SQLite checkpointers."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from console_client import InstanceExpired, bindings_digest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

from beliefs.models import TaskInstance
from tests.client.conftest import LiveConsole, Person, subprocess_environment
from tests.client.transfer_graph import DEPOSIT, RENT, build, build_two
from tests.client.transfer_tool import ARGUMENTS, SANDBOX, TRANSFER, Ledger

ROOT = Path(__file__).resolve().parents[2]
CONFIG = {"configurable": {"thread_id": "transfer-thread-1"}}
INPUT = {"recipient_account": ARGUMENTS["recipient_account"]}
CORRECTED = "NL91 ABNA 0417 1643 00"


def _instances(console: LiveConsole) -> list[TaskInstance]:
    with console.exclusive():
        return list(TaskInstance.objects.all())


def _receipt_state(console: LiveConsole, instance: TaskInstance) -> str:
    """The receipt's state as the runtime reads it."""
    response = httpx.get(
        f"{console.url}/api/v1/instances/{instance.pk}/",
        headers={"Authorization": f"Api-Key {console.key}"},
    )
    assert response.status_code == 200, response.text
    return str(response.json()["receipt_state"])


def test_a_silent_plan_runs_the_node_through(console: LiveConsole) -> None:
    ledger = Ledger()
    graph = build(console.url, console.key, ledger, InMemorySaver(), SANDBOX)
    result = graph.invoke(INPUT, CONFIG)
    assert "__interrupt__" not in result
    assert result["receipt"] == "sent to " + ARGUMENTS["recipient_account"]
    assert ledger.calls == [ARGUMENTS]
    (instance,) = _instances(console)
    assert instance.status == "ready"
    assert instance.idempotency_key.startswith("langgraph:transfer-thread-1:")


def test_a_blocking_plan_interrupts_and_resumes_with_the_edit(
    console: LiveConsole, person: Person
) -> None:
    ledger = Ledger()
    graph = build(console.url, console.key, ledger, InMemorySaver(), TRANSFER)
    paused = graph.invoke(INPUT, CONFIG)
    (interrupt,) = paused["__interrupt__"]
    (instance,) = _instances(console)
    assert interrupt.value == {
        "type": "console_confirmation",
        "instance_id": str(instance.pk),
        "url": f"{console.url}/instances/{instance.pk}/",
        "blocking": 1,
        "task_class": TRANSFER,
        "principal": "alice",
        "node": "send",
        "name": "",
    }
    assert ledger.calls == []
    corrected = "NL91 ABNA 0417 1643 00"
    answered = person.answer_when_asked("edit", value=corrected)
    # Resumed at once: the node's re-run finds the same instance and waits for the person.
    result = graph.invoke(Command(resume=True), CONFIG)
    answered.result(timeout=30)
    assert result["receipt"] == "sent to " + corrected
    assert ledger.calls == [{"recipient_account": corrected, "memo": "rent"}]
    (instance,) = _instances(console)  # the re-run opened no second instance
    assert instance.bindings == {"recipient_account": corrected, "memo": "rent"}
    assert instance.bindings_digest == bindings_digest(instance.bindings)


def test_a_rejection_reaches_the_graph_with_its_reason(
    console: LiveConsole, person: Person
) -> None:
    ledger = Ledger()
    graph = build(console.url, console.key, ledger, InMemorySaver(), TRANSFER)
    graph.invoke(INPUT, CONFIG)
    person.answer("reject", reason="not this account")
    result = graph.invoke(Command(resume=True), CONFIG)
    assert result["rejected"] == "not this account"
    assert "receipt" not in result
    assert ledger.calls == []


def test_an_expired_instance_ends_the_wait_with_a_clear_error(console: LiveConsole) -> None:
    ledger = Ledger()
    graph = build(console.url, console.key, ledger, InMemorySaver(), TRANSFER)
    graph.invoke(INPUT, CONFIG)
    (instance,) = _instances(console)
    console.expire(str(instance.pk))
    with pytest.raises(InstanceExpired, match="expired before the person answered"):
        graph.invoke(Command(resume=True), CONFIG)
    assert ledger.calls == []


RESUME = """
import json, sqlite3, sys
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command
from tests.client.transfer_graph import DEPOSIT, RENT, build, build_two
from tests.client.transfer_tool import TRANSFER, Ledger

url, key, path, config = sys.argv[1:]
ledger = Ledger()
checkpointer = SqliteSaver(sqlite3.connect(path, check_same_thread=False))
graph = build(url, key, ledger, checkpointer, TRANSFER)
result = graph.invoke(Command(resume=True), json.loads(config))
print(json.dumps({"calls": ledger.calls, "result": result}))
"""


@pytest.mark.servers
def test_a_persistent_checkpoint_resumes_in_another_process(
    console: LiveConsole, person: Person, tmp_path: Path
) -> None:
    path = tmp_path / "checkpoints.sqlite"
    ledger = Ledger()
    connection = sqlite3.connect(path, check_same_thread=False)
    graph = build(console.url, console.key, ledger, SqliteSaver(connection), TRANSFER)
    paused = graph.invoke(INPUT, CONFIG)
    connection.close()
    assert paused["__interrupt__"][0].value["type"] == "console_confirmation"
    corrected = "FR14 2004 1010 0505 0001 3M02 606"
    person.answer("edit", value=corrected)
    done = subprocess.run(
        [sys.executable, "-c", RESUME, console.url, console.key, str(path), json.dumps(CONFIG)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=subprocess_environment(),
    )
    assert done.returncode == 0, done.stderr
    output: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert output["calls"] == [{"recipient_account": corrected, "memo": "rent"}]
    assert output["result"]["receipt"] == "sent to " + corrected
    assert ledger.calls == []
    assert len(_instances(console)) == 1


# --- async nodes, update_state, receipts ----------------------------------------------------


def test_an_async_node_pauses_and_resumes_with_the_edit(
    console: LiveConsole, person: Person
) -> None:
    ledger = Ledger()
    graph = build(console.url, console.key, ledger, InMemorySaver(), TRANSFER, asynchronous=True)

    async def run() -> dict[str, Any]:
        paused = await graph.ainvoke(INPUT, CONFIG)
        assert paused["__interrupt__"][0].value["type"] == "console_confirmation"
        # The event loop stays free while the node waits: the person answers from this loop.
        answer = asyncio.create_task(asyncio.to_thread(person.answer, "edit", value=CORRECTED))
        result: dict[str, Any] = await graph.ainvoke(Command(resume=True), CONFIG)
        await answer
        return result

    result = asyncio.run(run())
    assert result["receipt"] == "sent to " + CORRECTED
    assert ledger.calls == [{"recipient_account": CORRECTED, "memo": "rent"}]
    (instance,) = _instances(console)
    assert instance.status == "ready"


@pytest.mark.parametrize("explicit", [False, True], ids=["handed", "named"])
def test_update_state_cancels_the_superseded_instance_and_asks_for_the_new_one(
    console: LiveConsole, person: Person, monkeypatch: pytest.MonkeyPatch, explicit: bool
) -> None:
    """The node finds its earlier run's instance in the checkpointer LangGraph hands it, or,
    where LangGraph no longer exports that key, in the one it names to confirm()."""
    if explicit:
        monkeypatch.setattr("console_client.langgraph._CHECKPOINTER", None)
    ledger = Ledger()
    graph = build(
        console.url, console.key, ledger, InMemorySaver(), TRANSFER, explicit_checkpointer=explicit
    )
    graph.invoke(INPUT, CONFIG)
    (first,) = _instances(console)
    graph.update_state(CONFIG, {"recipient_account": CORRECTED})
    paused = graph.invoke(None, CONFIG)
    (interrupt,) = paused["__interrupt__"]
    old, new = sorted(_instances(console), key=lambda i: i.created_at)
    assert old.pk == first.pk and interrupt.value["instance_id"] == str(new.pk)
    assert (old.status, new.status) == ("cancelled", "awaiting_user")
    # The person's inbox holds the new request only.
    (prompt,) = person.open_prompts()
    assert prompt["prefill"] == CORRECTED
    person.respond(prompt, "confirm")
    result = graph.invoke(Command(resume=True), CONFIG)
    assert result["receipt"] == "sent to " + CORRECTED
    assert ledger.calls == [{"recipient_account": CORRECTED, "memo": "rent"}]


def test_a_replay_from_an_old_checkpoint_does_not_act_twice(
    console: LiveConsole, person: Person
) -> None:
    ledger = Ledger()
    graph = build(console.url, console.key, ledger, InMemorySaver(), TRANSFER)
    graph.invoke(INPUT, CONFIG)
    person.answer("confirm")
    graph.invoke(Command(resume=True), CONFIG)
    assert ledger.calls == [ARGUMENTS]
    # Replaying the paused checkpoint runs the node again on the same confirmation: confirm()
    # says it is a replay, and the node does not send again.
    paused = next(s for s in graph.get_state_history(CONFIG) if s.next == ("send",))
    result = graph.invoke(Command(resume=True), paused.config)
    assert result["replayed"] is True and "receipt" not in result
    assert ledger.calls == [ARGUMENTS]
    (instance,) = _instances(console)
    assert _receipt_state(console, instance) == "redeemed"


# --- several confirm() in one node ----------------------------------------------------------


def _prompt_for(person: Person, account: str) -> dict[str, Any]:
    prompt = person.wait_for_prompt()
    assert prompt["prefill"] == account, "the person is asked about the other transfer"
    return prompt


@pytest.mark.parametrize("answered_before_resume", [True, False])
def test_two_confirmations_in_one_node_each_run_their_action_once(
    console: LiveConsole, person: Person, answered_before_resume: bool
) -> None:
    """LangGraph runs the node from its top on each resume: the first confirm() passes again
    (a replay, its transfer not sent again) and the second one's pause keeps its own resume
    value, whether the person answered before the graph was resumed or while it waited."""
    ledger = Ledger()
    graph = build_two(console.url, console.key, ledger, InMemorySaver(), TRANSFER)
    paused = graph.invoke({}, CONFIG)
    assert [i.value["name"] for i in paused["__interrupt__"]] == ["rent"]
    assert ledger.calls == []

    def resume_after(account: str) -> dict[str, Any]:
        prompt = _prompt_for(person, account)
        if answered_before_resume:
            person.respond(prompt, "confirm")
            return graph.invoke(Command(resume=True), CONFIG)
        answered = person.answer_when_asked("confirm")
        result = graph.invoke(Command(resume=True), CONFIG)
        answered.result(timeout=30)
        return result

    paused = resume_after(RENT["recipient_account"])
    assert [i.value["name"] for i in paused["__interrupt__"]] == ["deposit"]
    assert ledger.calls == [RENT]
    done = resume_after(DEPOSIT["recipient_account"])
    assert "__interrupt__" not in done and done["receipt"] == "both sent"
    assert ledger.calls == [RENT, DEPOSIT]
    instances = _instances(console)
    assert sorted(i.status for i in instances) == ["ready", "ready"]
    assert {_receipt_state(console, i) for i in instances} == {"redeemed"}
