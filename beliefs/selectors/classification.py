"""Reading a task class's classification, its pending requests and its open plans."""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import QuerySet
from django.utils import timezone

from beliefs.domain.classes import (
    Change,
    ChangeField,
    Classes,
    DecisionClass,
    SlotClass,
    SlotRun,
    Snapshot,
    Target,
    Value,
)
from beliefs.domain.policy import RiskClass
from beliefs.models import (
    Decision,
    InstanceStatus,
    RiskChangeRequest,
    Slot,
    TaskClass,
    TaskInstance,
)
from beliefs.selectors.beliefs import belief_facts, choose_beliefs_for

# --- reading classes and open instances -----------------------------------------------------


def classes_from(slots: Iterable[Slot], decisions: Iterable[Decision]) -> Classes:
    """Needs `decisions` with their `slots` prefetched (or it queries once per decision)."""
    slots = list(slots)
    key_of = {s.pk: s.key for s in slots}
    return Classes(
        slots=tuple(
            SlotClass(
                s.key,
                RiskClass(s.risk_class),
                s.monotonic,
                tuple(s.scope_order) if s.scope_order else None,
            )
            for s in slots
        ),
        decisions=tuple(
            DecisionClass(
                d.key,
                RiskClass(d.risk_class),
                frozenset(key_of[s.pk] for s in d.slots.all() if s.pk in key_of),
            )
            for d in sorted(decisions, key=lambda d: d.pk)
        ),
    )


def classes_of(task_class: TaskClass) -> Classes:
    """Three queries: slots, decisions, their links."""
    return classes_from(
        task_class.slots.order_by("position", "id"),
        task_class.decisions.order_by("id").prefetch_related("slots"),
    )


def open_instances_of(task_class: TaskClass) -> QuerySet[TaskInstance]:
    """The task class's instances that routing still applies to: the ones a change re-plans."""
    return TaskInstance.objects.filter(task_class=task_class, status__in=InstanceStatus.open())


def impact_snapshot(
    task_class: TaskClass, classes: Classes | None = None, slots: list[Slot] | None = None
) -> Snapshot:
    """Read what an impact preview needs: two queries, plus one without `slots` and two more
    without `classes`.

    Beliefs are chosen by `choose_beliefs_for`, the very choice planning makes, for every open
    instance at once.
    """
    if slots is None:
        slots = list(task_class.slots.order_by("position", "id"))
    if classes is None:
        classes = classes_from(slots, task_class.decisions.order_by("id").prefetch_related("slots"))
    instances = list(
        open_instances_of(task_class)
        .only("id", "principal_id", "run_number", "runtime_id", "status", "action_slots")
        .order_by("created_at", "id")
    )
    if not instances:
        return Snapshot(classes, 0, 0, ())
    chosen = choose_beliefs_for(instances, slots)
    now = timezone.now()
    runs = []
    for instance in instances:
        for slot in slots:
            if slot.key not in instance.action_slots:
                continue  # not part of this action: planning does not route it
            belief, carried = chosen[instance.pk].get(slot.pk, (None, False))
            # The very facts `slot_states` gives routing for the same belief.
            facts = belief_facts(belief, carried, slot, now)
            runs.append(SlotRun(instance.pk, slot.key, facts))
    # The ones an upgrade re-plans now (`instances_replan_for_task_class`).
    planned = sum(1 for i in instances if i.status in InstanceStatus.planned_open())
    return Snapshot(classes, len(instances), planned, tuple(runs))


def pending_requests(task_class: TaskClass | None = None) -> list[RiskChangeRequest]:
    qs = RiskChangeRequest.objects.filter(state=RiskChangeRequest.State.PENDING).select_related(
        "task_class", "slot", "decision", "decision__approvers", "requested_by"
    )
    if task_class is not None:
        qs = qs.filter(task_class=task_class)
    return list(qs.order_by("created_at", "id"))


def awaiting_approval_by(user_id: int, limit: int) -> list[RiskChangeRequest]:
    """The first `limit` pending requests this classifier may approve (another asked for them),
    oldest first, with what they change: their approval queue."""
    qs = (
        RiskChangeRequest.objects.filter(state=RiskChangeRequest.State.PENDING)
        .exclude(requested_by_id=user_id)
        .select_related("task_class", "slot", "decision", "requested_by")
    )
    return list(qs.order_by("created_at", "id")[:limit])


def request_change(change_request: RiskChangeRequest) -> Change:
    """The change a request asks for."""
    target: Target
    if change_request.slot is not None:
        target, key = "slot", change_request.slot.key
    else:
        assert change_request.decision is not None  # a request names a slot or a decision
        target, key = "decision", change_request.decision.key
    after = change_request.after
    value: Value
    field: ChangeField
    if change_request.field == RiskChangeRequest.Field.RISK_CLASS:
        field, value = "risk_class", RiskClass(after)
    elif change_request.field == RiskChangeRequest.Field.SCOPE_ORDER:
        field, value = "scope_order", tuple(after) if after else None
    else:
        field, value = "monotonic", bool(after)
    return Change(target, key, field, value)


def request_is_current(change_request: RiskChangeRequest, classes: Classes) -> bool:
    """Is the target still as it was when the change was requested?"""
    if change_request.field in (
        RiskChangeRequest.Field.REQUIRES_SIGNATURE,
        RiskChangeRequest.Field.PERSON_CONFIRMS,
        RiskChangeRequest.Field.FUTURE,
    ):  # an on/off guard of the decision's (or the slot's) own
        target = change_request.decision or change_request.slot
        assert target is not None
        return bool(getattr(target, change_request.field) == change_request.before)
    if change_request.field in (
        RiskChangeRequest.Field.APPROVALS_REQUIRED,
        RiskChangeRequest.Field.APPROVERS,
    ):  # M-of-N approval: the decision's own setting, not a risk
        decision = change_request.decision
        assert decision is not None
        if change_request.field == RiskChangeRequest.Field.APPROVALS_REQUIRED:
            return bool(decision.approvals_required == change_request.before)
        group = decision.approvers.name if decision.approvers is not None else None
        return bool(group == (change_request.before or None))  # no group is ""
    change = request_change(change_request)
    current = classes.current(change)
    before = change_request.before
    if isinstance(current, RiskClass):
        return bool(current.value == before)
    if change.field == "scope_order":
        assert current is None or isinstance(current, tuple)
        return (list(current) if current else None) == (before or None)
    return bool(current == before)
