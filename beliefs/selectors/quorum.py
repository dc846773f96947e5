"""M-of-N approval, the reads: which approvals an instance needs, who has given them for its
exact bindings, who is away, and what is missing (services/quorum.py writes them).

A decision with an approvers group (`Decision.approvers`) needs `approvals_required` members
of that group to approve the bindings of every action it is part of. The requirement of an
instance is the set of its decisions' requirements (the decisions its action's slots feed,
as the receipt names them); each is met on its own, and one person's approval counts towards
every requirement whose group they are in, once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import User
from django.db.models import Count, Exists, OuterRef, Prefetch, Q, QuerySet, Subquery

from beliefs.domain.attention import ChangedDetail, changed_details
from beliefs.domain.policy import Route
from beliefs.domain.vocabulary import AuditKind
from beliefs.domain.vouch import is_irreversible
from beliefs.models import (
    Approval,
    ApprovalRound,
    ApproverAway,
    AuditEvent,
    Decision,
    InstanceStatus,
    PromptResponse,
    PromptState,
    TaskInstance,
)
from beliefs.selectors.passkeys import FedDecision, decisions_fed
from beliefs.selectors.shapes import ApprovalClaimJSON, QuorumJSON


@dataclass(frozen=True)
class Requirement:
    """One decision's need: `required` approvals from the members of one group."""

    decision: str
    label: str
    group: str
    required: int
    members: frozenset[int]


@dataclass(frozen=True)
class Quorum:
    """Where an instance's approvals stand for one bindings digest."""

    requirements: tuple[Requirement, ...]
    digest: str
    approvals: tuple[Approval, ...] = ()  # for `digest`, with their approver
    voided: tuple[Approval, ...] = ()  # for earlier digests: an edit reset them
    away: tuple[ApproverAway, ...] = ()
    round: ApprovalRound | None = None
    names: dict[int, str] = field(default_factory=dict)  # every member's username
    worlds: str = ""  # the `worlds_digest` the approvals are for, with `digest`

    @property
    def required(self) -> bool:
        return bool(self.requirements)

    def counted(self, requirement: Requirement) -> list[Approval]:
        return [a for a in self.approvals if a.approver_id in requirement.members]

    def missing_for(self, requirement: Requirement) -> int:
        return max(0, requirement.required - len(self.counted(requirement)))

    @property
    def missing(self) -> int:
        """How many more approvals the instance needs (each requirement on its own)."""
        return sum(self.missing_for(r) for r in self.requirements)

    @property
    def met(self) -> bool:
        return self.missing == 0

    @property
    def approvers(self) -> frozenset[int]:
        """Everyone whose approval counts towards some requirement."""
        return frozenset().union(*(r.members for r in self.requirements))

    def approved_by(self, user_id: int) -> bool:
        return any(a.approver_id == user_id for a in self.approvals)

    def is_away(self, user_id: int) -> bool:
        return any(a.approver_id == user_id for a in self.away)

    def still_asked(self) -> list[int]:
        """Members who have not approved and are not marked away: whom emails still ask."""
        done = {a.approver_id for a in self.approvals}
        away = {a.approver_id for a in self.away}
        return sorted(self.approvers - done - away)

    def payload(self) -> QuorumJSON:
        """The `quorum` of the instance read and of the events: who approved, how many are
        missing, for which digest. Never a value."""
        return {
            "bindings_digest": self.digest or None,
            "worlds_digest": self.worlds or None,
            "missing": self.missing,
            "requirements": [
                {
                    "decision": r.decision,
                    "approvers_group": r.group,
                    "approvals_required": r.required,
                    "approved": len(self.counted(r)),
                    "missing": self.missing_for(r),
                }
                for r in self.requirements
            ],
            "approvals": [approval_claim(a) for a in self.approvals],
            "away": [
                {
                    "approver": a.approver.get_username(),
                    "marked_by": a.marked_by.get_username(),
                    "at": a.created_at.isoformat(),
                }
                for a in self.away
            ],
            # An edit changed the bindings or their world: these approvals were for other
            # values, or the same values meaning something else.
            "reset": [approval_claim(a) for a in self.voided],
            "expires_at": self.round.expires_at.isoformat() if self.round else None,
        }


def approval_claim(approval: Approval) -> ApprovalClaimJSON:
    """One approval as the receipt, the instance read and the events name it."""
    return {
        "by": approval.approver.get_username(),
        "at": approval.created_at.isoformat(),
        "bindings_digest": approval.bindings_digest,
        "worlds_digest": approval.worlds_digest or None,
        "via": approval.via,
    }


