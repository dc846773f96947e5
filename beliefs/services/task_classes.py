"""Registering task classes, their slots and decisions: a runtime never lowers a guard."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Count, Max

from beliefs.errors import PermissionDenied, field_error
from beliefs.models import (
    Decision,
    Slot,
    TaskClass,
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
    actor: Actor,
) -> TaskClass:
    """Register or update a task class from a runtime's description (validated by the API).

    A runtime can add slots and decisions and link slots to decisions, never lower a guard: risk
    classes are refused, and existing decision links are kept even when a later registration
    leaves them out (dropping one could let an irreversible decision leak).
    """
    task_class, created = TaskClass.objects.get_or_create(
        key=key, defaults={"name": name or key, "owner": actor.runtime}
    )
    # Concurrent registrations of one class queue here, so the second sees the first's slots.
    # No key update: instances being opened meanwhile only need the row to stay.
    task_class = TaskClass.objects.select_for_update(no_key=True).get(pk=task_class.pk)
    adopted = _claim(task_class, actor)
    if not created and name is not None:
        task_class.name = name or key
        task_class.save(update_fields=["name", "updated_at"])

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
        for field in spec.sent:
            value = getattr(spec, field)
            setattr(slot, field, (value or spec.key) if field == "label" else value)
        if slot.pk is not None:
            updated_slots[slot.pk] = slot
            updated_fields |= spec.sent
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
        "task_class.registered" if created else "task_class.updated",
        actor=actor,
        task_class=task_class,
        subject=task_class.key,
        data={
            "added_slots": added_slots,
            "added_decisions": added_decisions,
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


def slot_register_unknown(task_class: TaskClass, key: str, actor: Actor) -> Slot:
    """A belief for a slot nobody declared registers it, unclassified (so irreversible).
    Only the class's owner may add a slot this way: it changes the class, and within the
    class's slot limit like a registration."""
    known = task_class.slots.filter(key=key).exists()
    if not known:
        _claim(task_class, actor)
    # The count rides on the position's query: no statement more per belief.
    present = task_class.slots.aggregate(m=Max("position"), n=Count("pk"))
    if not known and present["n"] >= limits.SLOTS.value:
        raise limits.SLOTS.exceeded("slot", present["n"] + 1)
    position = (present["m"] or 0) + 1
    slot, created = Slot.objects.get_or_create(
        task_class=task_class,
        key=key,
        defaults={"label": key, "value_type": Slot.ValueType.JSON, "position": position},
    )
    if created:
        audit(
            "slot.registered_unclassified",
            actor=actor,
            task_class=task_class,
            subject=key,
            data={"reason": "belief recorded for an undeclared slot"},
        )
    return slot
