"""MCP's URL-mode elicitation: a client that supports it is handed the console's page by the
permission and confirmation tools, and told when it was answered."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from mcp import ClientSession, stdio_client, types

from beliefs.models import TaskInstance
from tests.client.conftest import LiveConsole, Person
from tests.client.test_mcp import _parameters

pytestmark = pytest.mark.servers


class Host:
    """An agent host's side: what it was asked to elicit and was notified of. `action` is what
    the person does with the page the host shows them; on accept, `open_page` runs (the person
    answering in the browser)."""

    def __init__(
        self, action: str, open_page: Any = None, form: dict[str, Any] | None = None
    ) -> None:
        self.action = action
        self.open_page = open_page
        self.form = form  # what the person types into a form the client shows
        self.asked: list[Any] = []
        self.completed: list[str] = []

    async def elicit(self, context: Any, params: Any) -> types.ElicitResult:
        self.asked.append(params)
        if params.mode == "form":
            return types.ElicitResult(action=self.action, content=self.form)
        if self.action == "accept" and self.open_page is not None:
            asyncio.get_running_loop().run_in_executor(None, self.open_page)
        return types.ElicitResult(action=self.action)

    async def message(self, message: Any) -> None:
        if isinstance(message, types.ElicitCompleteNotification):
            self.completed.append(message.params.elicitation_id)


def _with_host(console: LiveConsole, host: Host, tool: str, arguments: dict[str, Any]) -> Any:
    params = _parameters(console.url, console.key)

    async def run() -> Any:
        async with (
            stdio_client(params) as (read, write),
            ClientSession(
                read, write, elicitation_callback=host.elicit, message_handler=host.message
            ) as session,
        ):
            await session.initialize()
            result = await session.call_tool(tool, arguments)
            await asyncio.sleep(0)  # let a notification sent just before the answer arrive
            return result

    return asyncio.run(run())


def test_request_permission_hands_the_page_to_the_client_and_says_when_it_was_answered(
    console: LiveConsole, person: Person
) -> None:
    host = Host("accept", open_page=lambda: person.answer("edit", value="ls -la"))
    call = {"tool_name": "Bash", "input": {"command": "ls"}, "tool_use_id": "toolu_1"}
    result = _with_host(console, host, "request_permission", call)
    assert json.loads(result.content[0].text) == {
        "behavior": "allow",
        "updatedInput": {"command": "ls -la"},
    }
    with console.exclusive():
        (instance,) = TaskInstance.objects.all()
    (asked,) = host.asked
    assert asked.mode == "url"
    assert asked.url == f"{console.url}/instances/{instance.pk}/"
    assert asked.elicitation_id == str(instance.pk)
    assert host.completed == [str(instance.pk)]


@pytest.mark.parametrize("action", ["decline", "cancel"])
def test_a_person_who_will_not_open_the_page_is_denied_and_the_request_cancelled(
    console: LiveConsole, action: str
) -> None:
    host = Host(action)
    call = {"tool_name": "Bash", "input": {"command": "rm -rf /"}, "tool_use_id": "toolu_2"}
    answer = json.loads(_with_host(console, host, "request_permission", call).content[0].text)
    assert answer["behavior"] == "deny"
    assert f"did not open the confirmation page ({action})" in answer["message"]
    with console.exclusive():
        (instance,) = TaskInstance.objects.all()
        assert instance.status == "cancelled"
    assert host.completed == []


def test_wait_for_confirmation_elicits_the_page_too(console: LiveConsole, person: Person) -> None:
    host = Host("accept", open_page=lambda: person.answer("confirm"))
    opened = _with_host(
        console,
        Host("accept"),
        "request_confirmation",
        {
            "task_class": "payments.transfer",
            "principal": "alice",
            "values": {"recipient_account": "DE89 3704 0044 0532 0130 00"},
            "slots": ["recipient_account"],
        },
    )
    summary = json.loads(opened.content[0].text)
    assert summary["status"] == "awaiting_user"
    waited = _with_host(
        console, host, "wait_for_confirmation", {"instance_id": summary["instance_id"]}
    )
    assert json.loads(waited.content[0].text)["status"] == "ready"
    assert [p.url for p in host.asked] == [summary["url"]]
    assert host.completed == [summary["instance_id"]]


def _request(console: LiveConsole, task_class: str) -> dict[str, Any]:
    """A confirmation of a memo whose recipient nobody gave: the console asks for it."""
    opened = _with_host(
        console,
        Host("accept"),
        "request_confirmation",
        {
            "task_class": task_class,
            "principal": "alice",
            "values": {"memo": "rent"},
            "slots": ["recipient_account", "memo"],
        },
    )
    summary: dict[str, Any] = json.loads(opened.content[0].text)
    assert summary["status"] == "awaiting_user"
    return summary


def test_a_reversible_value_nobody_gave_is_asked_in_the_clients_form(
    console: LiveConsole,
) -> None:
    summary = _request(console, "payments.sandbox")  # the recipient is reversible there
    host = Host("accept", form={"recipient_account": "DE89 3704 0044 0532 0130 00"})
    waited = _with_host(
        console, host, "wait_for_confirmation", {"instance_id": summary["instance_id"]}
    )
    answer = json.loads(waited.content[0].text)
    assert answer["status"] == "ready"
    assert answer["bindings"] == {
        "recipient_account": "DE89 3704 0044 0532 0130 00",
        "memo": "rent",
    }
    (form,) = host.asked  # the form only: nothing left for the page
    assert form.mode == "form"
    assert form.requested_schema["properties"]["recipient_account"]["type"] == "string"
    assert form.requested_schema["required"] == ["recipient_account"]


def test_an_irreversible_value_is_never_asked_in_a_form(
    console: LiveConsole, person: Person
) -> None:
    summary = _request(console, "payments.transfer")  # the recipient feeds a transfer
    host = Host(
        "accept",
        open_page=lambda: person.answer("answer", value="DE89 3704 0044 0532 0130 00"),
        form={"recipient_account": "GB00 FORGED"},
    )
    waited = _with_host(
        console, host, "wait_for_confirmation", {"instance_id": summary["instance_id"]}
    )
    answer = json.loads(waited.content[0].text)
    assert answer["bindings"]["recipient_account"] == "DE89 3704 0044 0532 0130 00"
    assert [p.mode for p in host.asked] == ["url"]


def test_a_declined_form_leaves_the_instance_open(console: LiveConsole) -> None:
    summary = _request(console, "payments.sandbox")
    waited = _with_host(
        console,
        Host("decline"),
        "wait_for_confirmation",
        {"instance_id": summary["instance_id"]},
    )
    assert waited.is_error and "declined the form" in waited.content[0].text
    with console.exclusive():
        assert TaskInstance.objects.get().status == "awaiting_user"


# --- the 2026-07-28 protocol: the page as an input_required round ----------------------------


def _in_rounds(console: LiveConsole, host: Host, tool: str, arguments: dict[str, Any]) -> Any:
    from mcp import Client

    params = _parameters(console.url, console.key)

    async def run() -> Any:
        async with Client(params, mode="2026-07-28", elicitation_callback=host.elicit) as client:
            return await client.call_tool(tool, arguments)

    return asyncio.run(run())


def test_a_client_in_rounds_gets_the_page_as_an_input_request_then_the_answer(
    console: LiveConsole, person: Person
) -> None:
    host = Host("accept", open_page=lambda: person.answer("edit", value="ls -la"))
    call = {"tool_name": "Bash", "input": {"command": "ls"}, "tool_use_id": "toolu_9"}
    result = _in_rounds(console, host, "request_permission", call)
    assert json.loads(result.content[0].text) == {
        "behavior": "allow",
        "updatedInput": {"command": "ls -la"},
    }
    with console.exclusive():
        (instance,) = TaskInstance.objects.all()
    (asked,) = host.asked
    assert (asked.mode, asked.url) == ("url", f"{console.url}/instances/{instance.pk}/")


def test_in_rounds_a_declined_page_is_a_deny_and_cancels(console: LiveConsole) -> None:
    call = {"tool_name": "Bash", "input": {"command": "rm -rf /"}}
    result = _in_rounds(console, Host("decline"), "request_permission", call)
    answer = json.loads(result.content[0].text)
    assert answer["behavior"] == "deny" and "(decline)" in answer["message"]
    with console.exclusive():
        assert TaskInstance.objects.get().status == "cancelled"


def test_a_round_state_is_sealed_to_its_call(monkeypatch: pytest.MonkeyPatch) -> None:
    from console_client.mcp import instance_of_state, round_state

    monkeypatch.setenv("CONSOLE_API_KEY", "test-key")
    state = round_state("instance-1", "Bash", {"command": "ls"})
    assert instance_of_state(state, "Bash", {"command": "ls"}) == "instance-1"
    assert instance_of_state(state, "Bash", {"command": "rm -rf /"}) is None
    assert instance_of_state(state, "Write", {"command": "ls"}) is None
    forged = "instance-2" + state.removeprefix("instance-1")
    assert instance_of_state(forged, "Bash", {"command": "ls"}) is None


def test_in_rounds_wait_for_confirmation_hands_over_the_page_too(
    console: LiveConsole, person: Person
) -> None:
    summary = _request(console, "payments.transfer")
    host = Host(
        "accept", open_page=lambda: person.answer("answer", value="DE89 3704 0044 0532 0130 00")
    )
    result = _in_rounds(
        console, host, "wait_for_confirmation", {"instance_id": summary["instance_id"]}
    )
    answer = json.loads(result.content[0].text)
    assert answer["status"] == "ready"
    assert [p.url for p in host.asked] == [summary["url"]]
