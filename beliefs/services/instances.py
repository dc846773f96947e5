"""Opening instances, recording beliefs, stating the world, cancelling."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from beliefs.domain.policy import Source
from beliefs.domain.vocabulary import AuditKind
from beliefs.errors import Conflict, InvalidInput, NotFound
from beliefs.models import (
    AuditEvent,
    Belief,
    BeliefStatus,
    InstanceStatus,
    PromptState,
    Slot,
    TaskClass,
    TaskInstance,
)
from beliefs.selectors.beliefs import declared_slots
from beliefs.selectors.instances import opening_counts
from beliefs.services import limits
from beliefs.services.audit import Actor, audit, audit_all, audit_replaced, digest_of
from beliefs.services.lifecycle import close_instance, lock_instance, require_open
from beliefs.services.planning import plan_locked
from beliefs.services.retry import retry_on_race
from beliefs.services.runtimes import require_own_audience
from beliefs.services.task_classes import action_slots, require_may_open

SUPERSEDED_REASON = "a newer belief was recorded"

# The world as a runtime states it: {slot_key: {...}}, each slot's statement an object that is
# diffed key by key.
World = dict[str, dict[str, Any]]


@dataclass(frozen=True)
class BeliefSpec:
    """A runtime's belief for one slot. `acquired_at` is the server's clock, never the
    runtime's word, so it is not part of the spec."""

    slot: str
    value: Any
    source: Source
    turn: int = 0
    world_ref: dict[str, Any] | None = None


@retry_on_race
@transaction.atomic
def instance_open(
    *,
    task_class_key: str,
    principal: str,
    world: World | None = None,
    beliefs: Sequence[BeliefSpec] = (),
    slots: Sequence[str] | None = None,
    audience: str = "",
    actor: Actor,
) -> TaskInstance:
    """Open a run of the task class for `principal`. `slots`: the slots this action uses
    (default: every declared slot of the class); `audience`: whom its receipt is for (default:
    the runtime; else a name registered for the runtime, see `require_own_audience`)."""
    task_class = TaskClass.objects.filter(key=task_class_key).first()
    if task_class is None:
        raise NotFound(
            f"task_class: no task class {task_class_key!r}; register it first "
            "(PUT /api/v1/task-classes/{key}/)",
            code="unknown_task_class",
            fields={"task_class": ["unknown task class"]},
        )
    require_may_open(task_class, actor)
    require_own_audience(audience, actor.runtime)
    # Two opens must not take the same run number. Locking the earlier runs is not enough (the
    # first run has none to lock, and Django drops FOR UPDATE from an aggregate query), so lock
    # the principal's row as it is read: opens for one person queue, and MAX() then sees the
    # other's commit. This is the first lock an open takes, and nothing else locks a user row,
    # so there is one order. No key update: other writers' foreign keys to the user need only
    # a key share.
    user = (
        get_user_model()
        .objects.select_for_update(no_key=True)
        .filter(username=principal, is_active=True)
        .first()
    )
    if user is None:
        raise NotFound(
            f"principal: no active user {principal!r}",
            code="unknown_principal",
            fields={"principal": ["unknown user"]},
        )
    world = world or {}
    keys, slot_rows = _action_keys(task_class, slots, beliefs, actor)
    # Counted under the principal's lock, so racing opens queue and cannot pass the limit
    # together, and cannot take the same run number.
    runtime_id = actor.runtime.pk if actor.runtime is not None else None
    open_count, last = opening_counts(user.pk, runtime_id, task_class.pk)
    limits.check_open_instances(open_count)
    instance = TaskInstance.objects.create(
        task_class=task_class,
        principal=user,
        runtime=actor.runtime,
        opened_by=actor.key,
        run_number=last + 1,
        action_slots=keys,
        audience=audience,
        world=world,
    )
    opened = audit(
        AuditKind.INSTANCE_OPENED,
        actor=actor,
        instance=instance,
        data={
            "principal": principal,
            "run_number": instance.run_number,
            "world_digest": digest_of(world),
            "slots": keys,
            **({"audience": audience} if audience else {}),
        },
        save=False,
    )
    # The opening and its beliefs' records, in that order, in one statement.
    audit_all([opened, *_record_opening_beliefs(instance, beliefs, actor, slot_rows)])
    return instance


def _action_keys(
    task_class: TaskClass,
    named: Sequence[str] | None,
    beliefs: Sequence[BeliefSpec],
    actor: Actor,
) -> tuple[list[str], dict[str, Slot]]:
    """The keys of the action's slots: the ones named (each must be the class's, or the class
    has open slots), or every declared slot plus any slot the opening beliefs name. Every
    belief must be for a slot of the action. With them, the action's slots by key (read once:
    the opening beliefs are recorded against them)."""
    if named is not None:
        found = action_slots(task_class, named, actor)
        keys = list(dict.fromkeys(named))
        outside = [i for i, spec in enumerate(beliefs) if spec.slot not in keys]
        if outside:
            index = outside[0]
            raise InvalidInput(
                f"beliefs[{index}].slot: {beliefs[index].slot!r} is not one of this action's slots",
                code="slot_not_in_action",
                fields={f"beliefs[{index}].slot": ["not one of the action's slots"]},
            )
        return keys, found
    found = declared_slots(task_class.pk)  # every declared slot not retired, in order
    keys = list(found)
    extra = [spec.slot for spec in beliefs if spec.slot not in found]
    if extra:
        found |= action_slots(task_class, extra, actor, field="beliefs")
        keys += list(dict.fromkeys(extra))
    return keys, found


