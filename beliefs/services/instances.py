"""Opening instances, recording beliefs, stating the world, cancelling."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from beliefs.errors import Conflict, NotFound, field_error
from beliefs.models import (
    Belief,
    BeliefStatus,
    InstanceStatus,
    PromptState,
    TaskClass,
    TaskInstance,
)
from beliefs.services.audit import Actor, audit
from beliefs.services.inputs import (
    optional_text,
    parse_source,
    parse_turn,
    require_key,
    world_object,
    world_per_slot,
)
from beliefs.services.lifecycle import close_instance, lock_instance, require_open
from beliefs.services.planning import plan_locked
from beliefs.services.task_classes import slot_register_unknown


@transaction.atomic
def instance_open(
    *,
    task_class_key: Any,
    principal: Any,
    world: Any = None,
    beliefs: Any = None,
    actor: Actor,
) -> TaskInstance:
    key = require_key("task_class", task_class_key)
    task_class = TaskClass.objects.filter(key=key).first()
    if task_class is None:
        raise NotFound(
            f"task_class: no task class {key!r}; register it first "
            "(PUT /api/v1/task-classes/{key}/)",
            code="unknown_task_class",
            fields={"task_class": ["unknown task class"]},
        )
    username = require_key("principal", principal)
    user = get_user_model().objects.filter(username=username, is_active=True).first()
    if user is None:
        raise NotFound(
            f"principal: no active user {username!r}",
            code="unknown_principal",
            fields={"principal": ["unknown user"]},
        )
    world = world_per_slot("world", world_object("world", world) or {})
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
        runtime=actor.runtime,
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
    slot_key = require_key(f"{where}slot", spec.get("slot"))
    if "value" not in spec:
        raise field_error(f"{where}value", "is required (any JSON value)")
    source = parse_source(f"{where}source", spec.get("source"))
    turn = parse_turn(f"{where}turn", spec.get("turn"))
    world_ref = world_object(f"{where}world_ref", spec.get("world_ref"))
    acquired_at = timezone.now()

    slot = instance.task_class.slots.filter(key=slot_key).first()
    if slot is None:
        slot = slot_register_unknown(instance.task_class, slot_key, actor)
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
    instance = lock_instance(instance)
    require_open(instance, "record a belief")
    belief = _belief_record(instance=instance, spec=data, actor=actor)
    if instance.status == InstanceStatus.AWAITING_USER:
        plan_locked(instance, actor)
    return belief


@transaction.atomic
def instance_set_world(*, instance: TaskInstance, world: Any, actor: Actor) -> TaskInstance:
    """Replace the instance's statement of the world now; prompts whose diff changed re-version."""
    instance = lock_instance(instance)
    world = world_object("world", world)
    if world is None:
        raise field_error("world", "must be a JSON object")
    for slot_key, slot_world in world.items():
        if not isinstance(slot_world, dict):
            raise field_error(f"world.{slot_key}", "must be a JSON object")
    require_open(instance, "change the world")
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
        plan_locked(instance, actor)
    return instance


@transaction.atomic
def instance_cancel(*, instance: TaskInstance, actor: Actor, reason: Any = "") -> TaskInstance:
    instance = lock_instance(instance)
    reason = optional_text("reason", reason)
    if instance.status == InstanceStatus.CANCELLED:
        return instance
    if instance.status == InstanceStatus.EXPIRED:
        raise Conflict("Cannot cancel: the instance has expired.", code="instance_expired")
    close_instance(instance, InstanceStatus.CANCELLED, PromptState.CANCELLED, reason)
    audit("instance.cancelled", actor=actor, instance=instance, data={"reason": reason})
    return instance