def requirements_of(
    instance: TaskInstance, fed: Sequence[FedDecision] | None = None
) -> tuple[Requirement, ...]:
    """What the instance's decisions ask for: those of the decisions its action's slots feed
    that have an approvers group (two queries; one when none has a group). `fed`:
    `passkeys.decisions_fed(instance)`, when the caller has read it."""
    found = fed if fed is not None else decisions_fed(instance)
    decisions = [d for d in found if d.approvers_id is not None]
    if not decisions:
        return ()
    group_ids = {d.approvers_id for d in decisions}
    members: dict[int, set[int]] = {g: set() for g in group_ids if g is not None}
    for user_id, group_id in User.objects.filter(groups__in=group_ids, is_active=True).values_list(
        "id", "groups"
    ):
        members[group_id].add(user_id)
    return tuple(
        Requirement(
            decision=d.key,
            label=d.label,
            group=d.approvers_name or "",
            required=max(1, d.approvals_required),
            members=frozenset(members.get(d.approvers_id or 0, ())),
        )
        for d in decisions
    )


def quorum_of(
    instance: TaskInstance,
    digest: str,
    requirements: tuple[Requirement, ...] | None = None,
    worlds: str | None = None,
) -> Quorum:
    """Where the instance's approvals stand for `digest` bound with `worlds` (a
    `worlds_digest`; by default the instance's)."""
    if worlds is None:
        worlds = instance.worlds_digest
    if requirements is None:
        requirements = requirements_of(instance)
    if not requirements:
        return Quorum((), digest, worlds=worlds)
    all_approvals = list(
        Approval.objects.filter(instance=instance).select_related("approver").order_by("id")
    )

    def current(a: Approval) -> bool:
        return a.bindings_digest == digest and a.worlds_digest == worlds

    away = tuple(
        ApproverAway.objects.filter(instance=instance).select_related("approver", "marked_by")
    )
    round_ = ApprovalRound.objects.filter(
        instance=instance, bindings_digest=digest, worlds_digest=worlds
    ).first()
    return Quorum(
        requirements,
        digest,
        tuple(a for a in all_approvals if current(a)),
        tuple(a for a in all_approvals if not current(a)),
        away,
        round_,
        worlds=worlds,
    )


def quorum_payload(instance: TaskInstance) -> QuorumJSON | None:
    """The instance read's `quorum`: while it waits for approvals, where they stand."""
    if instance.status != InstanceStatus.AWAITING_APPROVAL:
        return None
    return quorum_of(instance, instance.bindings_digest).payload()


def approval_due(instance_id: Any, now: datetime) -> bool:
    """The instance waits for approvals past its round's time: it is to expire."""
    return (
        ApprovalRound.objects.open().filter(instance_id=instance_id, expires_at__lte=now).exists()
    )


def approvals_overdue(now: datetime) -> list[Any]:
    """The instances waiting for approvals whose round ran out."""
    return list(
        ApprovalRound.objects.open()
        .filter(expires_at__lte=now)
        .values_list("instance_id", flat=True)
    )


def approvals_expiring(now: datetime, within: Any) -> list[Any]:
    """The instances waiting for approvals whose round runs out within `within`, not yet
    warned."""
    return list(
        ApprovalRound.objects.open()
        .filter(
            warned_at__isnull=True,
            expires_at__gt=now,
            expires_at__lte=now + within,
        )
        .values_list("instance_id", flat=True)
    )


def waiting_for_approver(user: User, now: datetime) -> QuerySet[TaskInstance]:
    """The instances waiting for approvals that `user` may give and has not given: one of
    their task class's decisions has a group `user` is in, and the round of their current
    bindings has not run out. Newest first. (The page checks each against its action's own
    decisions, `instance_for_approver`.)"""
    groups = user.groups.values("id")  # a subquery: one query in all
    current = ApprovalRound.objects.filter(
        instance=OuterRef("pk"),
        bindings_digest=OuterRef("bindings_digest"),
        worlds_digest=OuterRef("worlds_digest"),
        reached_at__isnull=True,
        expires_at__gt=now,
    )
    approved = Approval.objects.filter(
        instance=OuterRef("pk"),
        bindings_digest=OuterRef("bindings_digest"),
        worlds_digest=OuterRef("worlds_digest"),
        approver=user,
    )
    in_group = Decision.objects.filter(task_class=OuterRef("task_class"), approvers__in=groups)
    return (
        TaskInstance.objects.filter(status=InstanceStatus.AWAITING_APPROVAL)
        .filter(Exists(current), Exists(in_group), ~Exists(approved))
        .annotate(
            approval_expires=Subquery(current.values("expires_at")[:1]),
        )
        .select_related("task_class", "principal", "runtime")
        .order_by("-updated_at")
    )


