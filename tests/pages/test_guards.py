"""The on/off guards classifiers set: a decision whose values the person confirms in the
console, and a date slot that takes only dates from today on. On takes effect at once (open
instances re-plan); off lowers a guard and waits for a second classifier; both audited."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from beliefs.domain.vocabulary import AuditKind
from beliefs.errors import InvalidInput, PermissionDenied
from beliefs.models import AuditEvent, Decision, RiskChangeRequest, Slot
from beliefs.services.audit import Actor
from beliefs.services.classification import risk_change_request_approve
from beliefs.services.decision_settings import decision_set_person_confirms, slot_set_future
from tests.conftest import JsonClient
from tests.support.api import Driver, by_slot

PAY = "payments.pay"


@pytest.fixture
def api(runtime: JsonClient, person_client: Callable[[User], JsonClient], alice: User) -> Driver:
    return Driver(runtime, person_client(alice))


@pytest.fixture
def pay(api: Driver) -> str:
    api.register(
        PAY,
        slots=[{"key": "iban"}, {"key": "run_on", "value_type": "date"}],
        decisions=[{"key": "pay", "slots": ["iban"]}],
        risks={"iban": "irreversible", "run_on": "reversible"},
        decision_risks={"pay": "irreversible"},
    )
    return PAY


def _pay() -> Decision:
    return Decision.objects.get(key="pay")


def _run_on() -> Slot:
    return Slot.objects.get(key="run_on")


SETTERS: dict[str, Callable[[User, Any], Any]] = {
    "person_confirms": lambda user, value: decision_set_person_confirms(
        decision=_pay(), person_confirms=value, reason="why not", actor=Actor(user=user)
    ),
    "future": lambda user, value: slot_set_future(
        slot=_run_on(), future=value, reason="why not", actor=Actor(user=user)
    ),
}
KINDS = {
    "person_confirms": AuditKind.CLASSIFICATION_DECISION_PERSON_CONFIRMS,
    "future": AuditKind.CLASSIFICATION_SLOT_FUTURE,
}


def _target(field: str) -> Decision | Slot:
    return _pay() if field == "person_confirms" else _run_on()


@pytest.mark.parametrize(
    ("field", "before", "after"),
    [(f, b, a) for f in SETTERS for b, a in itertools.product([False, True], repeat=2)],
)
def test_each_change_is_applied_requested_or_nothing(
    pay: str, carol: User, field: str, before: bool, after: bool
) -> None:
    type(_target(field)).objects.filter(pk=_target(field).pk).update(**{field: before})
    audited = AuditEvent.objects.count()
    result = SETTERS[field](carol, after)
    expected = "unchanged" if before == after else ("applied" if after else "requested")
    assert result.outcome == expected
    assert getattr(_target(field), field) == (after if after else before)  # never off at once
    kinds = list(AuditEvent.objects.order_by("id").values_list("kind", flat=True)[audited:])
    assert (
        kinds
        == {
            "unchanged": [],
            "applied": [KINDS[field]],
            "requested": [AuditKind.CLASSIFICATION_CHANGE_REQUESTED],
        }[expected]
    )


@pytest.mark.parametrize("field", list(SETTERS))
def test_turning_it_off_needs_a_second_classifier(
    pay: str, carol: User, cathy: User, field: str
) -> None:
    SETTERS[field](carol, True)
    request = SETTERS[field](carol, False).request
    assert request.field == field
    with pytest.raises(PermissionDenied):
        risk_change_request_approve(change_request=request, reason="me", actor=Actor(user=carol))
    assert getattr(_target(field), field) is True
    approved = risk_change_request_approve(
        change_request=request, reason="agreed", actor=Actor(user=cathy)
    )
    assert approved.outcome == "applied" and getattr(_target(field), field) is False
    assert RiskChangeRequest.objects.get(pk=request.pk).state == "approved"


def test_only_classifiers_set_them_and_future_is_for_dates(
    pay: str, alice: User, carol: User
) -> None:
    for setter in SETTERS.values():
        with pytest.raises(PermissionDenied):
            setter(alice, True)
    with pytest.raises(InvalidInput):
        slot_set_future(
            slot=Slot.objects.get(key="iban"), future=True, reason="x", actor=Actor(user=carol)
        )


def test_turning_person_confirms_on_replans_open_instances_at_once(
    api: Driver, pay: str, carol: User
) -> None:
    instance_id = api.open(pay, beliefs=[{"slot": "iban", "value": "DE89", "source": "user"}])
    # The runtime reports the person's answer: bound, shown with a veto, not blocking.
    item = by_slot(api.plan(instance_id))["iban"]
    assert (item["route"], item["rule"]) == ("SILENT", "R2")
    assert api.instance(instance_id)["status"] == "awaiting_user"  # the date is still asked
    result = SETTERS["person_confirms"](carol, True)
    assert result.outcome == "applied" and result.replanned == 1
    # The open instance was planned again at once: the person confirms the reported value.
    item = by_slot({"items": api.instance(instance_id)["plan"]})["iban"]
    assert (item["route"], item["rule"], item["prompt"]["blocking"]) == ("CONFIRM", "R10", True)


def test_the_classify_page_sets_them_and_says_what_waits(
    client: Client, pay: str, carol: User
) -> None:
    client.force_login(carol)
    page = client.get(f"/classify/{pay}/").content.decode()
    assert "The person confirms in the console" in page
    assert "Only dates from today on" in page
    decision, slot = _pay(), _run_on()
    saved = client.post(
        f"/classify/{pay}/decisions/{decision.pk}/person-confirms/",
        {"person_confirms": "on", "reason": "payments are the person's to confirm"},
        follow=True,
    )
    assert saved.status_code == 200 and _pay().person_confirms
    assert "own confirmation in the console" in saved.content.decode()
    client.post(f"/classify/{pay}/slots/{slot.pk}/future/", {"future": "on", "reason": "r"})
    assert _run_on().future
    off = client.post(
        f"/classify/{pay}/slots/{slot.pk}/future/", {"reason": "old runs"}, follow=True
    )
    assert "a second classifier must approve it" in off.content.decode()
    assert _run_on().future  # still on: it waits
    missing = client.post(
        f"/classify/{pay}/decisions/{decision.pk}/person-confirms/", {"reason": ""}, follow=True
    )
    assert "Not saved" in missing.content.decode() and _pay().person_confirms


def test_a_person_who_is_no_classifier_cannot_post_them(
    client: Client, pay: str, alice: User
) -> None:
    client.force_login(alice)
    response = client.post(
        f"/classify/{pay}/decisions/{_pay().pk}/person-confirms/",
        {"person_confirms": "on", "reason": "me"},
    )
    assert response.status_code in (302, 403) and not _pay().person_confirms
