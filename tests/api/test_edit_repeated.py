"""A change of an irreversible value is entered twice: over the API an edit (CONFIRM) or an
answer (ASK) that differs from the value on record carries `value_confirmation` equal to
`value`, or it is refused with 400 `edit_not_repeated` and nothing is recorded.

The value on record is a CONFIRM's pre-filled value, or the earlier value an ASK shows as
context (R5 here: a carried value with no world reference). A blank ASK has none: its first
answer is typed once."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from beliefs.models import AuditEvent, Belief, Prompt, PromptResponse
from tests.support.api import API, Driver

pytestmark = pytest.mark.django_db

ON_RECORD = "DE89370400440532013000"
NEW = "XX00ATTACKER000000000001"
OTHER = "XX00ATTACKER000000000002"


def _confirm_prompt(api: Driver, transfer: str) -> dict[str, Any]:
    """R4: a tool's value for the recipient, whose decision is irreversible."""
    instance_id = api.open(
        transfer,
        beliefs=[{"slot": "recipient_account", "value": ON_RECORD, "source": "tool", "turn": 1}],
    )
    api.plan(instance_id)
    prompt = api.prompt(instance_id, "recipient_account")
    assert (prompt["route"], prompt["rule"], prompt["prefill"]) == ("CONFIRM", "R4", ON_RECORD)
    return prompt


def _ask_prompt(api: Driver, transfer: str) -> dict[str, Any]:
    """R5: the person's value of an earlier run, carried with no world reference, shown as the
    earlier value of a blank question."""
    earlier = _confirm_prompt(api, transfer)
    assert api.respond(earlier, "confirm").status_code == 200
    instance_id = api.open(transfer)
    api.plan(instance_id)
    prompt = api.prompt(instance_id, "recipient_account")
    assert (prompt["route"], prompt["rule"], prompt["context_value"]) == ("ASK", "R5", ON_RECORD)
    return prompt


def _as_reversible(prompt: dict[str, Any]) -> dict[str, Any]:
    """The same prompt with a reversible effective risk. Routing asks no reversible value with
    a value on record today (R7 lists it instead); the rule must not depend on that."""
    Prompt.objects.filter(pk=prompt["id"]).update(effective_risk="reversible")
    return prompt


def _recorded() -> tuple[int, int, int]:
    return Belief.objects.count(), AuditEvent.objects.count(), PromptResponse.objects.count()


CONFIRMATIONS = {"missing": None, "equal": "value", "different": OTHER}


@pytest.mark.parametrize(
    ("route", "risk", "value", "confirmation"),
    list(
        itertools.product(
            ("CONFIRM", "ASK"),
            ("irreversible", "reversible"),
            ("same", "different"),
            CONFIRMATIONS,
        )
    ),
)
def test_it_takes_a_changed_irreversible_value_only_when_it_is_sent_twice(
    api: Driver, transfer: str, route: str, risk: str, value: str, confirmation: str
) -> None:
    prompt = _confirm_prompt(api, transfer) if route == "CONFIRM" else _ask_prompt(api, transfer)
    if risk == "reversible":
        _as_reversible(prompt)
    typed = ON_RECORD if value == "same" else NEW
    body: dict[str, Any] = {"value": typed}
    if confirmation != "missing":
        body["value_confirmation"] = typed if confirmation == "equal" else OTHER
    before = _recorded()

    response = api.respond(prompt, "edit" if route == "CONFIRM" else "answer", **body)

    refused = risk == "irreversible" and value == "different" and confirmation != "equal"
    stored = Prompt.objects.get(pk=prompt["id"])
    if refused:
        assert response.status_code == 400, response.json()
        answer = response.json()
        assert answer["error"] == "edit_not_repeated"
        assert answer["detail"].startswith("Not recorded")
        assert list(answer["fields"]) == ["value_confirmation"]
        assert _recorded() == before
        assert (stored.state, stored.version, stored.action) == ("open", prompt["version"], "")
        assert not Belief.objects.filter(value=NEW).exists()
    else:
        assert response.status_code == 200, response.json()
        assert (stored.state, stored.response_value) == ("answered", typed)
        belief = Belief.objects.get(instance=stored.instance, slot=stored.slot, status="active")
        assert (belief.value, belief.source) == (typed, "user")


@pytest.mark.parametrize("confirmation", list(CONFIRMATIONS))
def test_it_takes_the_first_answer_to_a_blank_question_once(
    api: Driver, transfer: str, confirmation: str
) -> None:
    """R0: no value on record, so an answer changes nothing the person was shown."""
    instance_id = api.open(transfer)
    api.plan(instance_id)
    prompt = api.prompt(instance_id, "recipient_account")
    assert (prompt["route"], prompt["effective_risk"], prompt["context_value"]) == (
        "ASK",
        "irreversible",
        None,
    )
    body: dict[str, Any] = {"value": NEW}
    if confirmation != "missing":
        body["value_confirmation"] = NEW if confirmation == "equal" else OTHER
    response = api.respond(prompt, "answer", **body)
    assert response.status_code == 200, response.json()
    assert Prompt.objects.get(pk=prompt["id"]).response_value == NEW


def test_it_reads_the_second_entry_as_it_reads_the_first(api: Driver, transfer: str) -> None:
    """Spaces around a typed value are not part of it, in either entry."""
    prompt = _confirm_prompt(api, transfer)
    response = api.respond(prompt, "edit", value=f" {NEW}", value_confirmation=f"{NEW}  ")
    assert response.status_code == 200, response.json()


def test_it_refuses_a_blank_second_entry_as_a_missing_one(api: Driver, transfer: str) -> None:
    prompt = _confirm_prompt(api, transfer)
    response = api.respond(prompt, "edit", value=NEW, value_confirmation="   ")
    assert response.status_code == 400
    assert response.json()["error"] == "edit_not_repeated"
    assert "is required" in response.json()["fields"]["value_confirmation"][0]


def test_it_answers_a_retry_of_a_taken_edit_without_writing_again(
    api: Driver, transfer: str
) -> None:
    """An edit taken with its second entry, sent again as it was: replayed, nothing written."""
    prompt = _confirm_prompt(api, transfer)
    first = api.respond(prompt, "edit", value=NEW, value_confirmation=NEW)
    assert first.status_code == 200
    before = _recorded()
    again = api.respond(prompt, "edit", value=NEW, value_confirmation=NEW)
    assert again.status_code == 200 and again.json()["replayed"] is True
    assert _recorded() == before


def test_it_documents_the_refusal(api: Driver) -> None:
    schema = api.runtime.get(f"{API}/schema/?format=json").json()
    respond = schema["paths"]["/api/v1/prompts/{prompt_id}/respond/"]["post"]
    assert "edit_not_repeated" in respond["description"]