def approvals_asked_of(user: User, now: datetime, limit: int) -> list[TaskInstance]:
    """`waiting_for_approver`'s first `limit` instances whose own action has a decision
    `user` approves (its slots among the action's): what the inbox lists. One query, and two
    more (the decisions at stake, the approved decisions with their slots) only when any
    instance is a candidate."""
    at_stake = Prefetch(
        "task_class__decisions", queryset=Decision.objects.order_by("id").prefetch_related("slots")
    )
    candidates = list(waiting_for_approver(user, now).prefetch_related(at_stake)[: limit * 2])
    if not candidates:
        return []
    decisions = Decision.objects.filter(
        task_class__in={i.task_class_id for i in candidates},
        approvers__in=user.groups.values("id"),
    ).prefetch_related("slots")
    fed: dict[int, set[str]] = {}
    for decision in decisions:
        fed.setdefault(decision.task_class_id, set()).update(s.key for s in decision.slots.all())
    return [i for i in candidates if fed.get(i.task_class_id, set()) & set(i.action_slots)][:limit]


@dataclass(frozen=True)
class WorldShown:
    """One bound irreversible value's world, as approvers and signers see it: the reference
    it was bound with and what changed in it since the value was first acquired (the world
    diff its person confirmed against; none for a value acquired in this run)."""

    slot: str
    label: str
    world_ref: Any
    changes: tuple[ChangedDetail, ...]

    @property
    def keys(self) -> list[str]:
        """What an approver names to acknowledge each change: "slot:key"."""
        return [f"{self.slot}:{d.key}" for d in self.changes]


def bound_world_changes(instance: TaskInstance) -> list[WorldShown]:
    """Each bound irreversible slot of the instance's plan, in plan order, with its world
    reference and the changes its person acknowledged when confirming it (two queries at
    most, whatever the number of slots)."""
    items = [i for i in instance.plan_items or [] if is_irreversible(i) and i.get("belief")]
    if not items:
        return []
    beliefs = {i["belief"]["id"]: i for i in items}
    diffs: dict[int, Any] = {}
    for belief_id, diff in PromptResponse.objects.filter(
        prompt__instance=instance, belief_id__in=list(beliefs)
    ).values_list("belief_id", "prompt__world_diff"):
        diffs[belief_id] = diff
    return [
        WorldShown(
            slot=str(item["slot"]),
            label=str(item.get("label") or item["slot"]),
            world_ref=item["belief"].get("world_ref"),
            changes=changed_details(diffs.get(belief_id)),
        )
        for belief_id, item in beliefs.items()
    ]


def instance_for_approver(instance_id: Any, user: User) -> TaskInstance | None:
    """The instance if `user` may approve it now or is its principal (None for anyone else:
    existence is not leaked)."""
    instance = (
        TaskInstance.objects.select_related("task_class", "principal", "runtime")
        .filter(pk=instance_id)
        .first()
    )
    if instance is None:
        return None
    if instance.principal_id == user.pk:
        return instance
    if user.pk in frozenset().union(*(r.members for r in requirements_of(instance))):
        return instance
    return None


