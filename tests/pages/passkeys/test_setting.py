"""The decision setting `requires_signature`: set by classifiers only, audited; turning it on
takes effect at once, turning it off waits for a second classifier (four eyes), as a risk
downgrade does; and the ready gate over every combination of its inputs."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from beliefs.domain.vocabulary import AuditKind
from beliefs.errors import Conflict, PermissionDenied
from beliefs.models import (
    AuditEvent,
    Decision,
    InstanceStatus,
    RiskChangeRequest,
    SignatureAttempt,
    TaskInstance,
)
from beliefs.services.audit import Actor
from beliefs.services.classification import (
    risk_change_request_approve,
    risk_change_request_refuse,
)
from beliefs.services.decision_settings import decision_set_requires_signature
from beliefs.services.signatures import awaits_signature
from tests.support.api import API, Driver
from tests.support.passkeys import CLASS, confirm_recipient, open_transfer

pytestmark = pytest.mark.usefixtures("signed_class")


def _decision() -> Decision:
    return Decision.objects.get(key="send_transfer")


def _set(user: User, value: Any, reason: str = "because") -> Any:
    return decision_set_requires_signature(
        decision=_decision(), requires_signature=value, reason=reason, actor=Actor(user=user)
    )


@pytest.mark.parametrize(("before", "after"), list(itertools.product([False, True], repeat=2)))
def test_each_change_of_the_setting_is_applied_requested_or_nothing(
    carol: User, before: bool, after: bool
) -> None:
    Decision.objects.filter(key="send_transfer").update(requires_signature=before)
    audited = AuditEvent.objects.count()
    result = _set(carol, after)
    expected = "unchanged" if before == after else ("applied" if after else "requested")
    assert result.outcome == expected
    # Off never takes effect by one classifier's word.
    assert _decision().requires_signature == (after if after else before)
    kinds = list(AuditEvent.objects.order_by("id").values_list("kind", flat=True)[audited:])
    assert (
        kinds
        == {
            "unchanged": [],
            "applied": [AuditKind.CLASSIFICATION_DECISION_REQUIRES_SIGNATURE],
            "requested": [AuditKind.CLASSIFICATION_CHANGE_REQUESTED],
        }[expected]
    )


def test_turning_it_on_is_audited_with_who_before_after_and_why(carol: User) -> None:
    event = AuditEvent.objects.filter(
        kind=AuditKind.CLASSIFICATION_DECISION_REQUIRES_SIGNATURE
    ).get()  # the fixture's
    assert event.actor == "carol"
    assert event.subject == "send_transfer"
    assert event.data["before"] is False and event.data["after"] is True
    assert event.data["reason"] == "payments are signed"


def test_turning_it_off_needs_a_second_classifier(carol: User, cathy: User) -> None:
    requested = _set(carol, False, "too slow for small payments")
    change_request = requested.request
    assert change_request.field == RiskChangeRequest.Field.REQUIRES_SIGNATURE
    with pytest.raises(PermissionDenied) as refused:
        risk_change_request_approve(
            change_request=change_request, reason="mine", actor=Actor(user=carol)
        )
    assert refused.value.code == "own_request"
    assert _decision().requires_signature is True
    with pytest.raises(Conflict):
        _set(carol, False)  # one pending request at a time
    approved = risk_change_request_approve(
        change_request=change_request, reason="agreed", actor=Actor(user=cathy)
    )
    assert approved.outcome == "applied"
    assert _decision().requires_signature is False
    approval = AuditEvent.objects.get(kind=AuditKind.CLASSIFICATION_CHANGE_APPROVED)
    assert approval.actor == "cathy"
    assert approval.data["requested_by"] == "carol"
    applied = AuditEvent.objects.filter(
        kind=AuditKind.CLASSIFICATION_DECISION_REQUIRES_SIGNATURE
    ).latest("id")
    assert applied.data["after"] is False and applied.data["approved_by"] == "cathy"


def test_a_refused_request_leaves_it_on(carol: User, cathy: User) -> None:
    change_request = _set(carol, False).request
    result = risk_change_request_refuse(
        change_request=change_request, reason="no", actor=Actor(user=cathy)
    )
    assert result.outcome == "unchanged"
    assert _decision().requires_signature is True
    assert AuditEvent.objects.filter(kind=AuditKind.CLASSIFICATION_CHANGE_REFUSED).count() == 1


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_it_takes_true_or_false_only(carol: User, value: Any) -> None:
    from beliefs.errors import InvalidInput

    with pytest.raises(InvalidInput):
        _set(carol, value)


def test_only_classifiers_set_it(alice: User) -> None:
    with pytest.raises(PermissionDenied):
        _set(alice, False)


def test_it_needs_a_reason(carol: User) -> None:
    from beliefs.errors import InvalidInput

    with pytest.raises(InvalidInput):
        _set(carol, False, reason=" ")


def test_the_task_class_read_shows_it(api: Driver) -> None:
    body = api.runtime.get(f"{API}/task-classes/{CLASS}/").json()
    (decision,) = body["decisions"]
    assert decision["requires_signature"] is True


def test_the_classify_page_sets_it_and_shows_the_pending_request(
    carol: User, signed_in: Any
) -> None:
    page: Client = signed_in(carol)
    decision = _decision()
    url = f"/classify/{CLASS}/decisions/{decision.pk}/signature/"
    response = page.post(url, {"reason": "small payments need no signature"})
    assert response.status_code == 302
    assert _decision().requires_signature is True  # off waits
    shown = page.get(f"/classify/{CLASS}/").content.decode()
    assert "Requires a passkey signature" in shown
    assert RiskChangeRequest.objects.filter(state="pending").count() == 1
    assert "small payments need no signature" in shown


def test_turning_it_on_re_plans_instances_still_being_answered(
    api: Driver, carol: User, cathy: User
) -> None:
    change = _set(carol, False).request
    risk_change_request_approve(change_request=change, reason="ok", actor=Actor(user=cathy))
    instance_id = open_transfer(api)
    assert _set(carol, True).replanned == 1
    assert confirm_recipient(api, instance_id)["status"] == "awaiting_signature"


def test_turning_it_off_binds_nothing_back(api: Driver, carol: User, cathy: User) -> None:
    instance_id = open_transfer(api)
    assert confirm_recipient(api, instance_id)["status"] == "awaiting_signature"
    change = _set(carol, False).request
    risk_change_request_approve(change_request=change, reason="ok", actor=Actor(user=cathy))
    api.plan(instance_id)
    assert api.instance(instance_id)["status"] == "awaiting_signature"


# --- the ready gate, every combination ----------------------------------------------------------

SIGNATURES = ["none", "for these bindings", "for other bindings", "voided"]


@pytest.mark.parametrize(
    ("required", "signature"), list(itertools.product([False, True], SIGNATURES))
)
def test_the_gate_waits_exactly_while_a_required_signature_of_these_bindings_is_missing(
    api: Driver, alice: User, required: bool, signature: str
) -> None:
    Decision.objects.filter(key="send_transfer").update(requires_signature=required)
    instance = TaskInstance.objects.get(pk=open_transfer(api))
    digest = "a" * 64
    now = timezone.now()
    if signature != "none":
        SignatureAttempt.objects.create(
            instance=instance,
            user=alice,
            bindings_digest=digest if signature != "for other bindings" else "b" * 64,
            nonce="n",
            challenge="c" * 64,
            rp_id="testserver",
            origin="http://testserver",
            created_at=now,
            expires_at=now,
            verified_at=now,
            voided_at=now if signature == "voided" else None,
        )
    waits = awaits_signature(instance, digest)
    assert waits == (required and signature != "for these bindings")


@pytest.mark.parametrize("asked_before", [False, True])
def test_once_asked_an_instance_needs_its_signature_whatever_the_setting(
    api: Driver, asked_before: bool
) -> None:
    Decision.objects.filter(key="send_transfer").update(requires_signature=False)
    instance = TaskInstance.objects.get(pk=open_transfer(api))
    if asked_before:
        instance.signature_due_at = timezone.now()
    assert awaits_signature(instance, "a" * 64) is asked_before


def test_the_new_state_is_open_and_waits_for_the_person() -> None:
    assert InstanceStatus.AWAITING_SIGNATURE in InstanceStatus.open()
    assert InstanceStatus.AWAITING_SIGNATURE in InstanceStatus.waiting_for_person()
    assert InstanceStatus.AWAITING_SIGNATURE not in InstanceStatus.closed()


def test_the_inbox_lists_an_instance_awaiting_its_signature(
    api: Driver, alice: User, signed_in: Any
) -> None:
    instance_id = open_transfer(api)
    confirm_recipient(api, instance_id)
    inbox = signed_in(alice).get("/").content.decode()
    assert f"/instances/{instance_id}/" in inbox
    assert "Your passkey signature needed" in inbox
    page = signed_in(alice).get(f"/instances/{instance_id}/").content.decode()
    assert "Waiting for your signature" in page and f"/instances/{instance_id}/sign/" in page
