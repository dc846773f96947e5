"""Every write of the domain goes through here.

Each service is one transaction and writes its audit event inside it, so nothing is ever
half-written and nothing happens without a trace. Services that touch an instance lock its row
first (a no-op on SQLite, where IMMEDIATE transactions already serialise writers).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import Max, Q
from django.utils import timezone
from rest_framework_api_key.models import APIKey

from beliefs import policy
from beliefs.errors import Conflict, InvalidInput, NotFound, StaleVersion, field_error
from beliefs.models import (
    AuditEvent,
    Belief,
    BeliefStatus,
    Decision,
    InstanceStatus,
    Prompt,
    PromptResponse,
    PromptState,
    Slot,
    TaskClass,
    TaskInstance,
)
from beliefs.policy import RiskClass, Route, Source
from beliefs.worlddiff import world_diff

MAX_KEY_LENGTH = 200
MAX_TEXT_LENGTH = 2000


# --- actors and audit ----------------------------------------------------------------------


@dataclass(frozen=True)
class Actor:
    """Who is acting: a person, a runtime key, or the system (commands, expiry)."""

    user: AbstractBaseUser | None = None
    key: APIKey | None = None

    @property
    def label(self) -> str:
        if self.user is not None:
            return self.user.get_username()
        if self.key is not None:
            return f"runtime:{self.key.name}"
        return "system"


SYSTEM = Actor()


def audit(
    kind: str,
    *,
    actor: Actor,
    task_class: TaskClass | None = None,
    instance: TaskInstance | None = None,
    prompt: Prompt | None = None,
    subject: str = "",
    data: Mapping[str, Any] | None = None,
) -> AuditEvent:
    return AuditEvent.objects.create(
        kind=kind,
        actor=actor.label,
        actor_user=actor.user,
        actor_key_name=actor.key.name if actor.key is not None else "",
        task_class=task_class or (instance.task_class if instance is not None else None),
        instance_id=instance.pk if instance is not None else None,
        prompt_id=prompt.pk if prompt is not None else None,
        subject=subject,
        data=dict(data or {}),
    )


# --- validation helpers --------------------------------------------------------------------


def _require_key(field: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise field_error(field, "must be a non-empty string")
    if len(value) > MAX_KEY_LENGTH:
        raise field_error(field, f"must be at most {MAX_KEY_LENGTH} characters")
    return value.strip()


def _optional_text(field: str, value: Any, *, limit: int = MAX_TEXT_LENGTH) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise field_error(field, "must be a string")
    if len(value) > limit:
        raise field_error(field, f"must be at most {limit} characters")
    return value


def _world_object(field: str, value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise field_error(field, "must be a JSON object or null")
    return value


def _world_per_slot(field: str, world: dict[str, Any]) -> dict[str, Any]:
    """The world is {slot_key: {...}}: each slot's statement is an object, diffed key by key."""
    for slot_key, slot_world in world.items():
        if not isinstance(slot_world, dict):
            raise field_error(f"{field}.{slot_key}", "must be a JSON object")
    return world


def _source(field: str, value: Any) -> Source:
    try:
        return Source(value)
    except ValueError:
        allowed = ", ".join(s.value for s in Source)
        raise field_error(field, f"must be one of {allowed}") from None


