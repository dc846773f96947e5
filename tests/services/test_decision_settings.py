"""A decision's approvals setting (M-of-N): only classifiers set it, with a reason,
audited; more approvals or a group where there was none take effect at once, and fewer
approvals or another or no group wait for a second classifier (four eyes), over every
combination of before and after."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from beliefs.errors import InvalidInput, PermissionDenied
from beliefs.models import AuditEvent, Decision, RiskChangeRequest
from beliefs.services import classification as c
from beliefs.services.audit import Actor
from beliefs.services.decision_settings import decision_set_approvals
from tests.builders import shop

pytestmark = pytest.mark.django_db

# (approvals_required, approvers group): a group of None needs one approval, the principal's.
SETTINGS = [(1, None), *itertools.product((1, 2, 3), ("board", "treasury"))]


def ship() -> Decision:
    return Decision.objects.select_related("approvers").get(key="ship")


def _set(before: tuple[int, str | None]) -> None:
    group = Group.objects.get(name=before[1]) if before[1] else None
    Decision.objects.filter(key="ship").update(approvals_required=before[0], approvers=group)


@pytest.fixture
def groups(db: None) -> None:
    Group.objects.create(name="board")
    Group.objects.create(name="treasury")


@pytest.mark.usefixtures("groups")
@pytest.mark.parametrize(("before", "after"), list(itertools.product(SETTINGS, SETTINGS)))
def test_only_a_lowered_guard_waits_for_a_second_classifier(
    carol: User, before: tuple[int, str | None], after: tuple[int, str | None]
) -> None:
    shop()
    _set(before)
    results = decision_set_approvals(
        decision=ship(),
        approvals_required=after[0],
        approvers=after[1] or "",
        reason="treasury's four-eyes rule",
        actor=Actor(user=carol),
    )
    group_changes = before[1] != after[1]
    count_changes = before[0] != after[0]
    group_waits = group_changes and before[1] is not None
    count_waits = after[0] < before[0] and before[1] is not None
    requested = {r.field for r in RiskChangeRequest.objects.filter(state="pending")}
    assert requested == {
        *(["approvers"] if group_waits else []),
        *(["approvals_required"] if count_waits else []),
    }
    now = ship()
    assert (now.approvers.name if now.approvers else None) == (
        before[1] if group_waits else after[1]
    )
    assert now.approvals_required == (before[0] if count_waits else after[0])
    applied = AuditEvent.objects.filter(kind="classification.decision_approvals").count()
    assert applied == (group_changes and not group_waits) + (count_changes and not count_waits)
    if not group_changes and not count_changes:
        assert [r.outcome for r in results] == ["unchanged"]


@pytest.mark.usefixtures("groups")
def test_a_second_classifier_approves_fewer_approvals_and_the_requester_cannot(
    carol: User, cathy: User
) -> None:
    shop()
    _set((3, "board"))
    decision_set_approvals(
        decision=ship(),
        approvals_required=2,
        approvers="board",
        reason="r",
        actor=Actor(user=carol),
    )
    request = RiskChangeRequest.objects.get(state="pending")
    with pytest.raises(PermissionDenied):
        c.risk_change_request_approve(change_request=request, reason="ok", actor=Actor(user=carol))
    result = c.risk_change_request_approve(
        change_request=request, reason="agreed", actor=Actor(user=cathy)
    )
    assert result.outcome == "applied"
    assert ship().approvals_required == 2
    [event] = AuditEvent.objects.filter(kind="classification.decision_approvals")
    assert event.data["approved_by"] == "cathy" and event.data["requested_by"] == "carol"
    assert AuditEvent.objects.filter(kind="classification.change_approved").count() == 1


@pytest.mark.usefixtures("groups")
def test_the_requester_may_withdraw_a_cleared_group(carol: User) -> None:
    shop()
    _set((2, "board"))
    decision_set_approvals(
        decision=ship(), approvals_required=1, approvers="", reason="r", actor=Actor(user=carol)
    )
    for request in RiskChangeRequest.objects.filter(state="pending"):
        result = c.risk_change_request_refuse(
            change_request=request, reason="no", actor=Actor(user=carol)
        )
        assert "Withdrew" in result.message
    assert ship().approvers is not None and ship().approvals_required == 2


@pytest.mark.usefixtures("groups")
@pytest.mark.parametrize(
    ("count", "group", "field"),
    [(0, "board", "approvals_required"), (21, "board", "approvals_required"),
     ("two", "board", "approvals_required"), (2, "", "approvers"), (1, "nobody", "approvers")],
)  # fmt: skip
def test_it_refuses_a_bad_setting(carol: User, count: object, group: str, field: str) -> None:
    shop()
    with pytest.raises(InvalidInput) as refused:
        decision_set_approvals(
            decision=ship(), approvals_required=count, approvers=group, reason="r",
            actor=Actor(user=carol),
        )  # fmt: skip
    assert field in refused.value.fields


@pytest.mark.usefixtures("groups")
def test_only_a_classifier_with_a_reason_sets_it(alice: User, carol: User) -> None:
    shop()
    with pytest.raises(PermissionDenied):
        decision_set_approvals(
            decision=ship(), approvals_required=2, approvers="board", reason="r",
            actor=Actor(user=alice),
        )  # fmt: skip
    with pytest.raises(InvalidInput):
        decision_set_approvals(
            decision=ship(), approvals_required=2, approvers="board", reason=" ",
            actor=Actor(user=carol),
        )  # fmt: skip


@pytest.mark.usefixtures("groups")
def test_the_classify_page_saves_it_and_lists_a_lowering_as_pending(
    carol: User, signed_in: Callable[[User], Client]
) -> None:
    shop()
    client = signed_in(carol)
    url = f"/classify/commerce.ship_order/decisions/{ship().pk}/approvals/"
    saved = client.post(
        url, {"approvals_required": "2", "approvers": "board", "reason": "board signs"}
    )
    assert saved.status_code == 302
    assert (ship().approvals_required, ship().approvers.name) == (2, "board")
    client.post(url, {"approvals_required": "1", "approvers": "board", "reason": "fewer"})
    page = client.get("/classify/commerce.ship_order/").content.decode()
    assert "approvals needed 2 → 1" in page
    assert 'id="approvals-title"' in page
