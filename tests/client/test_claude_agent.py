"""The Claude Agent SDK's can_use_tool, answered by the person in a live console; called with
the SDK's own types, as its query loop calls it."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import PermissionResultAllow, PermissionResultDeny, ToolPermissionContext
from console_client import AsyncConsole
from console_client.claude_agent import can_use_tool

from beliefs.models import TaskInstance
from tests.client.conftest import LiveConsole, Person, subprocess_environment

ROOT = Path(__file__).resolve().parents[2]

CALL = {"command": "npm publish", "dry_run": True, "retries": 3}


def _callback(console: LiveConsole, **options: Any) -> Any:
    return can_use_tool(
        "alice",
        console=lambda: AsyncConsole(console.url, console.key, poll_interval=0.05),
        **options,
    )


def _ask(callback: Any, tool_use_id: str, call: dict[str, Any] = CALL) -> Any:
    context = ToolPermissionContext(tool_use_id=tool_use_id)
    return asyncio.run(callback("Bash", dict(call), context))


def test_the_call_runs_with_what_the_person_confirmed_in_its_own_types(
    console: LiveConsole, person: Person
) -> None:
    callback = _callback(console)

    def answer_each() -> None:
        for _ in CALL:
            prompt = person.wait_for_prompt()
            edits = {"dry_run": "false", "retries": "1"}
            if prompt["slot"] in edits:
                person.respond(prompt, "edit", value=edits[prompt["slot"]])
            else:
                person.respond(prompt, "confirm")

    answered = asyncio.run(_answering(callback, answer_each))
    assert answered == PermissionResultAllow(
        updated_input={"command": "npm publish", "dry_run": False, "retries": 1}
    )
    assert type(answered.updated_input["retries"]) is int
    # The same tool use again: its confirmation is spent, so it is denied, never run twice.
    again = _ask(callback, "toolu_1")
    assert isinstance(again, PermissionResultDeny)
    assert "already allowed once" in again.message


async def _answering(callback: Any, answer: Any) -> Any:
    person_side = asyncio.create_task(asyncio.to_thread(answer))
    result = await callback("Bash", dict(CALL), ToolPermissionContext(tool_use_id="toolu_1"))
    await person_side
    return result


def test_a_rejection_is_a_deny_with_the_persons_reason(
    console: LiveConsole, person: Person
) -> None:
    callback = _callback(console)

    def reject() -> None:
        person.respond(person.wait_for_prompt(), "reject", reason="not on a Friday")

    denied = asyncio.run(_answering(callback, reject))
    assert denied == PermissionResultDeny(
        message="The person rejected this in the confirmation console: not on a Friday"
    )


def test_a_passthrough_tool_is_never_asked_about(console: LiveConsole) -> None:
    callback = _callback(console, passthrough={"Read"})
    context = ToolPermissionContext(tool_use_id="toolu_2")
    allowed = asyncio.run(callback("Read", {"file_path": "README.md"}, context))
    assert allowed == PermissionResultAllow(updated_input={"file_path": "README.md"})
    with console.exclusive():
        assert not TaskInstance.objects.exists()


def test_a_wait_that_runs_out_cancels_and_denies(console: LiveConsole) -> None:
    denied = _ask(_callback(console, timeout=0.3), "toolu_3")
    assert isinstance(denied, PermissionResultDeny) and "cancelled" in denied.message
    with console.exclusive():
        (instance,) = TaskInstance.objects.all()
        assert instance.status == "cancelled"


@pytest.mark.servers
def test_the_offline_example_asks_alice_and_prints_her_answer(
    console: LiveConsole, person: Person
) -> None:
    example = ROOT / "client" / "examples" / "claude_agent_permission.py"
    running = subprocess.Popen(
        [sys.executable, example, "--offline"],
        cwd=ROOT,
        env=subprocess_environment(CONSOLE_URL=console.url, CONSOLE_API_KEY=console.key),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        person.respond(person.wait_for_prompt(), "reject", reason="keep the build")
        out, err = running.communicate(timeout=60)
    finally:
        running.kill()
    assert running.returncode == 0, err
    assert "PermissionResultDeny(behavior='deny', message='The person rejected" in out
    assert "keep the build" in out
