"""Registering task classes, their slots and decisions: a runtime never lowers a guard."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Count, Max
from django.utils import timezone

from beliefs.domain.vocabulary import AuditKind
from beliefs.errors import InvalidInput, NotFound, PermissionDenied, field_error
from beliefs.models import (
    Decision,
    Runtime,
    Slot,
    TaskClass,
    TaskClassShare,
)
from beliefs.services import limits
from beliefs.services.audit import Actor, audit
from beliefs.services.retry import retry_on_race


@dataclass(frozen=True)
class SlotSpec:
    """A slot as a runtime describes it. `sent` names the fields the runtime actually stated:
    an update changes only those, so leaving a field out of a later registration never erases
    it."""

    key: str
    label: str = ""
    value_type: str = Slot.ValueType.STRING
    choices: list[Any] | None = None
    scope_order: list[str] | None = None
    suggested_risk: str = ""
    # A date slot that takes only dates from today on; a runtime may turn it on, never off.
    future: bool = False
    sent: frozenset[str] = frozenset()

    @classmethod
    def stated(cls, key: str, **fields: Any) -> SlotSpec:
        """A spec that states exactly the fields given (as a registration body would)."""
        return cls(key=key, **fields, sent=frozenset(fields))


@dataclass(frozen=True)
class DecisionSpec:
    key: str
    label: str = ""
    slots: tuple[str, ...] = ()


@retry_on_race
@transaction.atomic
def task_class_register(
    *,
    key: str,
    name: str | None = None,
    slots: Sequence[SlotSpec] = (),
    decisions: Sequence[DecisionSpec] = (),
    open_slots: bool | None = None,
    subject_key: str | None = None,
    actor: Actor,
) -> TaskClass:
    """Register or update a task class from a runtime's description (validated by the API).

    A runtime can add slots and decisions and link slots to decisions, never lower a guard: risk
    classes are refused, and existing decision links are kept even when a later registration
    leaves them out (dropping one could let an irreversible decision leak). `subject_key`
    (None: left as it is) names the world key of the thing a run acts on, for people only.
    """
    task_class, created = TaskClass.objects.get_or_create(
        key=key,
        defaults={
            "name": name or key,
            "owner": actor.runtime,
            "open_slots": bool(open_slots),
            "subject_key": subject_key or "",
        },
    )
    # Concurrent registrations of one class queue here, so the second sees the first's slots.
    # No key update: instances being opened meanwhile only need the row to stay.
    task_class = TaskClass.objects.select_for_update(no_key=True).get(pk=task_class.pk)
    adopted = _claim(task_class, actor)
    if not created and name is not None:
        task_class.name = name or key
        task_class.save(update_fields=["name", "updated_at"])
    open_slots_changed = (
        not created and open_slots is not None and open_slots != task_class.open_slots
    )
    if open_slots_changed:
        task_class.open_slots = bool(open_slots)
        task_class.save(update_fields=["open_slots", "updated_at"])
    subject_changed = (
        not created and subject_key is not None and subject_key != task_class.subject_key
    )
    if subject_changed:
        task_class.subject_key = subject_key or ""
        task_class.save(update_fields=["subject_key", "updated_at"])

    # Each kind of write is one statement whatever the number of slots and decisions.
    existing = {s.key: s for s in task_class.slots.all()}
    next_position = max((s.position for s in existing.values()), default=-1) + 1
    new_slots: list[Slot] = []
    updated_slots: dict[int, Slot] = {}
    updated_fields: set[str] = set()
    for index, spec in enumerate(slots):
        slot = existing.get(spec.key)
        if slot is None:
            slot = Slot(
                task_class=task_class,
                position=next_position,
                key=spec.key,
                label=spec.label or spec.key,
                value_type=spec.value_type,
                choices=spec.choices,
                scope_order=spec.scope_order,
                suggested_risk=spec.suggested_risk,
                future=spec.future,
            )
            next_position += 1
            existing[slot.key] = slot
            new_slots.append(slot)
            continue
        if "scope_order" in spec.sent and slot.scope_order and spec.scope_order != slot.scope_order:
            # The order decides what counts as an escalation: once set, only a classifier
            # may change it.
            raise field_error(
                f"slots[{index}].scope_order",
                "this slot already has a scope order; only a classifier can change it",
            )
        stated = set(spec.sent)
        if "future" in stated and not spec.future:
            stated.discard("future")  # the agent never lowers its own guard: a classifier may
        for field in stated:
            value = getattr(spec, field)
            setattr(slot, field, (value or spec.key) if field == "label" else value)
        if not slot.declared:  # a slot grown from an action's arguments, now declared
            slot.declared = True
            stated.add("declared")
        if slot.pk is not None:
            updated_slots[slot.pk] = slot
            updated_fields |= stated
    # Before any write: the body's own lists were bounded by the API; this bounds the class.
    limits.SLOTS.check("slots", len(existing))
    Slot.objects.bulk_create(new_slots)  # sets each slot's pk (RETURNING on both databases)
    if updated_fields:
        Slot.objects.bulk_update(list(updated_slots.values()), sorted(updated_fields))
    added_slots = [slot.key for slot in new_slots]

    known = {d.key: d for d in task_class.decisions.all()}
    new_decisions: list[Decision] = []
    relabelled: dict[int, Decision] = {}
    links: list[tuple[Decision, Slot]] = []
    for index, decision_spec in enumerate(decisions):
        missing = [s for s in decision_spec.slots if s not in existing]
        if missing:
            raise field_error(f"decisions[{index}].slots", f"unknown slot {missing[0]!r}")
        label = decision_spec.label or decision_spec.key
        decision = known.get(decision_spec.key)
        if decision is None:
            decision = Decision(task_class=task_class, key=decision_spec.key, label=label)
            known[decision.key] = decision
            new_decisions.append(decision)
        elif decision.label != label:
            decision.label = label
            if decision.pk is not None:
                relabelled[decision.pk] = decision
        links.extend((decision, existing[s]) for s in decision_spec.slots)
    limits.DECISIONS.check("decisions", len(known))
    Decision.objects.bulk_create(new_decisions)
    Decision.objects.bulk_update(list(relabelled.values()), ["label"])
    # A link already there is kept as it is (a registration never drops one).
    Link = Decision.slots.through
    Link.objects.bulk_create(
        [Link(decision_id=decision.pk, slot_id=slot.pk) for decision, slot in links],
        ignore_conflicts=True,
    )
    added_decisions = [decision.key for decision in new_decisions]

    audit(
        AuditKind.TASK_CLASS_REGISTERED if created else AuditKind.TASK_CLASS_UPDATED,
        actor=actor,
        task_class=task_class,
        subject=task_class.key,
        data={
            "added_slots": added_slots,
            "added_decisions": added_decisions,
            **({"open_slots": task_class.open_slots} if created or open_slots_changed else {}),
            **(
                {"subject_key": task_class.subject_key}
                if subject_changed or (created and task_class.subject_key)
                else {}
            ),
            **({"adopted_by": actor.runtime.name} if adopted and actor.runtime else {}),
        },
    )
    return task_class


def _claim(task_class: TaskClass, actor: Actor) -> bool:
    """Refuse a runtime changing another runtime's class (its text is what people read on the
    owner's prompts); a class nobody owns yet is adopted by the first runtime that changes it.
    Returns True when this call adopted it."""
    runtime = actor.runtime
    if runtime is None:
        return False
    if task_class.owner_id is None:
        task_class.owner = runtime
        task_class.save(update_fields=["owner", "updated_at"])
        return True
    if task_class.owner_id != runtime.pk:
        raise PermissionDenied(
            f"Task class {task_class.key!r} belongs to another runtime: you may open instances "
            "of it, not change it.",
            code="not_owner",
        )
    return False


def _grow(task_class: TaskClass, key: str, actor: Actor) -> Slot:
    """An open-slots class grows a slot from one call's arguments: registered unclassified
    (so irreversible), not declared, so it is in play only for the actions that name it. Within
    the class's slot limit, like a registration."""
    # The count rides on the position's query: no statement more per slot.
    present = task_class.slots.aggregate(m=Max("position"), n=Count("pk"))
    if present["n"] >= limits.SLOTS.value:
        raise limits.SLOTS.exceeded("slot", present["n"] + 1)
    position = (present["m"] or 0) + 1
    slot, created = Slot.objects.get_or_create(
        task_class=task_class,
        key=key,
        defaults={
            "label": key,
            "value_type": Slot.ValueType.JSON,
            "position": position,
            "declared": False,
        },
    )
    if created:
        audit(
            AuditKind.SLOT_REGISTERED_UNCLASSIFIED,
            actor=actor,
            task_class=task_class,
            subject=key,
            data={"reason": "named by an action of a class with open slots"},
        )
    return slot


