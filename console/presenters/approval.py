"""M-of-N approval (issue 24): what an approver sees of an action waiting for them: the same
restatement as its principal, each value with how the principal gave it (their edits
marked), where the approvals stand, and the forms to approve, reject or mark a member away."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User

from beliefs import selectors
from beliefs.models import InstanceStatus, Prompt, PromptState, TaskInstance
from beliefs.selectors.quorum import Quorum
from console.presenters.restatement import Sentence, restatement
from console.templatetags.reveal import plain_text

HOW = {
    "edit": "edited by {who}",
    "answer": "answered by {who}",
    "confirm": "confirmed by {who}",
}


@dataclass(frozen=True)
class Value:
    """One value to approve; `label` and `text` are untrusted, shown with `|shown`."""

    slot: str
    label: str
    text: str
    how: str
    edited: bool  # the principal typed a value other than the one proposed


@dataclass(frozen=True)
class Member:
    username: str
    approved: bool
    away_marked_by: str
    is_you: bool


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
                text=plain_text(item.get("value"), compact=True),
                how=how,
                edited=answer is not None and answer.action == "edit",
            )
        )
    return values


def _members(quorum: Quorum, user: User) -> list[Member]:
    approved = {a.approver_id for a in quorum.approvals}
    away = {a.approver_id: a.marked_by.get_username() for a in quorum.away}
    users = User.objects.filter(pk__in=sorted(quorum.approvers)).order_by("username")
    return [
        Member(u.get_username(), u.pk in approved, away.get(u.pk, ""), u.pk == user.pk)
        for u in users
    ]


def approval_context(instance: TaskInstance, user: User) -> dict[str, Any]:
    decisions = selectors.instance_decisions(instance)
    quorum = selectors.quorum_of(instance, instance.bindings_digest)
    prompts = selectors.instance_prompts(instance)
    waiting = instance.status == InstanceStatus.AWAITING_APPROVAL
    mine = user.pk in quorum.approvers
    sentences: list[Sentence] = restatement(instance, decisions)
    members = _members(quorum, user)
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
        "away_choices": [
            m for m in members if not m.is_you and not m.approved and not m.away_marked_by
        ],
    }
