"""Registering task classes, their slots and decisions: a runtime never lowers a guard."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import Max

from beliefs.domain.canonical import canonical_json
from beliefs.domain.policy import RiskClass
from beliefs.errors import PermissionDenied, field_error
from beliefs.models import (
    Decision,
    Slot,
    TaskClass,
)
from beliefs.services.audit import Actor, audit
from beliefs.services.inputs import optional_text, require_key

RISK_FIELDS = ("risk_class", "risk", "effective_risk")
SLOT_FIELDS = {"key", "label", "value_type", "choices", "scope_order", "suggested_risk"}
DECISION_FIELDS = {"key", "label", "slots"}


def _slot_spec(index: int, spec: Any) -> dict[str, Any]:
    where = f"slots[{index}]"
    if not isinstance(spec, dict):
        raise field_error(where, "must be an object")
    for risk_field in RISK_FIELDS:
        if risk_field in spec:
            raise field_error(
                f"{where}.{risk_field}",
                "risk classes are set by classifiers, not runtimes; send suggested_risk instead",
            )
    unknown = sorted(set(spec) - SLOT_FIELDS)
    if unknown:
        raise field_error(f"{where}.{unknown[0]}", "unknown field")
    key = require_key(f"{where}.key", spec.get("key"))
    label = optional_text(f"{where}.label", spec.get("label"), limit=200) or key
    value_type = spec.get("value_type", Slot.ValueType.STRING)
    if value_type not in Slot.ValueType.values:
        raise field_error(
            f"{where}.value_type", f"must be one of {', '.join(Slot.ValueType.values)}"
        )
    choices = spec.get("choices")
    if choices is not None and (
        not isinstance(choices, list)
        or not choices
        or len(set(map(canonical_json, choices))) != len(choices)
    ):
        raise field_error(f"{where}.choices", "must be a non-empty list of distinct values")
    scope_order = spec.get("scope_order")
    if scope_order is not None and (
        not isinstance(scope_order, list)
        or len(scope_order) < 2
        or not all(isinstance(s, str) and s for s in scope_order)
        or len(set(scope_order)) != len(scope_order)
    ):
        raise field_error(
            f"{where}.scope_order", "must be a list of at least two distinct strings, lowest first"
        )
    suggested = spec.get("suggested_risk")
    if suggested is not None and suggested not in RiskClass.__members__.values():
        raise field_error(
            f"{where}.suggested_risk", f"must be one of {', '.join(r.value for r in RiskClass)}"
        )
    values = {
        "key": key,
        "label": label,
        "value_type": value_type,
        "choices": choices,
        "scope_order": scope_order,
        "suggested_risk": suggested or "",
    }
    # What the runtime actually sent: an update changes only these, so leaving a field out of a
    # later registration never erases it.
    values["_sent"] = frozenset(spec) - {"key"}
    return values


def _decision_spec(index: int, spec: Any) -> dict[str, Any]:
    where = f"decisions[{index}]"
    if not isinstance(spec, dict):
        raise field_error(where, "must be an object")
    for risk_field in RISK_FIELDS:
        if risk_field in spec:
            raise field_error(
                f"{where}.{risk_field}", "risk classes are set by classifiers, not runtimes"
            )
    unknown = sorted(set(spec) - DECISION_FIELDS)
    if unknown:
        raise field_error(f"{where}.{unknown[0]}", "unknown field")
    key = require_key(f"{where}.key", spec.get("key"))
    slots = spec.get("slots", [])
    if not isinstance(slots, list) or not all(isinstance(s, str) for s in slots):
        raise field_error(f"{where}.slots", "must be a list of slot keys")
    return {
        "key": key,
        "label": optional_text(f"{where}.label", spec.get("label"), limit=200) or key,
        "slots": slots,
    }


@transaction.atomic
def task_class_register(
    *,
    key: Any,
    name: Any = None,
    slots: Any = (),
    decisions: Any = (),
    actor: Actor,
) -> TaskClass:
    """Register or update a task class from a runtime's description.

    A runtime can add slots and decisions and link slots to decisions, never lower a guard: risk
    classes are refused, and existing decision links are kept even when a later registration
    leaves them out (dropping one could let an irreversible decision leak).
    """
    key = require_key("key", key)
    if not isinstance(slots, list | tuple):
        raise field_error("slots", "must be a list")
    if not isinstance(decisions, list | tuple):
        raise field_error("decisions", "must be a list")
    slot_specs = [_slot_spec(i, s) for i, s in enumerate(slots)]
    decision_specs = [_decision_spec(i, d) for i, d in enumerate(decisions)]
    for label, specs in (("slots", slot_specs), ("decisions", decision_specs)):
        keys = [s["key"] for s in specs]
        dupes = sorted({k for k in keys if keys.count(k) > 1})
        if dupes:
            raise field_error(label, f"duplicate key {dupes[0]!r}")

    task_class, created = TaskClass.objects.get_or_create(
        key=key,
        defaults={"name": optional_text("name", name, limit=200) or key, "owner": actor.runtime},
    )
    # Concurrent registrations of one class queue here, so the second sees the first's slots.
    task_class = TaskClass.objects.select_for_update().get(pk=task_class.pk)
    adopted = _claim(task_class, actor)
    if not created and name is not None:
        task_class.name = optional_text("name", name, limit=200) or key
        task_class.save(update_fields=["name", "updated_at"])

    existing = {s.key: s for s in task_class.slots.all()}
    next_position = max((s.position for s in existing.values()), default=-1) + 1
    added_slots = []
    for index, spec in enumerate(slot_specs):
        sent = spec.pop("_sent")
        slot = existing.get(spec["key"])
        if slot is None:
            slot = Slot.objects.create(task_class=task_class, position=next_position, **spec)
            next_position += 1
            existing[slot.key] = slot
            added_slots.append(slot.key)
            continue
        if "scope_order" in sent and slot.scope_order and spec["scope_order"] != slot.scope_order:
            # The order decides what counts as an escalation: once set, only a classifier
            # may change it.
            raise field_error(
                f"slots[{index}].scope_order",
                "this slot already has a scope order; only a classifier can change it",
            )
        for field in sent:
            setattr(slot, field, spec[field])
        slot.save()

    added_decisions = []
    for index, spec in enumerate(decision_specs):
        missing = [s for s in spec["slots"] if s not in existing]
        if missing:
            raise field_error(f"decisions[{index}].slots", f"unknown slot {missing[0]!r}")
        decision, made = Decision.objects.get_or_create(
            task_class=task_class, key=spec["key"], defaults={"label": spec["label"]}
        )
        if not made and decision.label != spec["label"]:
            decision.label = spec["label"]
            decision.save(update_fields=["label"])
        if made:
            added_decisions.append(decision.key)
        decision.slots.add(*(existing[s] for s in spec["slots"]))

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
    Only the class's owner may add a slot this way: it changes the class."""
    if not task_class.slots.filter(key=key).exists():
        _claim(task_class, actor)
    position = (task_class.slots.aggregate(m=Max("position"))["m"] or 0) + 1
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