def _turn(field: str, value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**31:
        raise field_error(field, "must be a whole number from 0 to 2147483647")
    return value


def canonical_json(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def bindings_digest(bindings: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON of the bindings (sorted keys, no spaces, UTF-8)."""
    return hashlib.sha256(canonical_json(bindings).encode("utf-8")).hexdigest()


def _lock(instance: TaskInstance) -> TaskInstance:
    """Re-read the instance under a row lock so concurrent writers queue."""
    return (
        TaskInstance.objects.select_for_update()
        .select_related("task_class", "principal")
        .get(pk=instance.pk)
    )


def _require_open(instance: TaskInstance, doing: str) -> None:
    if instance.status == InstanceStatus.READY:
        raise Conflict(
            f"Cannot {doing}: the instance is ready and its bindings are final. "
            "Open a new instance for a new attempt.",
            code="instance_ready",
        )
    if not instance.is_open:
        raise Conflict(
            f"Cannot {doing}: the instance is {instance.status}.",
            code=f"instance_{instance.status}",
        )


# --- task classes --------------------------------------------------------------------------

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
    key = _require_key(f"{where}.key", spec.get("key"))
    label = _optional_text(f"{where}.label", spec.get("label"), limit=200) or key
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
    key = _require_key(f"{where}.key", spec.get("key"))
    slots = spec.get("slots", [])
    if not isinstance(slots, list) or not all(isinstance(s, str) for s in slots):
        raise field_error(f"{where}.slots", "must be a list of slot keys")
    return {
        "key": key,
        "label": _optional_text(f"{where}.label", spec.get("label"), limit=200) or key,
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
    leaves them out (dropping one could let an irreversible decision leak, T5).
    """
    key = _require_key("key", key)
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
        key=key, defaults={"name": _optional_text("name", name, limit=200) or key}
    )
    # Concurrent registrations of one class queue here, so the second sees the first's slots.
    task_class = TaskClass.objects.select_for_update().get(pk=task_class.pk)
    if not created and name is not None:
        task_class.name = _optional_text("name", name, limit=200) or key
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
            # The order decides what counts as an escalation (T6): once set, only a classifier
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
        data={"added_slots": added_slots, "added_decisions": added_decisions},
    )
    return task_class


def _slot_register_unknown(task_class: TaskClass, key: str, actor: Actor) -> Slot:
    """A belief for a slot nobody declared registers it, unclassified (so irreversible)."""
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


# --- instances and beliefs -----------------------------------------------------------------


@transaction.atomic
def instance_open(
    *,
    task_class_key: Any,
    principal: Any,
    world: Any = None,
    beliefs: Any = None,
    actor: Actor,
) -> TaskInstance:
    key = _require_key("task_class", task_class_key)
    task_class = TaskClass.objects.filter(key=key).first()
    if task_class is None:
        raise NotFound(
            f"task_class: no task class {key!r}; register it first "
            "(PUT /api/v1/task-classes/{key}/)",
            code="unknown_task_class",
            fields={"task_class": ["unknown task class"]},
        )
    username = _require_key("principal", principal)
    user = get_user_model().objects.filter(username=username, is_active=True).first()
    if user is None:
        raise NotFound(
            f"principal: no active user {username!r}",
            code="unknown_principal",
            fields={"principal": ["unknown user"]},
        )
    world = _world_per_slot("world", _world_object("world", world) or {})
    if beliefs is not None and not isinstance(beliefs, list):
        raise field_error("beliefs", "must be a list")

    # Two opens must not take the same run number. Locking the earlier runs is not enough (the
    # first run has none to lock, and Django drops FOR UPDATE from an aggregate query), so lock
    # the principal's row: opens for one person queue, and MAX() then sees the other's commit.
    get_user_model().objects.select_for_update().filter(pk=user.pk).exists()
    last = TaskInstance.objects.filter(principal=user, task_class=task_class).aggregate(
        m=Max("run_number")
    )["m"]
    instance = TaskInstance.objects.create(
        task_class=task_class,
        principal=user,
        opened_by=actor.key,
        run_number=(last or 0) + 1,
        world=world,
    )
    audit(
        "instance.opened",
        actor=actor,
        instance=instance,
        data={"principal": username, "run_number": instance.run_number, "world": world},
    )
    for index, spec in enumerate(beliefs or []):
        if not isinstance(spec, dict):
            raise field_error(f"beliefs[{index}]", "must be an object")
        _belief_record(instance=instance, spec=spec, actor=actor, where=f"beliefs[{index}].")
    return instance


# acquired_at is the server's clock, never the runtime's word.
BELIEF_FIELDS = {"slot", "value", "source", "turn", "world_ref"}


def _belief_record(
    *, instance: TaskInstance, spec: Mapping[str, Any], actor: Actor, where: str = ""
) -> Belief:
    unknown = sorted(set(spec) - BELIEF_FIELDS)
    if unknown:
        raise field_error(f"{where}{unknown[0]}", "unknown field")
    slot_key = _require_key(f"{where}slot", spec.get("slot"))
    if "value" not in spec:
        raise field_error(f"{where}value", "is required (any JSON value)")
    source = _source(f"{where}source", spec.get("source"))
    turn = _turn(f"{where}turn", spec.get("turn"))
    world_ref = _world_object(f"{where}world_ref", spec.get("world_ref"))
    acquired_at = timezone.now()

    slot = instance.task_class.slots.filter(key=slot_key).first()
    if slot is None:
        slot = _slot_register_unknown(instance.task_class, slot_key, actor)
    superseded = Belief.objects.filter(
        instance=instance, slot=slot, status=BeliefStatus.ACTIVE
    ).update(status=BeliefStatus.SUPERSEDED, status_reason="a newer belief was recorded")
    belief = Belief.objects.create(
        instance=instance,
        principal_id=instance.principal_id,
        slot=slot,
        value=spec["value"],
        source=source.value,
        turn=turn,
        acquired_at=acquired_at,
        world_ref=world_ref,
    )
    audit(
        "belief.recorded",
        actor=actor,
        instance=instance,
        subject=slot.key,
        data={
            "belief": belief.pk,
            "value": belief.value,
            "source": source.value,
            "turn": turn,
            "world_ref": world_ref,
            "superseded": superseded,
        },
    )
    return belief


@transaction.atomic
def belief_record(*, instance: TaskInstance, data: Mapping[str, Any], actor: Actor) -> Belief:
    """Record a runtime's belief for a slot of an open instance; re-plans a planned one."""
    instance = _lock(instance)
    _require_open(instance, "record a belief")
    belief = _belief_record(instance=instance, spec=data, actor=actor)
    if instance.status == InstanceStatus.AWAITING_USER:
        _plan(instance, actor)
    return belief


@transaction.atomic
def instance_set_world(*, instance: TaskInstance, world: Any, actor: Actor) -> TaskInstance:
    """Replace the instance's statement of the world now; prompts whose diff changed re-version."""
    instance = _lock(instance)
    world = _world_object("world", world)
    if world is None:
        raise field_error("world", "must be a JSON object")
    for slot_key, slot_world in world.items():
        if not isinstance(slot_world, dict):
            raise field_error(f"world.{slot_key}", "must be a JSON object")
    _require_open(instance, "change the world")
    before = instance.world
    instance.world = world
    instance.save(update_fields=["world", "updated_at"])
    audit(
        "instance.world_set",
        actor=actor,
        instance=instance,
        data={"before": before, "after": world},
    )
    if instance.status == InstanceStatus.AWAITING_USER:
        _plan(instance, actor)
    return instance


@transaction.atomic
def instance_cancel(*, instance: TaskInstance, actor: Actor, reason: Any = "") -> TaskInstance:
    instance = _lock(instance)
    reason = _optional_text("reason", reason)
    if instance.status == InstanceStatus.CANCELLED:
        return instance
    if instance.status == InstanceStatus.EXPIRED:
        raise Conflict("Cannot cancel: the instance has expired.", code="instance_expired")
    _close(instance, InstanceStatus.CANCELLED, PromptState.CANCELLED, reason)
    audit("instance.cancelled", actor=actor, instance=instance, data={"reason": reason})
    return instance


def _close(
    instance: TaskInstance, status: InstanceStatus, prompt_state: PromptState, reason: str
) -> None:
    instance.prompts.filter(state=PromptState.OPEN).update(
        state=prompt_state, updated_at=timezone.now()
    )
    instance.status = status
    instance.status_reason = reason
    instance.bindings = None
    instance.bindings_digest = ""
    instance.save(
        update_fields=["status", "status_reason", "bindings", "bindings_digest", "updated_at"]
    )


# --- planning ------------------------------------------------------------------------------


@dataclass(frozen=True)
class SlotState:
    """Everything routing and the pages need of one slot of one instance."""

    slot: Slot
    effective: policy.EffectiveRisk
    belief: Belief | None
    carried: bool
    routing: policy.Routing
    world_now: dict[str, Any] | None
    diff: list[dict[str, Any]]


def choose_beliefs(instance: TaskInstance, slots: Iterable[Slot]) -> dict[int, tuple[Belief, bool]]:
    """slot id -> (belief, carried), per DESIGN §4: current first, else the newest carried.

    One query: the principal's active beliefs for this class up to this run, newest first.
    """
    slot_ids = [s.pk for s in slots]
    rows = (
        Belief.objects.filter(
            principal_id=instance.principal_id,
            slot_id__in=slot_ids,
            status=BeliefStatus.ACTIVE,
            instance__run_number__lte=instance.run_number,
        )
        .select_related("instance")
        .order_by("-acquired_at", "-id")
    )
    current: dict[int, Belief] = {}
    carried: dict[int, Belief] = {}
    for belief in rows:
        bucket = current if belief.instance_id == instance.pk else carried
        bucket.setdefault(belief.slot_id, belief)
    chosen: dict[int, tuple[Belief, bool]] = {sid: (b, True) for sid, b in carried.items()}
    chosen.update({sid: (b, False) for sid, b in current.items()})
    return chosen


def slot_effective_risk(slot: Slot) -> policy.EffectiveRisk:
    """Needs slot.decisions prefetched to stay at a constant number of queries."""
    return policy.effective_risk(
        RiskClass(slot.risk_class),
        [(d.key, RiskClass(d.risk_class)) for d in slot.decisions.all()],
        monotonic=slot.monotonic,
    )


def slot_states(instance: TaskInstance) -> list[SlotState]:
    slots = list(instance.task_class.slots.prefetch_related("decisions").order_by("position", "id"))
    chosen = choose_beliefs(instance, slots)
    states = []
    for slot in slots:
        effective = slot_effective_risk(slot)
        belief, carried = chosen.get(slot.pk, (None, False))
        facts = (
            None
            if belief is None
            else policy.BeliefFacts(
                source=Source(belief.source),
                carried=carried,
                # An empty reference anchors nothing (R5), however it got stored.
                has_world_ref=bool(belief.world_ref),
            )
        )
        routing = policy.route(effective.risk, monotonic=slot.monotonic, belief=facts)
        world_now = instance.world.get(slot.key) if isinstance(instance.world, dict) else None
        diff = [
            e.to_dict()
            for e in world_diff(belief.world_ref if belief is not None else None, world_now)
        ]
        states.append(SlotState(slot, effective, belief, carried, routing, world_now, diff))
    return states


def _desired_prompt(state: SlotState) -> dict[str, Any]:
    routing, belief = state.routing, state.belief
    prefill = None
    context_value = None
    if belief is not None:
        if routing.route in (Route.CONFIRM, Route.SURFACED):
            prefill = belief.value
        elif routing.route is Route.ASK:
            context_value = belief.value  # read-only context, never pre-filled
    return {
        "route": routing.route.value,
        "rule": routing.rule.value,
        "reason": routing.reason,
        "effective_risk": state.effective.risk.value,
        "risk_reason": state.effective.reason,
        "blocking": routing.blocking,
        "belief_id": belief.pk if belief is not None else None,
        "prefill": prefill,
        "context_value": context_value,
        "world_ref": belief.world_ref if belief is not None else None,
        "world_now": state.world_now,
        "world_diff": state.diff,
    }


def _prompt_matches(prompt: Prompt, desired: Mapping[str, Any]) -> bool:
    return all(canonical_json(getattr(prompt, f)) == canonical_json(v) for f, v in desired.items())


def belief_summary(belief: Belief | None, carried: bool) -> dict[str, Any] | None:
    if belief is None:
        return None
    return {
        "id": belief.pk,
        "source": belief.source,
        "instance": str(belief.instance_id),
        "run_number": belief.instance.run_number,
        "turn": belief.turn,
        "acquired_at": belief.acquired_at.isoformat(),
        "carried": carried,
        "world_ref": belief.world_ref,
    }


def _held(state: SlotState, prompt: Prompt) -> SlotState:
    """The slot state with the route and risk of the blocking prompt it already has."""
    return dataclasses.replace(
        state,
        effective=policy.EffectiveRisk(RiskClass(prompt.effective_risk), prompt.risk_reason),
        routing=policy.Routing(Route(prompt.route), policy.Rule(prompt.rule), prompt.reason),
    )


def _plan(instance: TaskInstance, actor: Actor) -> list[dict[str, Any]]:
    """Route every slot, reconcile prompts, settle the status. Caller holds the instance lock.

    Idempotent: a prompt whose content would not change keeps its version; a prompt whose
    belief, route or world diff changed gets version + 1, so a response to what the person saw
    before is refused as stale.
    """
    now = timezone.now()
    states = slot_states(instance)
    open_prompts = {p.slot_id: p for p in instance.prompts.filter(state=PromptState.OPEN)}
    items = []
    changes = []
    for state in states:
        prompt = open_prompts.get(state.slot.pk)
        if (
            prompt is not None
            and prompt.blocking
            and not state.routing.blocking
            and state.belief is not None
            and prompt.belief_id == state.belief.pk
        ):
            # The same belief now routes to something weaker: only a classification change can
            # do that, and a downgrade never releases what was already asked of a person
            # (DESIGN §5). The blocking prompt stands.
            state = _held(state, prompt)
        if state.routing.route is Route.SILENT:
            if prompt is not None:
                prompt.state = PromptState.SUPERSEDED
                prompt.save(update_fields=["state", "updated_at"])
                changes.append(
                    {"slot": state.slot.key, "prompt": prompt.pk, "change": "superseded"}
                )
                prompt = None
        else:
            desired = _desired_prompt(state)
            if prompt is None:
                prompt = Prompt.objects.create(
                    instance=instance,
                    slot=state.slot,
                    expires_at=now + settings.CONSOLE_PROMPT_TTL if desired["blocking"] else None,
                    **desired,
                )
                changes.append({"slot": state.slot.key, "prompt": prompt.pk, "change": "created"})
            elif not _prompt_matches(prompt, desired):
                became_blocking = desired["blocking"] and not prompt.blocking
                for field, value in desired.items():
                    setattr(prompt, field, value)
                prompt.version += 1
                if became_blocking:
                    prompt.expires_at = now + settings.CONSOLE_PROMPT_TTL
                prompt.save()
                changes.append(
                    {"slot": state.slot.key, "prompt": prompt.pk, "change": f"v{prompt.version}"}
                )
        items.append(plan_item(state, prompt))

    blocking = sum(1 for item in items if item["prompt"] and item["prompt"]["blocking"])
    fields = ["plan_items", "planned_at", "status", "bindings", "bindings_digest", "updated_at"]
    instance.plan_items = items
    instance.planned_at = now
    if blocking:
        instance.status = InstanceStatus.AWAITING_USER
        instance.bindings = None
        instance.bindings_digest = ""
    else:
        bindings = {item["slot"]: item["value"] for item in items}
        instance.status = InstanceStatus.READY
        instance.bindings = bindings
        instance.bindings_digest = bindings_digest(bindings)
    instance.save(update_fields=fields)
    if changes or instance.status == InstanceStatus.READY:
        audit(
            "instance.planned",
            actor=actor,
            instance=instance,
            data={
                "status": instance.status,
                "blocking": blocking,
                "changes": changes,
                "bindings_digest": instance.bindings_digest,
            },
        )
    return items


def plan_item(state: SlotState, prompt: Prompt | None) -> dict[str, Any]:
    route = state.routing.route
    value = None
    if state.belief is not None and route is not Route.ASK:
        value = state.belief.value
    return {
        "slot": state.slot.key,
        "label": state.slot.label,
        "route": route.value,
        "rule": state.routing.rule.value,
        "reason": state.routing.reason,
        "effective_risk": state.effective.risk.value,
        "risk_reason": state.effective.reason,
        "value": value,
        "belief": belief_summary(state.belief, state.carried),
        "world_diff": state.diff,
        "prompt": None
        if prompt is None
        else {
            "id": prompt.pk,
            "version": prompt.version,
            "state": prompt.state,
            "blocking": prompt.blocking,
        },
    }


@transaction.atomic
def instance_plan(*, instance: TaskInstance, actor: Actor) -> TaskInstance:
    """Plan an instance (idempotent). A ready instance keeps its final plan and bindings."""
    instance = _lock(instance)
    _expire_if_due(instance, timezone.now())
    if instance.status == InstanceStatus.READY:
        return instance
    _require_open(instance, "plan")
    _plan(instance, actor)
    return instance


@transaction.atomic
def instances_replan_for_task_class(*, task_class: TaskClass, actor: Actor) -> int:
    """Re-plan every planned, open instance of a task class (after a classification upgrade).

    Ready instances keep their final bindings: a classification never binds retroactively.
    """
    count = 0
    for instance in (
        TaskInstance.objects.select_for_update()
        .filter(task_class=task_class, status=InstanceStatus.AWAITING_USER)
        .select_related("task_class", "principal")
    ):
        _plan(instance, actor)
        count += 1
    return count


# --- expiry --------------------------------------------------------------------------------


def _expire_if_due(instance: TaskInstance, now: datetime) -> bool:
    if instance.status != InstanceStatus.AWAITING_USER:
        return False
    due = instance.prompts.filter(
        state=PromptState.OPEN, blocking=True, expires_at__lte=now
    ).exists()
    if not due:
        return False
    _close(instance, InstanceStatus.EXPIRED, PromptState.EXPIRED, "a blocking prompt expired")
    audit(
        "instance.expired",
        actor=SYSTEM,
        instance=instance,
        data={"reason": "a blocking prompt was not answered before its TTL"},
    )
    return True


def instance_expire_if_due(*, instance: TaskInstance, now: datetime | None = None) -> bool:
    """Lazy expiry, called whenever an instance is read. Cheap when nothing is due."""
    now = now or timezone.now()
    if instance.status != InstanceStatus.AWAITING_USER:
        return False
    if not Prompt.objects.filter(
        instance=instance, state=PromptState.OPEN, blocking=True, expires_at__lte=now
    ).exists():
        return False
    with transaction.atomic():
        locked = _lock(instance)
        expired = _expire_if_due(locked, now)
    if expired:
        instance.refresh_from_db()
    return expired


def instances_expire(*, now: datetime | None = None) -> int:
    """Expire every instance with a blocking prompt past its TTL; returns how many."""
    now = now or timezone.now()
    ids = (
        Prompt.objects.filter(
            state=PromptState.OPEN,
            blocking=True,
            expires_at__lte=now,
            instance__status=InstanceStatus.AWAITING_USER,
        )
        .values_list("instance_id", flat=True)
        .distinct()
    )
    count = 0
    for instance in TaskInstance.objects.filter(pk__in=list(ids)):
        with transaction.atomic():
            if _expire_if_due(_lock(instance), now):
                count += 1
    return count


# --- responses -----------------------------------------------------------------------------

ACTIONS_BY_ROUTE = {
    Route.CONFIRM.value: ("confirm", "edit", "reject"),
    Route.ASK.value: ("answer", "reject"),
    Route.SURFACED.value: ("veto",),
}


@dataclass(frozen=True)
class RespondResult:
    prompt: Prompt
    instance: TaskInstance
    replayed: bool  # True when an identical earlier response was returned, nothing written


def _check_value(slot: Slot, value: Any, field: str = "value") -> Any:
    if isinstance(value, str):
        value = value.strip()
        if len(value) > MAX_TEXT_LENGTH:
            raise field_error(field, f"must be at most {MAX_TEXT_LENGTH} characters")
    if value is None or value == "":
        raise field_error(field, "is required")
    if slot.value_type == Slot.ValueType.NUMBER:
        if isinstance(value, str):
            try:
                value = float(value) if any(c in value for c in ".eE") else int(value)
            except ValueError:
                raise field_error(field, "must be a number") from None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise field_error(field, "must be a number")
        if isinstance(value, float) and not math.isfinite(value):
            raise field_error(field, "must be a finite number")
    elif slot.value_type == Slot.ValueType.BOOLEAN:
        if isinstance(value, str) and value.lower() in {"true", "yes", "false", "no"}:
            value = value.lower() in {"true", "yes"}
        if not isinstance(value, bool):
            raise field_error(field, "must be true or false")
    elif slot.value_type in (Slot.ValueType.STRING, Slot.ValueType.DATE):
        if not isinstance(value, str):
            raise field_error(field, "must be text")
        if slot.value_type == Slot.ValueType.DATE:
            try:
                datetime.strptime(value, "%Y-%m-%d")  # noqa: DTZ007 - a calendar date, no time
            except ValueError:
                raise field_error(field, "must be a date written YYYY-MM-DD") from None
    value = _canonical_choice(slot.scope_order or slot.choices or [], value)
    if slot.scope_order and value not in slot.scope_order:
        raise field_error(field, f"must be one of {', '.join(slot.scope_order)}")
    if slot.choices and value not in slot.choices:
        raise field_error(field, f"must be one of {', '.join(map(str, slot.choices))}")
    return value


def _canonical_choice(choices: list[Any], value: Any) -> Any:
    """A typed value that differs from one of the choices only in case is that choice, as the
    choices list it ("Admin" is "admin"); surrounding spaces are already stripped."""
    if not isinstance(value, str) or value in choices:
        return value
    folded = value.casefold()
    matches = [c for c in choices if isinstance(c, str) and c.strip().casefold() == folded]
    return matches[0] if len(matches) == 1 else value


def earlier_grant(prompt: Prompt) -> Any:
    """The grant an escalation is measured against: the context value, but only where the
    person gave it. A tool's or a model's value is a guess, not a grant; measured against it,
    a poisoned 'admin' would let the person type 'admin' once (T6). None: any grant escalates.
    """
    belief = prompt.belief
    if belief is None or belief.source != Source.USER.value:
        return None
    return prompt.context_value


def escalates(slot: Slot, earlier: Any, value: Any) -> bool:
    """Does `value` rank above the earlier grant in the slot's scope order?"""
    order = slot.scope_order or []
    if value not in order:
        return False
    if earlier not in order:
        return True  # nothing to compare with: treat any grant as an escalation
    return order.index(value) > order.index(earlier)


def _same_response(response: PromptResponse, action: str, value: Any) -> bool:
    if response.action != action:
        return False
    if action in ("edit", "answer"):
        return canonical_json(response.value) == canonical_json(value)
    return True


def _next_turn(instance: TaskInstance) -> int:
    return (instance.beliefs.aggregate(m=Max("turn"))["m"] or 0) + 1


def prompt_respond(
    *,
    prompt_id: int,
    user: AbstractBaseUser,
    action: Any,
    version: Any,
    value: Any = None,
    value_confirmation: Any = None,
    reason: Any = "",
    idempotency_key: str | None = None,
) -> RespondResult:
    """A person's answer to one prompt of their own instance (DESIGN §5)."""
    found = (
        Prompt.objects.filter(pk=prompt_id, instance__principal=user)
        .select_related("instance")
        .first()
    )
    if found is None:
        raise NotFound("No such prompt.", code="not_found")
    # Expiry is settled first, in a transaction of its own, so that the refusal of a late
    # answer does not roll the instance's expiry back with it.
    instance_expire_if_due(instance=found.instance)
    return _prompt_respond(
        found=found,
        user=user,
        action=action,
        version=version,
        value=value,
        value_confirmation=value_confirmation,
        reason=reason,
        idempotency_key=idempotency_key,
    )


@transaction.atomic
def _prompt_respond(
    *,
    found: Prompt,
    user: AbstractBaseUser,
    action: Any,
    version: Any,
    value: Any,
    value_confirmation: Any,
    reason: Any,
    idempotency_key: str | None,
) -> RespondResult:
    instance = _lock(found.instance)
    prompt = Prompt.objects.select_related("slot", "belief").get(pk=found.pk)
    actor = Actor(user=user)
    reason = _optional_text("reason", reason)

    if idempotency_key:
        earlier = PromptResponse.objects.filter(
            responded_by=user, idempotency_key=idempotency_key
        ).first()
        if earlier is not None:
            if earlier.prompt_id != prompt.pk:
                raise Conflict(
                    "This Idempotency-Key was already used for another prompt.",
                    code="idempotency_key_reused",
                )
            return RespondResult(prompt, instance, replayed=True)

    if isinstance(version, str) and version.isascii() and version.isdigit() and len(version) < 10:
        version = int(version)
    if isinstance(version, bool) or not isinstance(version, int) or not 0 < version < 2**31:
        raise field_error("version", "must be the prompt version you saw (a whole number)")
    if action not in ("confirm", "edit", "answer", "reject", "veto"):
        raise field_error("action", "must be one of confirm, edit, answer, reject, veto")

    # An identical repeat of a response already taken returns it again and writes nothing.
    earlier = PromptResponse.objects.filter(prompt=prompt, version=version).first()
    if earlier is not None:
        checked = value
        if action in ("edit", "answer"):
            try:
                checked = _check_value(prompt.slot, value)
            except InvalidInput:
                checked = value
        if _same_response(earlier, action, checked):
            return RespondResult(prompt, instance, replayed=True)
        raise Conflict(
            "This prompt was already answered; your answer was not recorded.",
            code="already_answered",
            extra={"prompt": prompt_payload(prompt)},
        )

    if prompt.state != PromptState.OPEN:  # expiry was settled by prompt_respond just before
        raise Conflict(
            f"This prompt is no longer open (it is {prompt.state}); nothing was recorded.",
            code=f"prompt_{prompt.state}",
            extra={"prompt": prompt_payload(prompt)},
        )
    if version != prompt.version:
        raise StaleVersion(
            "What you answered has changed since you saw it (the value or the world it refers "
            "to). Nothing was recorded; review the fresh form and answer again.",
            extra={"prompt": prompt_payload(prompt)},
        )
    allowed = ACTIONS_BY_ROUTE[prompt.route]
    if action not in allowed:
        raise field_error("action", f"a {prompt.route} prompt takes {', '.join(allowed)}")
    if action == "veto" and instance.status not in (
        InstanceStatus.AWAITING_USER,
        InstanceStatus.READY,
    ):
        raise Conflict(f"The instance is {instance.status}.", code=f"instance_{instance.status}")
    if action != "veto":
        _require_open(instance, "answer")

    new_value = None
    if action == "confirm":
        new_value = prompt.prefill
    elif action in ("edit", "answer"):
        new_value = _check_value(prompt.slot, value)
        grant = earlier_grant(prompt)
        if (
            prompt.slot.monotonic
            and prompt.slot.scope_order
            and escalates(prompt.slot, grant, new_value)
        ):
            again = (
                value_confirmation.strip()
                if isinstance(value_confirmation, str)
                else value_confirmation
            )
            if again != new_value:
                raise field_error(
                    "value_confirmation",
                    (
                        f"{new_value!r} grants more than the earlier {grant!r}"
                        if grant is not None
                        else f"{new_value!r} is a new grant"
                    )
                    + ": type it a second time to confirm the escalation",
                )

    try:
        with transaction.atomic():
            response = PromptResponse.objects.create(
                prompt=prompt,
                version=prompt.version,
                action=action,
                value=new_value,
                reason=reason,
                responded_by=user,
                idempotency_key=idempotency_key or None,
            )
    except IntegrityError:
        raise Conflict(
            "Someone answered this prompt at the same moment; nothing more was recorded.",
            code="already_answered",
        ) from None

    now = timezone.now()
    prompt.action = action
    prompt.response_reason = reason
    prompt.responded_at = now
    data: dict[str, Any] = {"action": action, "version": prompt.version, "reason": reason}

    if action in ("confirm", "edit", "answer"):
        world_seen = prompt.world_now if prompt.world_now is not None else prompt.world_ref
        Belief.objects.filter(
            instance=instance, slot=prompt.slot, status=BeliefStatus.ACTIVE
        ).update(status=BeliefStatus.SUPERSEDED, status_reason=f"{action} by {user}")
        belief = Belief.objects.create(
            instance=instance,
            principal_id=instance.principal_id,
            slot=prompt.slot,
            value=new_value,
            source=Source.USER.value,
            turn=_next_turn(instance),
            acquired_at=now,
            world_ref=world_seen,
        )
        response.belief = belief
        response.save(update_fields=["belief"])
        prompt.state = PromptState.ANSWERED
        prompt.response_value = new_value
        prompt.save()
        data.update({"value": new_value, "belief": belief.pk, "world_ref": world_seen})
        audit(
            f"prompt.{action}",
            actor=actor,
            instance=instance,
            prompt=prompt,
            subject=prompt.slot.key,
            data=data,
        )
        _plan(instance, actor)
    elif action == "reject":
        prompt.state = PromptState.REJECTED
        prompt.save()
        _close(instance, InstanceStatus.CANCELLED, PromptState.CANCELLED, reason or "rejected")
        audit(
            "prompt.reject",
            actor=actor,
            instance=instance,
            prompt=prompt,
            subject=prompt.slot.key,
            data=data,
        )
    else:  # veto
        vetoed = prompt.belief
        if vetoed is not None:
            vetoed.status = BeliefStatus.VETOED
            vetoed.status_reason = reason or f"vetoed by {user}"
            vetoed.save(update_fields=["status", "status_reason"])
            # Older active beliefs for the slot must not step in silently (S5): retire them too.
            Belief.objects.filter(
                Q(acquired_at__lt=vetoed.acquired_at)
                | Q(acquired_at=vetoed.acquired_at, pk__lt=vetoed.pk),
                principal_id=instance.principal_id,
                slot=prompt.slot,
                status=BeliefStatus.ACTIVE,
            ).update(status=BeliefStatus.SUPERSEDED, status_reason="an assumption was vetoed")
        prompt.state = PromptState.VETOED
        prompt.save()
        data["belief"] = vetoed.pk if vetoed is not None else None
        audit(
            "prompt.veto",
            actor=actor,
            instance=instance,
            prompt=prompt,
            subject=prompt.slot.key,
            data=data,
        )
        _plan(instance, actor)
    instance.refresh_from_db()
    return RespondResult(prompt, instance, replayed=False)


def prompt_payload(prompt: Prompt) -> dict[str, Any]:
    """The fresh form of a prompt, for a refused response to show."""
    return {
        "id": prompt.pk,
        "slot": prompt.slot.key,
        "route": prompt.route,
        "rule": prompt.rule,
        "version": prompt.version,
        "state": prompt.state,
        "blocking": prompt.blocking,
        "prefill": prompt.prefill,
        "world_diff": prompt.world_diff,
    }


def prompts_mark_shown(*, prompts: Iterable[Prompt], user: AbstractBaseUser) -> int:
    """Record when each prompt was first shown to its principal (dwell time starts there)."""
    ids = [p.pk for p in prompts if p.shown_at is None and p.state == PromptState.OPEN]
    if not ids:
        return 0
    now = timezone.now()
    count = Prompt.objects.filter(
        pk__in=ids, shown_at__isnull=True, instance__principal=user
    ).update(shown_at=now)
    for prompt in prompts:
        if prompt.pk in ids:
            prompt.shown_at = now
    return count