def action_slots(
    task_class: TaskClass, keys: Sequence[str], actor: Actor, *, field: str = "slots"
) -> dict[str, Slot]:
    """The class's slots of these keys, for an action that names them. A key the class does
    not have is refused (`unknown_slot`), and nothing is stored, unless the class has open
    slots: then it is registered for the action. A retired slot is refused (`slot_retired`)."""
    found = {s.key: s for s in task_class.slots.filter(key__in=set(keys))}
    unknown = [k for k in dict.fromkeys(keys) if k not in found]
    if unknown and not task_class.open_slots:
        raise InvalidInput(
            f"{field}: the task class {task_class.key!r} has no slot "
            + ", ".join(repr(k) for k in unknown)
            + ": register it first (PUT /api/v1/task-classes/{key}/), or register the class "
            "with open_slots if every call names its own",
            code="unknown_slot",
            fields={field: [f"unknown slot {k!r}" for k in unknown]},
        )
    retired = [k for k in keys if k in found and found[k].retired_at is not None]
    if retired:
        raise InvalidInput(
            f"{field}: the slot {retired[0]!r} is retired and no longer used",
            code="slot_retired",
            fields={field: [f"retired slot {k!r}" for k in retired]},
        )
    for key in unknown:
        found[key] = _grow(task_class, key, actor)
    return found


