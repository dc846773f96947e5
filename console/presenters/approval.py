"""M-of-N approval: what an approver sees of an action waiting for them: the same
restatement as its principal, each value written as the principal's page writes it (with how
the principal gave it, their edits marked), where the approvals stand and, once decided, who
did what; and the forms to approve, reject or mark a member away."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User

from beliefs import selectors
from beliefs.models import InstanceStatus, Prompt, PromptState, TaskInstance
from beliefs.selectors.quorum import Quorum, Rejection, rejection_of
from console.presenters.restatement import Sentence, restatement

HOW = {
    "edit": "edited by {who}",
    "answer": "answered by {who}",
    "confirm": "confirmed by {who}",
}


@dataclass(frozen=True)
class Value:
    """One value to approve; `label` and `value` are untrusted, shown with `|shown` and
    `|clamped` (as on the principal's page: "Yes", not "true")."""

    slot: str
    label: str
    value: Any
    how: str
    edited: bool  # the principal typed a value other than the one proposed


@dataclass(frozen=True)
class Member:
    """One approver and what they did: `state` is "approved", "rejected", "away", "waiting"
    (still asked), "not_needed" (the action went ahead without them) or "undecided" (it was
    cancelled or expired before they decided)."""

    username: str
    approved: bool
    away_marked_by: str
    is_you: bool
    state: str = "waiting"
    at: Any = None  # when they approved or rejected
    reason: str = ""  # their rejection's reason (untrusted)


def _values(instance: TaskInstance, prompts: list[Prompt]) -> list[Value]:
    who = instance.principal.get_username()
    answered: dict[str, Prompt] = {}
    for prompt in prompts:
        if prompt.state == PromptState.ANSWERED:
            answered[prompt.slot.key] = prompt  # the latest answer of the slot wins
    values = []
    for item in instance.plan_items or []:
        key = item["slot"]
        answer = answered.get(key)
        if answer is not None:
            how = HOW.get(answer.action, "{who}").format(who=who)
        elif item.get("route") == "SURFACED":
            how = f"assumed; {who} could have vetoed it"
        else:
            how = "known already: not asked"
        values.append(
            Value(
                slot=key,
                label=item.get("label") or key,
                value=(instance.bindings or {}).get(key, item.get("value")),
                how=how,
                edited=answer is not None and answer.action == "edit",
            )
        )
    return values


def _members(quorum: Quorum, user: User, status: str, rejection: Rejection | None) -> list[Member]:
    approved = {a.approver_id: a.created_at for a in quorum.approvals}
    away = {a.approver_id: a.marked_by.get_username() for a in quorum.away}
    ids = set(quorum.approvers) | ({rejection.by_id} if rejection and rejection.by_id else set())
    users = User.objects.filter(pk__in=sorted(ids)).order_by("username")
    members = []
    for u in users:
        state, at, reason = _what_they_did(u.pk, status, approved, away, rejection)
        members.append(
            Member(
                u.get_username(),
                u.pk in approved,
                away.get(u.pk, ""),
                u.pk == user.pk,
                state,
                at,
                reason,
            )
        )
    return members


def _what_they_did(
    user_id: int,
    status: str,
    approved: dict[int, Any],
    away: dict[int, str],
    rejection: Rejection | None,
) -> tuple[str, Any, str]:
    if user_id in approved:
        return "approved", approved[user_id], ""
    if rejection is not None and rejection.by_id == user_id:
        return "rejected", rejection.at, rejection.reason
    if status == InstanceStatus.READY:
        return "not_needed", None, ""
    if status in (InstanceStatus.CANCELLED, InstanceStatus.EXPIRED):
        return "undecided", None, ""
    if user_id in away:
        return "away", None, ""
    return "waiting", None, ""


def approval_context(instance: TaskInstance, user: User) -> dict[str, Any]:
    decisions = selectors.instance_decisions(instance)
    quorum = selectors.quorum_of(instance, instance.bindings_digest)
    prompts = selectors.instance_prompts(instance)
    waiting = instance.status == InstanceStatus.AWAITING_APPROVAL
    mine = user.pk in quorum.approvers
    sentences: list[Sentence] = restatement(instance, decisions)
    rejection = rejection_of(instance) if instance.status == InstanceStatus.CANCELLED else None
    members = _members(quorum, user, instance.status, rejection)
    return {
        "instance": instance,
        "sentences": sentences,
        "values": _values(instance, prompts),
        "worlds": selectors.bound_world_changes(instance),
        "quorum": quorum,
        "members": members,
        "waiting": waiting,
        "can_act": waiting and mine and not quorum.approved_by(user.pk),
        "approved_by_you": quorum.approved_by(user.pk),
        "is_principal": instance.principal_id == user.pk,
        "is_approver": mine,
        "rejection": rejection,
        # The digest promise holds only while the values can still be approved, or once they
        # were: a cancelled or expired action promises nothing.
        "promise": waiting or instance.status == InstanceStatus.READY,
        "away_choices": [m for m in members if not m.is_you and m.state == "waiting"],
    }
