"""M-of-N approval: a decision that needs k approvals from a group
is ready only once k distinct members approved its exact bindings; nobody counts twice, an
edit resets the approvals, the first rejection cancels, a runtime never approves."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import jwt
import pytest
import time_machine
from django.contrib.auth.models import Group, User
from django.core import mail

from beliefs.models import (
    Approval,
    ApprovalRound,
    AuditEvent,
    Decision,
    EmailNotification,
    OutgoingEmail,
    RiskChangeRequest,
    TaskInstance,
    WebhookEvent,
)
from beliefs.services.notify import email_send
from beliefs.services.sweep import sweep
from tests.conftest import PASSWORD, JsonClient
from tests.support.api import API, Driver

CLASS = "treasury.transfer"


def _member(username: str, group: Group) -> User:
    user = User.objects.create_user(
        username=username, password=PASSWORD, email=f"{username}@x.test"
    )
    user.groups.add(group)
    return user


@pytest.fixture
def treasury(db: None) -> Group:
    return Group.objects.create(name="treasury")


@pytest.fixture
def bob(treasury: Group) -> User:
    return _member("bob", treasury)


@pytest.fixture
def dave(treasury: Group) -> User:
    return _member("dave", treasury)


@pytest.fixture
def erin(treasury: Group) -> User:
    return _member("erin", treasury)


def register(api: Driver, group: Group, required: int) -> None:
    api.register(
        CLASS,
        slots=[{"key": "iban"}, {"key": "amount", "value_type": "number"}],
        decisions=[{"key": "send_transfer", "slots": ["iban", "amount"]}],
        risks={"iban": "irreversible", "amount": "irreversible"},
        decision_risks={"send_transfer": "irreversible"},
    )
    Decision.objects.filter(key="send_transfer").update(
        approvals_required=required, approvers=group
    )


def answered(api: Driver, amount: int = 250_000) -> dict[str, Any]:
    """An instance alice has answered in full (she confirms the iban, edits the amount)."""
    instance_id = api.open(
        CLASS,
        beliefs=[
            {"slot": "iban", "value": "DE89370400440532013000", "source": "tool"},
            {"slot": "amount", "value": 1000, "source": "tool"},
        ],
    )
    api.plan(instance_id)
    assert api.respond(api.prompt(instance_id, "iban"), "confirm").status_code == 200
    edited = api.respond(
        api.prompt(instance_id, "amount"), "edit", value=amount, value_confirmation=amount
    )
    assert edited.status_code == 200, edited.json()
    return api.instance(instance_id)


def _digests(instance: dict[str, Any]) -> dict[str, Any]:
    """What an approver says they saw: the values' digest and their worlds'."""
    return {
        "bindings_digest": instance["bindings_digest"],
        "worlds_digest": instance["worlds_digest"],
    }


def approve(client: JsonClient, instance: dict[str, Any], **extra: Any) -> Any:
    body = {"action": "approve", **_digests(instance), **extra}
    return client.post_json(f"{API}/instances/{instance['id']}/approval/", body)


@pytest.fixture
def as_person(person_client: Callable[[User], JsonClient]) -> Callable[[User], JsonClient]:
    return person_client


@pytest.mark.usefixtures("erin")
def test_two_of_three_is_ready_only_after_two_distinct_people_approve_the_same_digest(
    api: Driver, treasury: Group, bob: User, dave: User, as_person: Callable[[User], JsonClient]
) -> None:
    register(api, treasury, 2)
    instance = answered(api)
    assert instance["status"] == "awaiting_approval"
    assert instance["receipt"] is None
    quorum = instance["quorum"]
    assert quorum["missing"] == 2
    assert quorum["approvals"] == []
    assert quorum["requirements"][0]["approvers_group"] == "treasury"

    first = approve(as_person(bob), instance)
    assert first.status_code == 200, first.json()
    assert first.json()["status"] == "awaiting_approval"
    assert first.json()["quorum"]["missing"] == 1
    again = approve(as_person(bob), instance)
    assert again.json()["replayed"] is True
    assert api.instance(instance["id"])["quorum"]["missing"] == 1  # bob counts once

    second = approve(as_person(dave), instance)
    assert second.status_code == 200
    ready = api.instance(instance["id"])
    assert ready["status"] == "ready"
    assert ready["bindings_digest"] == instance["bindings_digest"]
    claims = jwt.decode(ready["receipt"], options={"verify_signature": False})
    assert [a["by"] for a in claims["quorum"]["approvers"]] == ["bob", "dave"]
    assert {a["bindings_digest"] for a in claims["quorum"]["approvers"]} == {
        instance["bindings_digest"]
    }
    late = approve(as_person(bob), instance)
    assert late.status_code == 409
    assert late.json()["error"] == "instance_ready"


def test_the_principal_in_the_group_counts_once_however_often_she_approves(
    api: Driver, treasury: Group, alice: User, bob: User, as_person: Callable[[User], JsonClient]
) -> None:
    alice.groups.add(treasury)
    register(api, treasury, 2)
    instance = answered(api)
    assert instance["status"] == "awaiting_approval"
    assert [a["by"] for a in instance["quorum"]["approvals"]] == ["alice"]
    assert instance["quorum"]["missing"] == 1
    twice = approve(api.person, instance)
    assert twice.status_code == 200 and twice.json()["replayed"] is True
    assert api.instance(instance["id"])["quorum"]["missing"] == 1
    assert approve(as_person(bob), instance).status_code == 200
    assert api.instance(instance["id"])["status"] == "ready"


def test_the_principal_outside_the_group_cannot_approve_and_cannot_approve_for_others(
    api: Driver, treasury: Group, bob: User
) -> None:
    register(api, treasury, 1)
    instance = answered(api)
    refused = approve(api.person, instance)
    assert refused.status_code == 403
    assert refused.json()["error"] == "not_an_approver"
    on_behalf = approve(api.person, instance, approver="bob")
    assert on_behalf.status_code == 400  # there is no "on behalf of"
    assert api.instance(instance["id"])["quorum"]["missing"] == 1
    assert Approval.objects.count() == 0


def test_a_runtime_key_cannot_approve(api: Driver, treasury: Group, bob: User) -> None:
    register(api, treasury, 1)
    instance = answered(api)
    refused = approve(api.runtime, instance)
    assert refused.status_code == 403
    assert api.instance(instance["id"])["status"] == "awaiting_approval"
    assert Approval.objects.count() == 0


def test_an_outsider_gets_404(
    api: Driver, treasury: Group, mallory: User, as_person: Callable[[User], JsonClient]
) -> None:
    register(api, treasury, 1)
    instance = answered(api)
    assert approve(as_person(mallory), instance).status_code == 404
    assert as_person(mallory).get(f"{API}/instances/{instance['id']}/approval/").status_code == 404


def test_an_edit_resets_the_approvals_and_says_so(
    api: Driver, treasury: Group, bob: User, dave: User, as_person: Callable[[User], JsonClient]
) -> None:
    register(api, treasury, 2)
    instance = answered(api)
    assert approve(as_person(bob), instance).status_code == 200
    # The runtime states a new world for the amount: alice must confirm again, new values.
    new = api.runtime.post_json(
        f"{API}/instances/{instance['id']}/beliefs/",
        {"slot": "amount", "value": 260_000, "source": "tool"},
    )
    assert new.status_code == 201, new.json()
    reopened = api.instance(instance["id"])
    assert reopened["status"] == "awaiting_user"
    api.respond(api.prompt(instance["id"], "amount"), "confirm")
    waiting = api.instance(instance["id"])
    assert waiting["status"] == "awaiting_approval"
    assert waiting["bindings_digest"] != instance["bindings_digest"]
    assert waiting["quorum"]["missing"] == 2
    assert [a["by"] for a in waiting["quorum"]["reset"]] == ["bob"]
    assert AuditEvent.objects.filter(kind="approval.reset").exists()
    stale = approve(as_person(dave), instance)  # the digest dave saw before the edit
    assert stale.status_code == 409
    assert stale.json()["error"] == "stale_digest"
    assert approve(as_person(dave), waiting).status_code == 200
    assert approve(as_person(bob), waiting).status_code == 200
    assert api.instance(instance["id"])["status"] == "ready"


def test_the_first_rejection_cancels_with_its_reason(
    api: Driver, treasury: Group, bob: User, dave: User, as_person: Callable[[User], JsonClient]
) -> None:
    register(api, treasury, 2)
    instance = answered(api)
    assert approve(as_person(bob), instance).status_code == 200
    url = f"{API}/instances/{instance['id']}/approval/"
    body = {"action": "reject", **_digests(instance)}
    assert as_person(dave).post_json(url, body).status_code == 400  # a reason is required
    rejected = as_person(dave).post_json(url, {**body, "reason": "not budgeted"})
    assert rejected.status_code == 200, rejected.json()
    after = api.instance(instance["id"])
    assert after["status"] == "cancelled"
    assert "dave" in after["status_reason"] and "not budgeted" in after["status_reason"]
    assert approve(as_person(bob), instance).status_code == 409


def test_away_is_marked_by_another_member_and_is_not_an_approval(
    api: Driver,
    treasury: Group,
    bob: User,
    dave: User,
    erin: User,
    as_person: Callable[[User], JsonClient],
) -> None:
    register(api, treasury, 2)
    instance = answered(api)
    url = f"{API}/instances/{instance['id']}/approval/"
    body = {"action": "away", **_digests(instance), "approver": "erin"}
    assert api.runtime.post_json(url, body).status_code == 403
    assert as_person(erin).post_json(url, {**body}).status_code == 400  # not oneself
    marked = as_person(bob).post_json(url, body)
    assert marked.status_code == 200, marked.json()
    quorum = api.instance(instance["id"])["quorum"]
    assert quorum["missing"] == 2
    assert quorum["away"][0]["approver"] == "erin" and quorum["away"][0]["marked_by"] == "bob"


def test_events_and_emails_go_to_the_group(
    api: Driver,
    treasury: Group,
    bob: User,
    dave: User,
    erin: User,
    as_person: Callable[[User], JsonClient],
) -> None:
    register(api, treasury, 2)
    instance = answered(api)
    event = WebhookEvent.objects.get(type="instance.awaiting_approval")
    assert event.payload["data"]["quorum"]["missing"] == 2
    notes = EmailNotification.objects.filter(instance_id=instance["id"], kind="awaiting_approval")
    assert sorted(n.recipient.username for n in notes) == ["bob", "dave", "erin"]
    for email in OutgoingEmail.objects.filter(kind="awaiting_approval"):
        email_send(email.pk)
    assert sorted(m.to[0] for m in mail.outbox) == ["bob@x.test", "dave@x.test", "erin@x.test"]
    assert all("250000" not in m.body and "DE89" not in m.body for m in mail.outbox)
    assert all(f"/approvals/{instance['id']}/" in m.body for m in mail.outbox)
    approve(as_person(bob), instance)
    recorded = WebhookEvent.objects.get(type="instance.approval_recorded")
    assert recorded.payload["data"]["quorum"]["missing"] == 1
    assert [a["by"] for a in recorded.payload["data"]["quorum"]["approvals"]] == ["bob"]


def test_approvers_still_asked_are_reminded_before_expiry_and_the_instance_expires_after(
    api: Driver,
    treasury: Group,
    bob: User,
    dave: User,
    erin: User,
    as_person: Callable[[User], JsonClient],
    settings: Any,
) -> None:
    register(api, treasury, 2)
    instance = answered(api)
    url = f"{API}/instances/{instance['id']}/approval/"
    assert approve(as_person(bob), instance).status_code == 200
    away = {"action": "away", **_digests(instance), "approver": "erin"}
    assert as_person(bob).post_json(url, away).status_code == 200
    round_ = ApprovalRound.objects.get(instance_id=instance["id"])
    assert round_.expires_at - round_.started_at == settings.CONSOLE_APPROVAL_TTL

    early = round_.expires_at - settings.CONSOLE_EXPIRY_WARNING - timedelta(minutes=1)
    assert sweep(now=early)["warned"] == 0
    soon = round_.expires_at - timedelta(minutes=5)
    assert sweep(now=soon)["warned"] == 1
    assert sweep(now=soon)["warned"] == 0  # once
    reminded = EmailNotification.objects.filter(
        instance_id=instance["id"], kind="approval_expiring"
    )
    # bob approved and erin is away: only dave is reminded.
    assert [n.recipient.username for n in reminded] == ["dave"]
    assert WebhookEvent.objects.filter(
        instance_id=instance["id"], type="instance.expiring"
    ).exists()

    with time_machine.travel(round_.expires_at + timedelta(seconds=1), tick=False):
        expired = api.instance(instance["id"])  # the read settles the expiry first
    assert expired["status"] == "expired"
    assert approve(as_person(dave), instance).status_code == 409


def test_the_sweep_expires_an_instance_whose_approvals_ran_out(
    api: Driver, treasury: Group, bob: User
) -> None:
    register(api, treasury, 1)
    instance = answered(api)
    round_ = ApprovalRound.objects.get(instance_id=instance["id"])
    assert sweep(now=round_.expires_at - timedelta(seconds=1))["expired"] == 0
    assert sweep(now=round_.expires_at)["expired"] == 1
    assert TaskInstance.objects.get(pk=instance["id"]).status == "expired"


def test_an_approval_round_of_earlier_values_does_not_expire_the_current_one(
    api: Driver, treasury: Group, bob: User
) -> None:
    register(api, treasury, 1)
    instance = answered(api)
    first = ApprovalRound.objects.get(instance_id=instance["id"])
    api.runtime.post_json(
        f"{API}/instances/{instance['id']}/beliefs/",
        {"slot": "amount", "value": 1, "source": "tool"},
    )
    api.respond(api.prompt(instance["id"], "amount"), "confirm")
    ApprovalRound.objects.filter(pk=first.pk).update(expires_at=first.started_at)
    assert sweep()["expired"] == 0
    assert api.instance(instance["id"])["status"] == "awaiting_approval"


def test_time_to_quorum_shows_per_task_class_on_insights(
    api: Driver,
    treasury: Group,
    bob: User,
    carol: User,
    as_person: Callable[[User], JsonClient],
    signed_in: Callable[[User], Any],
) -> None:
    register(api, treasury, 1)
    instance = answered(api)
    round_ = ApprovalRound.objects.get(instance_id=instance["id"])
    with time_machine.travel(round_.started_at + timedelta(minutes=12, seconds=5), tick=False):
        assert approve(as_person(bob), instance).status_code == 200
    page = signed_in(carol).get("/insights/").content.decode()
    assert 'id="time-to-quorum"' in page
    assert CLASS in page and "12 min 5 s" in page


@pytest.mark.parametrize("principal_in_group", [False, True])
@pytest.mark.parametrize("required", [1, 2, 3])
@pytest.mark.parametrize("approving", [0, 1, 2, 3])
def test_it_is_ready_exactly_when_enough_distinct_members_approved(
    api: Driver,
    treasury: Group,
    alice: User,
    bob: User,
    dave: User,
    erin: User,
    as_person: Callable[[User], JsonClient],
    principal_in_group: bool,
    required: int,
    approving: int,
) -> None:
    """Every combination: the principal in the group or not, k, and how many other members
    approve (each twice): ready iff the distinct approvals reach k, never before."""
    if principal_in_group:
        alice.groups.add(treasury)
    register(api, treasury, required)
    instance = answered(api)
    counted = int(principal_in_group)
    assert instance["status"] == ("ready" if counted >= required else "awaiting_approval")
    for member in [bob, dave, erin][:approving]:
        was_ready = counted >= required
        first = approve(as_person(member), instance)
        assert first.status_code == (409 if was_ready else 200), first.json()
        counted += 0 if was_ready else 1
        twice = approve(as_person(member), instance)  # the same person again counts once
        if counted >= required:
            assert twice.status_code == 409
        else:
            assert twice.status_code == 200 and twice.json()["replayed"] is True
    after = api.instance(instance["id"])
    assert after["status"] == ("ready" if counted >= required else "awaiting_approval")
    distinct = Approval.objects.filter(instance_id=instance["id"]).values("approver").distinct()
    assert distinct.count() == Approval.objects.filter(instance_id=instance["id"]).count()
    if after["status"] == "awaiting_approval":
        assert after["quorum"]["missing"] == required - counted


def test_a_veto_by_the_principal_while_approvers_wait_resets_their_approvals(
    api: Driver, treasury: Group, bob: User, as_person: Callable[[User], JsonClient]
) -> None:
    api.register(
        CLASS,
        slots=[{"key": "iban"}, {"key": "memo"}],
        decisions=[{"key": "send_transfer", "slots": ["iban"]}],
        risks={"iban": "irreversible", "memo": "reversible"},
        decision_risks={"send_transfer": "irreversible"},
    )
    Decision.objects.filter(key="send_transfer").update(approvals_required=2, approvers=treasury)
    instance_id = api.open(
        CLASS,
        beliefs=[
            {"slot": "iban", "value": "DE89", "source": "tool"},
            {"slot": "memo", "value": "rent", "source": "tool"},
        ],
    )
    api.plan(instance_id)
    api.respond(api.prompt(instance_id, "iban"), "confirm")
    waiting = api.instance(instance_id)
    assert waiting["status"] == "awaiting_approval"
    assert approve(as_person(bob), waiting).status_code == 200
    vetoed = api.respond(api.prompt(instance_id, "memo"), "veto", reason="wrong memo")
    assert vetoed.status_code == 200, vetoed.json()
    assert api.instance(instance_id)["status"] == "awaiting_user"
    api.respond(api.prompt(instance_id, "memo"), "answer", value="deposit")
    again = api.instance(instance_id)
    assert again["status"] == "awaiting_approval"
    assert again["quorum"]["missing"] == 2
    assert [a["by"] for a in again["quorum"]["reset"]] == ["bob"]


def test_the_pages_say_where_the_approvals_stand_and_outsiders_get_404(
    api: Driver,
    treasury: Group,
    alice: User,
    bob: User,
    dave: User,
    mallory: User,
    as_person: Callable[[User], JsonClient],
    signed_in: Callable[[User], Any],
) -> None:
    register(api, treasury, 2)
    instance = answered(api)
    approve(as_person(bob), instance)
    own = signed_in(alice).get(f"/instances/{instance['id']}/").content.decode()
    assert "waiting for the approvers" in own and "1 approval missing" in own and "bob" in own
    status = signed_in(alice).get(f"/approvals/{instance['id']}/")
    assert status.status_code == 200
    assert "Approve these values" not in status.content.decode()  # not one of the approvers
    inbox = signed_in(dave).get("/").content.decode()
    assert f"approval-link-{instance['id']}" in inbox
    assert f"approval-link-{instance['id']}" not in signed_in(bob).get("/").content.decode()
    assert signed_in(mallory).get(f"/approvals/{instance['id']}/").status_code == 404
    stale = signed_in(dave).post(
        f"/approvals/{instance['id']}/act/", {"action": "approve", "bindings_digest": "0" * 64}
    )
    assert stale.status_code == 409
    assert "the values changed since you saw them" in stale.content.decode()


@pytest.mark.parametrize("lowered_to", [1, 2])
@pytest.mark.parametrize("held", [0, 1, 2])
def test_an_approved_lowering_of_m_settles_the_instances_it_completes_at_once(
    api: Driver,
    treasury: Group,
    bob: User,
    dave: User,
    erin: User,
    carol: User,
    cathy: User,
    as_person: Callable[[User], JsonClient],
    held: int,
    lowered_to: int,
) -> None:
    from beliefs.services import classification as c
    from beliefs.services.audit import Actor
    from beliefs.services.decision_settings import decision_set_approvals

    register(api, treasury, 3)
    instance = answered(api)
    for approver in [bob, dave][:held]:
        assert approve(as_person(approver), instance).status_code == 200
    assert api.instance(instance["id"])["quorum"]["missing"] == 3 - held
    decision = Decision.objects.get(key="send_transfer")
    decision_set_approvals(
        decision=decision,
        approvals_required=lowered_to,
        approvers="treasury",
        reason="two of us are enough",
        actor=Actor(user=carol),
    )
    assert api.instance(instance["id"])["status"] == "awaiting_approval"  # a request, pending
    (request,) = RiskChangeRequest.objects.filter(state="pending")
    result = c.risk_change_request_approve(
        change_request=request, reason="agreed", actor=Actor(user=cathy)
    )
    assert result.outcome == "applied" and result.replanned == 1

    read = api.instance(instance["id"])
    completes = held >= lowered_to
    if completes:
        # Settled by the approval of the lowering itself, as the last approval would have:
        # ready, with its receipt (naming who approved) and the instance.ready event.
        assert read["status"] == "ready"
        claims = jwt.decode(read["receipt"], options={"verify_signature": False})
        assert [a["by"] for a in claims["quorum"]["approvers"]] == ["bob", "dave"][:held]
        (ready,) = WebhookEvent.objects.filter(type="instance.ready")
        assert ready.payload["data"]["instance_id"] == instance["id"]
        assert ready.payload["data"]["receipt"] == read["receipt"]
    else:
        assert read["status"] == "awaiting_approval"
        assert read["quorum"]["missing"] == lowered_to - held
        assert read["receipt"] is None
        assert not WebhookEvent.objects.filter(type="instance.ready").exists()
    [applied] = AuditEvent.objects.filter(kind="classification.decision_approvals")
    assert applied.data["replanned"] == 1