@transaction.atomic
def slot_retire(*, slot: Slot, actor: Actor) -> Slot:
    """A retired slot is no longer planned (its history stays): by the class's owner or a
    classifier. Idempotent."""
    task_class = slot.task_class
    if actor.user is None:
        _claim(task_class, actor)
    if slot.retired_at is None:
        slot.retired_at = timezone.now()
        slot.save(update_fields=["retired_at"])
        audit(AuditKind.SLOT_RETIRED, actor=actor, task_class=task_class, subject=slot.key, data={})
    return slot


# --- sharing a class with other runtimes ---------------------------------------------------------


def require_may_open(task_class: TaskClass, actor: Actor) -> None:
    """A runtime opens instances of its own classes, of classes nobody owns yet, and of the
    classes another runtime shared with it; 403 for any other."""
    runtime = actor.runtime
    if runtime is None or task_class.owner_id is None or task_class.owner_id == runtime.pk:
        return
    if not TaskClassShare.objects.filter(task_class=task_class, runtime=runtime).exists():
        raise PermissionDenied(
            f"Task class {task_class.key!r} belongs to another runtime, which has not shared it "
            "with yours: its owner can share it "
            f"(PUT /api/v1/task-classes/{task_class.key}/shares/{runtime.name}/).",
            code="not_shared",
        )


def _require_owner(task_class: TaskClass, actor: Actor) -> None:
    """Only the class's owner (or staff, in the admin) decides whom it is shared with."""
    if actor.user is not None and actor.user.is_staff:
        return
    runtime = actor.runtime
    if runtime is None or task_class.owner_id != runtime.pk:
        raise PermissionDenied(
            f"Task class {task_class.key!r} belongs to another runtime: only its owner can "
            "share it.",
            code="not_owner",
        )


def _share_target(task_class: TaskClass, runtime_name: str) -> Runtime:
    runtime = Runtime.objects.filter(name=runtime_name).first()
    if runtime is None:
        raise NotFound(f"No runtime {runtime_name!r}.", code="unknown_runtime")
    if runtime.pk == task_class.owner_id:
        raise InvalidInput(
            "A task class is always its owner's: share it with another runtime.",
            code="share_with_owner",
        )
    return runtime


def _share_audit(kind: AuditKind, share: TaskClassShare, actor: Actor, **data: Any) -> None:
    audit(
        kind,
        actor=actor,
        task_class=share.task_class,
        subject=share.runtime.name,
        data={"runtime": share.runtime.name, **data},
    )


@transaction.atomic
def task_class_share(
    *, task_class: TaskClass, runtime_name: str, history: bool, actor: Actor
) -> TaskClassShare:
    """Let `runtime_name` open instances of the class. With `history`, that runtime joins the
    class's history pool: it and the owner (and every other runtime in the pool) carry each
    other's values for the class's people. Idempotent; audited when it changes anything."""
    _require_owner(task_class, actor)
    runtime = _share_target(task_class, runtime_name)
    share, created = TaskClassShare.objects.select_for_update().get_or_create(
        task_class=task_class, runtime=runtime, defaults={"history": history}
    )
    if created:
        _share_audit(AuditKind.TASK_CLASS_SHARED, share, actor, history=history)
    elif share.history != history:
        before = share.history
        share.history = history
        share.save(update_fields=["history", "updated_at"])
        _share_audit(
            AuditKind.TASK_CLASS_SHARE_CHANGED, share, actor, history=history, before=before
        )
    return share


@transaction.atomic
def task_class_unshare(*, task_class: TaskClass, runtime_name: str, actor: Actor) -> None:
    """The runtime can no longer open instances of the class (the ones it has stay its own),
    and leaves the history pool. 404 when the class is not shared with it."""
    _require_owner(task_class, actor)
    runtime = _share_target(task_class, runtime_name)
    share = TaskClassShare.objects.filter(task_class=task_class, runtime=runtime).first()
    if share is None:
        raise NotFound(
            f"Task class {task_class.key!r} is not shared with {runtime_name!r}.",
            code="not_shared",
        )
    _share_audit(AuditKind.TASK_CLASS_UNSHARED, share, actor, history=share.history)
    share.delete()