def time_to_quorum(limit: int = 2000) -> list[dict[str, Any]]:
    """Per task class, over its latest `limit` rounds that reached their quorum: how many,
    and how long from the principal's last answer to the last approval needed (median and
    longest, in seconds). One query."""
    rounds = (
        ApprovalRound.objects.filter(reached_at__isnull=False)
        .order_by("-reached_at")
        .values_list(
            "instance__task_class__key", "instance__task_class__name", "started_at", "reached_at"
        )[:limit]
    )
    by_class: dict[str, list[float]] = {}
    names: dict[str, str] = {}
    for key, name, started, reached in rounds:
        assert reached is not None  # filtered above
        names[key] = name
        by_class.setdefault(key, []).append((reached - started).total_seconds())
    rows = []
    for key in sorted(by_class):
        seconds = sorted(by_class[key])
        rows.append(
            {
                "task_class": key,
                "name": names[key],
                "reached": len(seconds),
                "median": timedelta(seconds=seconds[len(seconds) // 2]),
                "longest": timedelta(seconds=seconds[-1]),
            }
        )
    return rows


@dataclass(frozen=True)
class Standing:
    """Where one of a principal's actions stands with its approvers, for the inbox: who has
    approved its current values, how many approvals are still missing, and until when the
    approvers have."""

    instance: TaskInstance
    approved_by: tuple[str, ...]
    missing: int
    expires_at: datetime | None


def awaiting_approvers(user: User, limit: int) -> list[Standing]:
    """The principal's actions waiting for their approvers, newest first, each with where its
    approvals stand. Queries do not grow with the rows: one for the instances (with their
    runtime and round's expiry), and, only when there are any, their decisions, the decisions'
    slots, the approvals and the members of the groups asked."""
    current = ApprovalRound.objects.filter(
        instance=OuterRef("pk"),
        bindings_digest=OuterRef("bindings_digest"),
        worlds_digest=OuterRef("worlds_digest"),
    )
    decisions = Prefetch(
        "task_class__decisions", queryset=Decision.objects.order_by("id").prefetch_related("slots")
    )
    instances = list(
        TaskInstance.objects.filter(principal=user, status=InstanceStatus.AWAITING_APPROVAL)
        .select_related("task_class", "principal", "runtime")
        .annotate(approval_expires=Subquery(current.values("expires_at")[:1]))
        .prefetch_related(decisions)
        .order_by("-updated_at")[:limit]
    )
    if not instances:
        return []
    approvals: dict[Any, list[Approval]] = {}
    for approval in (
        Approval.objects.filter(instance__in=instances).select_related("approver").order_by("id")
    ):
        approvals.setdefault(approval.instance_id, []).append(approval)
    needs = {
        i.pk: [
            d
            for d in i.task_class.decisions.all()
            if d.approvers_id is not None
            and {s.key for s in d.slots.all()} & set(i.action_slots or [])
        ]
        for i in instances
    }
    groups = {d.approvers_id for found in needs.values() for d in found}
    members: dict[int, set[int]] = {g: set() for g in groups if g is not None}
    if groups:
        for user_id, group_id in User.objects.filter(groups__in=groups, is_active=True).values_list(
            "id", "groups"
        ):
            if group_id in members:
                members[group_id].add(user_id)
    standings = []
    for instance in instances:
        digest, worlds = instance.bindings_digest, instance.worlds_digest
        given = [
            a
            for a in approvals.get(instance.pk, [])
            if a.bindings_digest == digest and a.worlds_digest == worlds
        ]
        missing = sum(
            max(
                0,
                max(1, d.approvals_required)
                - sum(1 for a in given if a.approver_id in members.get(d.approvers_id or 0, ())),
            )
            for d in needs[instance.pk]
        )
        standings.append(
            Standing(
                instance,
                tuple(a.approver.get_username() for a in given),
                missing,
                getattr(instance, "approval_expires", None),
            )
        )
    return standings


@dataclass(frozen=True)
class Rejection:
    """The approver's rejection that cancelled an instance: who, why, when."""

    by_id: int | None
    by: str
    reason: str
    at: datetime


def rejection_of(instance: TaskInstance) -> Rejection | None:
    """The rejection that cancelled the instance, from the audit log (one query); None when
    no approver rejected it."""
    event = (
        AuditEvent.objects.filter(instance_id=instance.pk, kind=AuditKind.APPROVAL_REJECTED)
        .order_by("-id")
        .values("actor_user_id", "actor_user__username", "actor", "data", "created_at")
        .first()
    )
    if event is None:
        return None
    data = event["data"] if isinstance(event["data"], dict) else {}
    return Rejection(
        event["actor_user_id"],
        str(event["actor_user__username"] or event["actor"]),
        str(data.get("reason", "")),
        event["created_at"],
    )


def reported_to(user: User, limit: int) -> list[tuple[TaskInstance, int]]:
    """The principal's ready actions that bound an irreversible value on a runtime's report of
    their answer and that they have not vetoed, newest first, each with how many such values
    it bound (each listed with a veto on its page). One query, and two more (the decisions
    and their slots) only when there are any."""
    decisions = Prefetch(
        "task_class__decisions", queryset=Decision.objects.order_by("id").prefetch_related("slots")
    )
    reported = Q(prompts__route=Route.SILENT, prompts__state=PromptState.OPEN)
    found = list(
        TaskInstance.objects.filter(principal=user, status=InstanceStatus.READY)
        .annotate(reported=Count("prompts", filter=reported))
        .filter(reported__gt=0)
        .select_related("task_class", "principal", "runtime")
        .prefetch_related(decisions)
        .order_by("-updated_at")[:limit]
    )
    return [(instance, instance.reported) for instance in found]
