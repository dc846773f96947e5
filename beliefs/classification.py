"""Classifying slots and decisions (DESIGN §3, §5; issue 4).

Only classifiers change a risk class, a monotonic flag, a scope order or which slots feed a
decision. Every change carries a non-empty reason and writes its audit event, with who, before,
after and reason, in the same transaction.

Four eyes. A change *lowers a guard* and needs a second classifier when:

1. it clears `monotonic` on a slot; or
2. it sets a slot's or a decision's own class from `irreversible` or `unclassified` (which counts
   as irreversible) to `cosmetic`, `reversible` or `policy`; or
3. after it, some slot whose effective risk is `irreversible` now would have a lower one (a
   decision lowered, or a slot unlinked from an irreversible decision).

Such a change does not take effect: it becomes a pending `RiskChangeRequest` that another
classifier approves or refuses. Its requester may withdraw it (a refusal) but never approve it.
Unlinking slots from a decision cannot be a request (a request holds one risk class or one
flag), so an unlink that trips rule 3 is refused with the way round it.

Everything else takes effect at once. A change that tightens routing for some slot (a higher
effective risk, or monotonic set) re-plans the open instances of the task class, so affected
prompts become blocking now. No other change re-plans anything: a downgrade, immediate or
approved, binds nothing retroactively; prompts already planned stay as they are, and only plans
made afterwards use the new class.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from beliefs import policy, services
from beliefs.errors import Conflict, InvalidInput, PermissionDenied, field_error
from beliefs.models import (
    Belief,
    BeliefStatus,
    Decision,
    InstanceStatus,
    RiskChangeRequest,
    Slot,
    TaskClass,
    TaskInstance,
)
from beliefs.policy import RiskClass, Route, Source
from beliefs.roles import is_classifier
from beliefs.services import Actor, audit

MAX_REASON_LENGTH = 2000
IRREVERSIBLE_LEVEL = policy.risk_level(RiskClass.IRREVERSIBLE)
# The classes a classifier may choose. Going back to `unclassified` is not a classification.
CHOOSABLE_RISKS: tuple[RiskClass, ...] = policy.RISK_ORDER
OPEN_STATUSES = (InstanceStatus.OPEN, InstanceStatus.AWAITING_USER)

Target = Literal["slot", "decision"]
ChangeField = Literal["risk_class", "monotonic", "slots"]


# --- the pure part: a task class's classification as plain data ------------------------------


@dataclass(frozen=True)
class SlotClass:
    key: str
    risk: RiskClass
    monotonic: bool


@dataclass(frozen=True)
class DecisionClass:
    key: str
    risk: RiskClass
    slots: frozenset[str]


@dataclass(frozen=True)
class Change:
    """One edit of one field of one slot or decision."""

    target: Target
    key: str
    field: ChangeField
    value: RiskClass | bool | frozenset[str]


@dataclass(frozen=True)
class Classes:
    """Every class of one task class that effective risk depends on, in page order."""

    slots: tuple[SlotClass, ...]
    decisions: tuple[DecisionClass, ...]  # in id order, as `slot_effective_risk` names them

    def slot(self, key: str) -> SlotClass:
        return next(s for s in self.slots if s.key == key)

    def decision(self, key: str) -> DecisionClass:
        return next(d for d in self.decisions if d.key == key)

    def decisions_fed_by(self, slot_key: str) -> list[DecisionClass]:
        return [d for d in self.decisions if slot_key in d.slots]

    def effective(self) -> dict[str, policy.EffectiveRisk]:
        """slot key -> effective risk with its reason (DESIGN §3)."""
        return {
            s.key: policy.effective_risk(
                s.risk,
                [(d.key, d.risk) for d in self.decisions_fed_by(s.key)],
                monotonic=s.monotonic,
            )
            for s in self.slots
        }

    def current(self, change: Change) -> RiskClass | bool | frozenset[str]:
        if change.target == "slot":
            slot = self.slot(change.key)
            return slot.risk if change.field == "risk_class" else slot.monotonic
        decision = self.decision(change.key)
        return decision.risk if change.field == "risk_class" else decision.slots

    def apply(self, change: Change) -> Classes:
        if change.target == "slot":
            attr = "risk" if change.field == "risk_class" else "monotonic"
            slots = tuple(
                replace(s, **{attr: change.value}) if s.key == change.key else s for s in self.slots
            )
            return Classes(slots, self.decisions)
        attr = "risk" if change.field == "risk_class" else "slots"
        decisions = tuple(
            replace(d, **{attr: change.value}) if d.key == change.key else d for d in self.decisions
        )
        return Classes(self.slots, decisions)


def approval_reason(before: Classes, change: Change) -> str | None:
    """Why `change` needs a second classifier (rules 1-3 of the module docstring), or None."""
    old = before.current(change)
    if change.field == "monotonic" and old is True and change.value is False:
        return f"it clears monotonic on {change.key}"
    if (
        change.field == "risk_class"
        and isinstance(old, RiskClass)
        and isinstance(change.value, RiskClass)
        and policy.risk_level(old) == IRREVERSIBLE_LEVEL
        and policy.risk_level(change.value) < IRREVERSIBLE_LEVEL
    ):
        return f"it lowers {change.target} {change.key} from {old.value} to {change.value.value}"
    dropped = effective_drops_out_of_irreversible(before, before.apply(change))
    if dropped:
        return f"it lowers the effective risk of {', '.join(dropped)} out of irreversible"
    return None


def effective_drops_out_of_irreversible(before: Classes, after: Classes) -> list[str]:
    was, will = before.effective(), after.effective()
    return [
        key
        for key, eff in was.items()
        if eff.risk is RiskClass.IRREVERSIBLE and will[key].risk is not RiskClass.IRREVERSIBLE
    ]


def tightens(before: Classes, after: Classes) -> bool:
    """Does some slot route under stricter inputs (higher effective risk, or monotonic set)?"""
    was, will = before.effective(), after.effective()
    for slot in after.slots:
        if policy.risk_level(will[slot.key].risk) > policy.risk_level(was[slot.key].risk):
            return True
        if slot.monotonic and not before.slot(slot.key).monotonic:
            return True
    return False


@dataclass(frozen=True)
class EffectiveChange:
    slot: str
    before: str
    after: str


def effective_changes(before: Classes, after: Classes) -> list[EffectiveChange]:
    was, will = before.effective(), after.effective()
    return [
        EffectiveChange(key, was[key].risk.value, will[key].risk.value)
        for key in was
        if was[key].risk is not will[key].risk
    ]


# --- impact preview -------------------------------------------------------------------------


@dataclass(frozen=True)
class SlotRun:
    """What routing needs of one slot of one open instance, read once."""

    instance_id: Any
    slot_key: str
    facts: policy.BeliefFacts | None


@dataclass(frozen=True)
class Snapshot:
    classes: Classes
    open_instances: int
    planned_instances: int  # awaiting_user: the ones an upgrade re-plans now
    runs: tuple[SlotRun, ...]


@dataclass(frozen=True)
class Impact:
    """What changes would do to the open instances of their task class, computed without
    writing: every open instance's slots routed under the classes before and after (after
    every change took effect, the approved ones included)."""

    open_instances: int
    instances_altered: int
    prompts_altered: int
    become_blocking: int
    stop_blocking: int  # would stop blocking under the new classes, but are held as they are
    transitions: tuple[tuple[str, str, int], ...]  # (route before, route after, how many)
    effective: tuple[EffectiveChange, ...]
    needs_approval: tuple[str, ...]  # why some change waits for a second classifier
    replans: bool  # a change that takes effect at once tightens routing: open instances re-plan

    @property
    def unchanged(self) -> bool:
        return not self.effective and not self.prompts_altered and not self.needs_approval

    @property
    def lines(self) -> list[str]:
        """The impact in plain words, for the page."""
        lines = [
            f"{c.slot}: effective risk {c.before} \N{RIGHTWARDS ARROW} {c.after}"
            for c in self.effective
        ]
        if self.stop_blocking:
            verb = "stays" if self.stop_blocking == 1 else "stay"
            lines.append(
                f"{plural(self.stop_blocking, 'blocking prompt')} {verb} blocking: a downgrade "
                "releases nothing already asked of a person"
            )
        if not self.prompts_altered:
            lines.append(
                f"No other prompt of the {plural(self.open_instances, 'open instance')} "
                "would change."
                if self.stop_blocking
                else f"No prompt of the {plural(self.open_instances, 'open instance')} "
                "would change."
            )
            return lines
        lines.append(
            f"{plural(self.prompts_altered, 'prompt')} in "
            f"{plural(self.instances_altered, 'open instance')} would change"
            f" (of {self.open_instances} open):"
        )
        if self.become_blocking:
            verb = "becomes" if self.become_blocking == 1 else "become"
            lines.append(f"{plural(self.become_blocking, 'prompt')} {verb} blocking")
        for old, new, count in self.transitions:
            verb = "becomes" if count == 1 else "become"
            lines.append(f"{count} {old} {verb} {new}")
        return lines

    @property
    def when(self) -> str:
        if self.needs_approval:
            return (
                f"Needs a second classifier's approval: {'; '.join(self.needs_approval)}. "
                "Once approved it binds nothing retroactively: prompts already planned stay as "
                "they are; later plans use the new class."
            )
        if self.replans:
            return "Takes effect at once: open instances are re-planned now."
        if self.stop_blocking or any(
            policy.risk_level(RiskClass(c.after)) < policy.risk_level(RiskClass(c.before))
            for c in self.effective
        ):
            return (
                "Takes effect at once and binds nothing retroactively: prompts already planned "
                "stay as they are; later plans use the new class."
            )
        return "Takes effect at once."


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def impact_of(snapshot: Snapshot, changes: Iterable[Change]) -> Impact:
    """Pure: re-route every slot of every open instance with the hypothetical classes.

    Changes are taken in order, as the services would take them: each one that needs a second
    classifier waits (it does not count for what takes effect now), the others apply.
    """
    before = now = final = snapshot.classes
    approvals: list[str] = []
    replans = False
    for change in changes:
        if now.current(change) == change.value:
            continue
        why = approval_reason(now, change)
        if why is None:
            replans = replans or tightens(now, now.apply(change))
            now = now.apply(change)
        else:
            approvals.append(why)
        final = final.apply(change)
    was, will = before.effective(), final.effective()
    monotonic_before = {s.key: s.monotonic for s in before.slots}
    monotonic_after = {s.key: s.monotonic for s in final.slots}
    transitions: Counter[tuple[str, str]] = Counter()
    instances: set[Any] = set()
    become = stop = 0
    for run in snapshot.runs:
        old = policy.route(
            was[run.slot_key].risk, monotonic=monotonic_before[run.slot_key], belief=run.facts
        )
        new = policy.route(
            will[run.slot_key].risk, monotonic=monotonic_after[run.slot_key], belief=run.facts
        )
        if old.route is new.route:
            continue
        if old.blocking and not new.blocking:
            # Planning holds a blocking prompt whose belief has not changed (services._plan):
            # a downgrade never releases what was already asked of a person.
            stop += 1
            continue
        transitions[(old.route.value, new.route.value)] += 1
        instances.add(run.instance_id)
        if new.blocking and not old.blocking:
            become += 1
    return Impact(
        open_instances=snapshot.open_instances,
        instances_altered=len(instances),
        prompts_altered=sum(transitions.values()),
        become_blocking=become,
        stop_blocking=stop,
        transitions=tuple(
            (old, new, count) for (old, new), count in sorted(transitions.items(), key=_by_route)
        ),
        effective=tuple(effective_changes(before, final)),
        needs_approval=tuple(approvals),
        replans=replans,
    )


_ROUTE_RANK = {route.value: i for i, route in enumerate(Route)}


def _by_route(item: tuple[tuple[str, str], int]) -> tuple[int, int]:
    (old, new), _ = item
    return (_ROUTE_RANK[old], _ROUTE_RANK[new])


# --- reading classes and open instances -----------------------------------------------------


def classes_from(slots: Iterable[Slot], decisions: Iterable[Decision]) -> Classes:
    """Needs `decisions` with their `slots` prefetched (or it queries once per decision)."""
    slots = list(slots)
    key_of = {s.pk: s.key for s in slots}
    return Classes(
        slots=tuple(SlotClass(s.key, RiskClass(s.risk_class), s.monotonic) for s in slots),
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


def impact_snapshot(task_class: TaskClass, classes: Classes | None = None) -> Snapshot:
    """Read what an impact preview needs: two queries, plus three without `classes`.

    Beliefs are chosen as `services.choose_beliefs` chooses them (current first, else the newest
    carried from an earlier run of the same principal), for every open instance at once.
    """
    classes = classes if classes is not None else classes_of(task_class)
    instances = list(
        TaskInstance.objects.filter(task_class=task_class, status__in=OPEN_STATUSES).values_list(
            "pk", "principal_id", "run_number", "status"
        )
    )
    if not instances:
        return Snapshot(classes, 0, 0, ())
    rows = (
        Belief.objects.filter(
            slot__task_class=task_class,
            status=BeliefStatus.ACTIVE,
            principal_id__in={principal for _, principal, _, _ in instances},
        )
        .order_by("-acquired_at", "-id")
        .values_list(
            "slot__key", "principal_id", "instance_id", "instance__run_number", "source",
            "world_ref",
        )
    )  # fmt: skip
    by_principal_slot: dict[tuple[Any, str], list[tuple[Any, int, str, bool]]] = defaultdict(list)
    for slot_key, principal, instance_id, run_number, source, world_ref in rows:
        # As `services.slot_states` reads it: an empty reference anchors nothing (R5).
        by_principal_slot[(principal, slot_key)].append(
            (instance_id, run_number, source, bool(world_ref))
        )
    runs = []
    for instance_id, principal, run_number, _ in instances:
        for slot in classes.slots:
            candidates = by_principal_slot.get((principal, slot.key), [])
            current = next((c for c in candidates if c[0] == instance_id), None)
            carried = next(
                (c for c in candidates if c[0] != instance_id and c[1] <= run_number), None
            )
            chosen, is_carried = (current, False) if current is not None else (carried, True)
            facts = (
                None
                if chosen is None
                else policy.BeliefFacts(
                    source=Source(chosen[2]), carried=is_carried, has_world_ref=chosen[3]
                )
            )
            runs.append(SlotRun(instance_id, slot.key, facts))
    planned = sum(1 for *_, status in instances if status == InstanceStatus.AWAITING_USER)
    return Snapshot(classes, len(instances), planned, tuple(runs))


def pending_requests(task_class: TaskClass | None = None) -> list[RiskChangeRequest]:
    qs = RiskChangeRequest.objects.filter(state=RiskChangeRequest.State.PENDING).select_related(
        "task_class", "slot", "decision", "requested_by"
    )
    if task_class is not None:
        qs = qs.filter(task_class=task_class)
    return list(qs.order_by("created_at", "id"))


def request_change(change_request: RiskChangeRequest) -> Change:
    """The change a request asks for."""
    if change_request.slot_id is not None:
        target: Target = "slot"
        key = change_request.slot.key
    else:
        target = "decision"
        key = change_request.decision.key
    value: RiskClass | bool = (
        RiskClass(change_request.after)
        if change_request.field == RiskChangeRequest.Field.RISK_CLASS
        else bool(change_request.after)
    )
    return Change(target, key, change_request.field, value)


def request_is_current(change_request: RiskChangeRequest, classes: Classes) -> bool:
    """Is the target still as it was when the change was requested?"""
    change = request_change(change_request)
    current = classes.current(change)
    before = change_request.before
    if isinstance(current, RiskClass):
        return current.value == before
    return current == before


# --- the services ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ChangeResult:
    outcome: Literal["applied", "requested", "unchanged"]
    message: str
    request: RiskChangeRequest | None = None
    replanned: int = 0
    effective: tuple[EffectiveChange, ...] = field(default_factory=tuple)


def _require_classifier(actor: Actor) -> AbstractBaseUser:
    """Only a signed-in classifier classifies; a runtime key never can (DESIGN §3)."""
    if actor.user is None or not is_classifier(actor.user):
        raise PermissionDenied(
            "Only classifiers set risk classes; runtimes may only suggest one.",
            code="not_a_classifier",
        )
    return actor.user


def _reason(value: Any, name: str = "reason") -> str:
    if not isinstance(value, str) or not value.strip():
        raise field_error(name, "give a reason: it is kept in the audit log with the change")
    if len(value) > MAX_REASON_LENGTH:
        raise field_error(name, f"must be at most {MAX_REASON_LENGTH} characters")
    return value.strip()


def _risk(value: Any) -> RiskClass:
    if isinstance(value, RiskClass):
        value = value.value
    allowed = [r.value for r in CHOOSABLE_RISKS]
    if value not in allowed:
        raise field_error("risk_class", f"must be one of {', '.join(allowed)}")
    return RiskClass(value)


def _bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise field_error(name, "must be true or false")
    return value


def _lock_task_class(task_class: TaskClass) -> TaskClass:
    """Classification changes of one task class queue behind each other."""
    return TaskClass.objects.select_for_update().get(pk=task_class.pk)


def _json(value: RiskClass | bool | frozenset[str]) -> Any:
    if isinstance(value, RiskClass):
        return value.value
    if isinstance(value, frozenset):
        return sorted(value)
    return value


AUDIT_KINDS = {
    ("slot", "risk_class"): "classification.slot_risk",
    ("slot", "monotonic"): "classification.slot_monotonic",
    ("decision", "risk_class"): "classification.decision_risk",
    ("decision", "slots"): "classification.decision_slots",
}
SCOPE_ORDER_KIND = "classification.slot_scope_order"
REQUESTED_KIND = "classification.change_requested"
APPROVED_KIND = "classification.change_approved"
REFUSED_KIND = "classification.change_refused"


def _describe(change: Change) -> str:
    value = _json(change.value)
    if change.field == "slots":
        shown = ", ".join(value) or "no slots"
        return f"decision {change.key} is now fed by {shown}"
    if change.field == "monotonic":
        return f"slot {change.key} is {'now' if value else 'no longer'} monotonic"
    return f"{change.target} {change.key} is now {value}"


def _write(change: Change, target: Slot | Decision, task_class: TaskClass) -> None:
    if change.field == "slots":
        assert isinstance(target, Decision) and isinstance(change.value, frozenset)
        target.slots.set(task_class.slots.filter(key__in=change.value))
    elif change.field == "monotonic":
        assert isinstance(target, Slot)
        target.monotonic = bool(change.value)
        target.save(update_fields=["monotonic"])
    else:
        target.risk_class = _json(change.value)
        target.save(update_fields=["risk_class"])


def _apply(
    *,
    task_class: TaskClass,
    classes: Classes,
    change: Change,
    target: Slot | Decision,
    reason: str,
    actor: Actor,
    extra: dict[str, Any] | None = None,
) -> ChangeResult:
    """Write a change that may take effect now, audit it, re-plan if it tightens routing."""
    after = classes.apply(change)
    _write(change, target, task_class)
    replanned = 0
    if tightens(classes, after):
        replanned = services.instances_replan_for_task_class(task_class=task_class, actor=actor)
    changes = tuple(effective_changes(classes, after))
    audit(
        AUDIT_KINDS[(change.target, change.field)],
        actor=actor,
        task_class=task_class,
        subject=change.key,
        data={
            "target": change.target,
            "field": change.field,
            "before": _json(classes.current(change)),
            "after": _json(change.value),
            "reason": reason,
            "effective": [c.__dict__ for c in changes],
            "replanned": replanned,
            **(extra or {}),
        },
    )
    message = f"Saved: {_describe(change)}."
    if replanned:
        message += f" Re-planned {plural(replanned, 'open instance')}."
    return ChangeResult("applied", message, replanned=replanned, effective=changes)


def _change(
    *,
    task_class: TaskClass,
    change: Change,
    target: Slot | Decision,
    reason: str,
    actor: Actor,
) -> ChangeResult:
    classes = classes_of(task_class)
    if classes.current(change) == change.value:
        return ChangeResult("unchanged", f"Nothing to change: {_describe(change)} already.")
    why = approval_reason(classes, change)
    if why is None:
        return _apply(
            task_class=task_class,
            classes=classes,
            change=change,
            target=target,
            reason=reason,
            actor=actor,
        )
    if change.field == "slots":
        raise InvalidInput(
            f"Not saved: {why}, which needs a second classifier, and a change of linked slots "
            "cannot wait for one. Raise the slot's own class to irreversible first (that takes "
            "effect at once), unlink it, then request the lower class for the slot.",
            code="needs_second_classifier",
            fields={"slots": [f"{why}: raise the slot's own class first"]},
        )
    is_slot = isinstance(target, Slot)
    if RiskChangeRequest.objects.filter(
        state=RiskChangeRequest.State.PENDING,
        field=change.field,
        **({"slot": target} if is_slot else {"decision": target}),
    ).exists():
        raise Conflict(
            f"A change of {change.field.replace('_', ' ')} for {change.target} {change.key} is "
            "already waiting for approval; approve or refuse it first.",
            code="change_already_pending",
        )
    change_request = RiskChangeRequest.objects.create(
        task_class=task_class,
        slot=target if is_slot else None,
        decision=None if is_slot else target,
        field=change.field,
        before=_json(classes.current(change)),
        after=_json(change.value),
        reason=reason,
        requested_by=actor.user,
    )
    audit(
        REQUESTED_KIND,
        actor=actor,
        task_class=task_class,
        subject=change.key,
        data={
            "request": change_request.pk,
            "target": change.target,
            "field": change.field,
            "before": change_request.before,
            "after": change_request.after,
            "reason": reason,
            "why": why,
        },
    )
    return ChangeResult(
        "requested",
        f"Not applied yet: {why}, so a second classifier must approve it. "
        "The request is listed under pending approvals.",
        request=change_request,
    )


def _slot_in(slot: Slot) -> tuple[TaskClass, Slot]:
    task_class = _lock_task_class(slot.task_class)
    return task_class, Slot.objects.get(pk=slot.pk)


def _decision_in(decision: Decision) -> tuple[TaskClass, Decision]:
    task_class = _lock_task_class(decision.task_class)
    return task_class, Decision.objects.get(pk=decision.pk)


@transaction.atomic
def slot_set_risk(*, slot: Slot, risk_class: Any, reason: Any, actor: Actor) -> ChangeResult:
    """Set a slot's own risk class; out of irreversible/unclassified it waits for approval."""
    _require_classifier(actor)
    reason, risk = _reason(reason), _risk(risk_class)
    task_class, slot = _slot_in(slot)
    return _change(
        task_class=task_class,
        change=Change("slot", slot.key, "risk_class", risk),
        target=slot,
        reason=reason,
        actor=actor,
    )