def _record_opening_beliefs(
    instance: TaskInstance, specs: Sequence[BeliefSpec], actor: Actor, slots: dict[str, Slot]
) -> list[AuditEvent]:
    """An open's beliefs in one statement, whatever their number, and their audit events (for
    the caller to write). The instance is new, so nothing of it is active but what this list
    records: a slot named twice keeps its last belief and the earlier one is superseded, as
    recording them one at a time would do. `slots`: the action's, by key (every spec's slot is
    one of them)."""
    if not specs:
        return []
    last = {spec.slot: index for index, spec in enumerate(specs)}
    acquired_at = timezone.now()
    beliefs = []
    for index, spec in enumerate(specs):
        belief = Belief(
            instance=instance,
            principal_id=instance.principal_id,
            runtime_id=instance.runtime_id,
            slot=slots[spec.slot],
            value=spec.value,
            source=spec.source.value,
            turn=spec.turn,
            acquired_at=acquired_at,
            world_ref=spec.world_ref,
        )
        if last[spec.slot] != index:  # a later belief of this open replaces it
            belief.status = BeliefStatus.SUPERSEDED
            belief.status_reason = SUPERSEDED_REASON
        beliefs.append(belief)
    Belief.objects.bulk_create(beliefs)  # sets each belief's pk (RETURNING on both databases)
    seen: set[str] = set()
    events = []
    for spec, belief in zip(specs, beliefs, strict=True):
        events.append(_recorded_event(instance, spec, belief, int(spec.slot in seen), actor))
        seen.add(spec.slot)
    return events


def _recorded_event(
    instance: TaskInstance, spec: BeliefSpec, belief: Belief, superseded: int, actor: Actor
) -> AuditEvent:
    return audit(
        AuditKind.BELIEF_RECORDED,
        actor=actor,
        instance=instance,
        subject=spec.slot,
        data={
            "belief": belief.pk,
            "value_digest": digest_of(belief.value),
            "source": spec.source.value,
            "turn": spec.turn,
            "world_ref_digest": digest_of(spec.world_ref),
            "superseded": superseded,
        },
        save=False,
    )


def _belief_record(*, instance: TaskInstance, spec: BeliefSpec, actor: Actor) -> Belief:
    acquired_at = timezone.now()

    slot = action_slots(instance.task_class, [spec.slot], actor, field="slot")[spec.slot]
    if spec.slot not in instance.action_slots:
        if not instance.task_class.open_slots or slot.declared:
            raise InvalidInput(
                f"slot: {spec.slot!r} is not one of this action's slots",
                code="slot_not_in_action",
                fields={"slot": ["not one of the action's slots"]},
            )
        # An open-slots class: recording a value for a slot names it in the action.
        instance.action_slots = [*instance.action_slots, spec.slot]
        instance.save(update_fields=["action_slots", "updated_at"])
    superseded = Belief.objects.filter(
        instance=instance, slot=slot, status=BeliefStatus.ACTIVE
    ).update(status=BeliefStatus.SUPERSEDED, status_reason=SUPERSEDED_REASON)
    belief = Belief.objects.create(
        instance=instance,
        principal_id=instance.principal_id,
        runtime_id=instance.runtime_id,
        slot=slot,
        value=spec.value,
        source=spec.source.value,
        turn=spec.turn,
        acquired_at=acquired_at,
        world_ref=spec.world_ref,
    )
    _recorded_event(instance, spec, belief, superseded, actor).save()
    return belief


def _lock_open(instance: TaskInstance, doing: str) -> TaskInstance:
    """The instance locked, or a Conflict if it is closed to `doing`."""
    instance = lock_instance(instance)
    require_open(instance, doing)
    return instance


def _replan_if_planned(instance: TaskInstance, actor: Actor) -> None:
    """A change to what routing reads re-plans a planned instance; an open one is planned
    when its runtime asks."""
    # Planned and still open: awaiting its person (answers, or a passkey signature) or its
    # approvers.
    if instance.status in InstanceStatus.planned_open():
        plan_locked(instance, actor)


@retry_on_race
@transaction.atomic
def belief_record(*, instance: TaskInstance, belief: BeliefSpec, actor: Actor) -> Belief:
    """Record a runtime's belief for a slot of an open instance; re-plans a planned one."""
    instance = _lock_open(instance, "record a belief")
    recorded = _belief_record(instance=instance, spec=belief, actor=actor)
    _replan_if_planned(instance, actor)
    return recorded


@retry_on_race
@transaction.atomic
def instance_set_world(*, instance: TaskInstance, world: World, actor: Actor) -> TaskInstance:
    """Replace the instance's statement of the world now; prompts whose diff changed re-version."""
    instance = _lock_open(instance, "change the world")
    before = instance.world
    instance.world = world
    instance.save(update_fields=["world", "updated_at"])
    audit_replaced(
        AuditKind.INSTANCE_WORLD_SET,
        digest_of(before),
        digest_of(world),
        actor=actor,
        instance=instance,
    )
    _replan_if_planned(instance, actor)
    return instance


@retry_on_race
@transaction.atomic
def instance_cancel(*, instance: TaskInstance, actor: Actor, reason: str = "") -> TaskInstance:
    instance = lock_instance(instance)
    if instance.status == InstanceStatus.CANCELLED:
        return instance
    if instance.status == InstanceStatus.EXPIRED:
        raise Conflict("Cannot cancel: the instance has expired.", code="instance_expired")
    close_instance(instance, InstanceStatus.CANCELLED, PromptState.CANCELLED, reason)
    audit(AuditKind.INSTANCE_CANCELLED, actor=actor, instance=instance, data={"reason": reason})
    return instance