@transaction.atomic
def slot_set_monotonic(*, slot: Slot, monotonic: Any, reason: Any, actor: Actor) -> ChangeResult:
    """Mark a slot monotonic (at once, re-plans) or clear it (waits for approval)."""
    _require_classifier(actor)
    reason, monotonic = _reason(reason), _bool("monotonic", monotonic)
    task_class, slot = _slot_in(slot)
    return _change(
        task_class=task_class,
        change=Change("slot", slot.key, "monotonic", monotonic),
        target=slot,
        reason=reason,
        actor=actor,
    )


def parse_scope_order(value: Any) -> list[str] | None:
    """ "read, write, admin" or ["read", "write", "admin"] -> a list, lowest first; "" -> None."""
    if value is None:
        return None
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",")]
        if value == [""]:
            return None
    if (
        not isinstance(value, list)
        or len(value) < 2
        or not all(isinstance(s, str) and s.strip() for s in value)
        or len({s.strip() for s in value}) != len(value)
        or any(len(s) > 200 for s in value)
    ):
        raise field_error(
            "scope_order",
            "write at least two distinct scopes separated by commas, lowest first "
            "(e.g. read, write, admin), or leave it empty",
        )
    return [s.strip() for s in value]


@transaction.atomic
def slot_set_scope_order(
    *, slot: Slot, scope_order: Any, reason: Any, actor: Actor
) -> ChangeResult:
    """Set the ranking of a monotonic slot's values (lowest first). No routing depends on it:
    it decides when an answer is an escalation that must be typed twice (DESIGN §5)."""
    _require_classifier(actor)
    reason, order = _reason(reason), parse_scope_order(scope_order)
    task_class, slot = _slot_in(slot)
    before = slot.scope_order
    if before == order:
        return ChangeResult("unchanged", f"Nothing to change: the scope order of {slot.key}.")
    slot.scope_order = order
    slot.save(update_fields=["scope_order"])
    audit(
        SCOPE_ORDER_KIND,
        actor=actor,
        task_class=task_class,
        subject=slot.key,
        data={
            "target": "slot",
            "field": "scope_order",
            "before": before,
            "after": order,
            "reason": reason,
        },
    )
    shown = ", ".join(order) if order else "none"
    return ChangeResult("applied", f"Saved: the scope order of {slot.key} is now {shown}.")


@transaction.atomic
def decision_set_risk(
    *, decision: Decision, risk_class: Any, reason: Any, actor: Actor
) -> ChangeResult:
    """Set a decision's risk class; the slots it feeds inherit it (T5)."""
    _require_classifier(actor)
    reason, risk = _reason(reason), _risk(risk_class)
    task_class, decision = _decision_in(decision)
    return _change(
        task_class=task_class,
        change=Change("decision", decision.key, "risk_class", risk),
        target=decision,
        reason=reason,
        actor=actor,
    )


@transaction.atomic
def decision_set_slots(
    *, decision: Decision, slot_keys: Any, reason: Any, actor: Actor
) -> ChangeResult:
    """Say which slots feed a decision. Linking tightens (at once, re-plans); an unlink that
    drops a slot out of irreversible is refused (see the module docstring)."""
    _require_classifier(actor)
    reason = _reason(reason)
    if not isinstance(slot_keys, list | tuple | set | frozenset) or not all(
        isinstance(k, str) for k in slot_keys
    ):
        raise field_error("slots", "must be a list of slot keys")
    task_class, decision = _decision_in(decision)
    known = set(task_class.slots.values_list("key", flat=True))
    unknown = sorted(set(slot_keys) - known)
    if unknown:
        raise field_error("slots", f"unknown slot {unknown[0]!r}")
    return _change(
        task_class=task_class,
        change=Change("decision", decision.key, "slots", frozenset(slot_keys)),
        target=decision,
        reason=reason,
        actor=actor,
    )


def _lock_request(change_request: RiskChangeRequest) -> tuple[TaskClass, RiskChangeRequest]:
    task_class = _lock_task_class(change_request.task_class)
    locked = (
        RiskChangeRequest.objects.select_for_update(of=("self",))
        .select_related("slot", "decision", "requested_by", "decided_by")
        .get(pk=change_request.pk)
    )
    if locked.state != RiskChangeRequest.State.PENDING:
        who = locked.decided_by.get_username() if locked.decided_by else "someone"
        raise Conflict(
            f"This request was already {locked.state} by {who}.",
            code=f"request_{locked.state}",
        )
    return task_class, locked


def _decide(
    change_request: RiskChangeRequest, state: str, user: AbstractBaseUser, reason: str
) -> None:
    change_request.state = state
    change_request.decided_by = user
    change_request.decision_reason = reason
    change_request.decided_at = timezone.now()
    change_request.save(update_fields=["state", "decided_by", "decision_reason", "decided_at"])


@transaction.atomic
def risk_change_request_approve(
    *, change_request: RiskChangeRequest, reason: Any, actor: Actor
) -> ChangeResult:
    """A second classifier lets a downgrade take effect. It re-plans nothing (DESIGN §5)."""
    user = _require_classifier(actor)
    reason = _reason(reason)
    task_class, change_request = _lock_request(change_request)
    if change_request.requested_by_id == user.pk:
        raise PermissionDenied(
            "You asked for this change, so you cannot approve it: another classifier must "
            "(four eyes). You may withdraw it instead.",
            code="own_request",
        )
    classes = classes_of(task_class)
    if not request_is_current(change_request, classes):
        raise Conflict(
            "The target changed since this was requested, so approving it would apply more "
            "than was asked for. Refuse it; its requester can ask again.",
            code="request_out_of_date",
        )
    change = request_change(change_request)
    target: Slot | Decision = (
        change_request.slot if change_request.slot_id is not None else change_request.decision
    )
    requester = change_request.requested_by.get_username()
    _decide(change_request, RiskChangeRequest.State.APPROVED, user, reason)
    audit(
        APPROVED_KIND,
        actor=actor,
        task_class=task_class,
        subject=change.key,
        data={
            "request": change_request.pk,
            "target": change.target,
            "field": change.field,
            "before": change_request.before,
            "after": change_request.after,
            "reason": reason,
            "requested_by": requester,
            "request_reason": change_request.reason,
        },
    )
    # A downgrade cannot tighten anything, so `_apply` re-plans nothing here.
    result = _apply(
        task_class=task_class,
        classes=classes,
        change=change,
        target=target,
        reason=change_request.reason,
        actor=actor,
        extra={
            "request": change_request.pk,
            "requested_by": requester,
            "approved_by": user.get_username(),
        },
    )
    return replace(
        result,
        message=f"Approved {requester}'s request: {_describe(change)}. "
        "Prompts already planned stay as they are.",
        request=change_request,
    )


@transaction.atomic
def risk_change_request_refuse(
    *, change_request: RiskChangeRequest, reason: Any, actor: Actor
) -> ChangeResult:
    """Refuse a pending request (its requester may refuse it too: a withdrawal)."""
    user = _require_classifier(actor)
    reason = _reason(reason)
    task_class, change_request = _lock_request(change_request)
    change = request_change(change_request)
    withdrawn = change_request.requested_by_id == user.pk
    _decide(change_request, RiskChangeRequest.State.REFUSED, user, reason)
    audit(
        REFUSED_KIND,
        actor=actor,
        task_class=task_class,
        subject=change.key,
        data={
            "request": change_request.pk,
            "target": change.target,
            "field": change.field,
            "before": change_request.before,
            "after": change_request.after,
            "reason": reason,
            "requested_by": change_request.requested_by.get_username(),
            "request_reason": change_request.reason,
            "withdrawn": withdrawn,
        },
    )
    verb = "Withdrew" if withdrawn else "Refused"
    return ChangeResult(
        "unchanged",
        f"{verb} the request; {change.target} {change.key} stays as it was.",
        request=change_request,
    )


def classification_impact(*, task_class: TaskClass, changes: Iterable[Change]) -> Impact:
    """The impact preview of changes: reads, never writes (five queries)."""
    return impact_of(impact_snapshot(task_class), changes)
