"""Asking a value again with the world's current value: on the page that restates an action
before it is signed or approved, the person sees that a detail of a value's world changed
since they kept the value (a registry's LEI moved on) and chooses "use the current value".
The question is asked again, pre-filled with the world's value, and nothing is bound until
they confirm it: the value on record is superseded by the world's (as the runtime reported
the world), the instance is planned again (so a signature or approvals given for the old
value no longer count), and the audit log says who asked for it and why.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from beliefs.domain.policy import Source
from beliefs.domain.vocabulary import AuditKind
from beliefs.domain.worlddiff import current_value
from beliefs.errors import Conflict, InvalidInput
from beliefs.models import (
    Belief,
    BeliefStatus,
    InstanceStatus,
    Prompt,
    PromptState,
    RecordedVia,
    TaskInstance,
)
from beliefs.services.access import instance_for_principal
from beliefs.services.audit import Actor, audit, digest_of
from beliefs.services.lifecycle import lock_instance
from beliefs.services.planning import plan_locked
from beliefs.services.retry import retry_on_race

# Where a value can be asked again: every answer is in, and the action waits for the
# person's signature or for its approvers (before then, the question itself is still open).
REASKABLE = frozenset({InstanceStatus.AWAITING_SIGNATURE, InstanceStatus.AWAITING_APPROVAL})


def world_value_for(instance: TaskInstance, prompt: Prompt | None, slot_key: str) -> Any:
    """The world's current value for the slot's value on record, or None: see
    `worlddiff.current_value`."""
    if prompt is None:
        return None
    item = next((i for i in instance.plan_items or [] if i.get("slot") == slot_key), None)
    if item is None:
        return None
    return current_value(item.get("value"), list(prompt.world_diff or []))


@retry_on_race
@transaction.atomic
def prompt_reask_with_world(*, instance_id: Any, slot_key: Any, user: User) -> TaskInstance:
    """Ask the slot's question again, pre-filled with the world's current value (a
    confirmation, since the value comes from the world and not from the person). Only the
    principal, only while the action waits for their signature or its approvers, and only
    for a value a changed detail of its world stated."""
    instance = lock_instance(instance_for_principal(instance_id, user))
    if instance.status not in REASKABLE:
        raise Conflict(
            "A value can be asked again only while the action waits for your signature or "
            "its approvers; this one no longer does.",
            code=f"instance_{instance.status}",
        )
    key = slot_key if isinstance(slot_key, str) else ""
    settled = (
        Prompt.objects.filter(instance=instance, slot__key=key, state=PromptState.ANSWERED)
        .select_related("slot")
        .order_by("-id")
        .first()
    )
    value = world_value_for(instance, settled, key)
    if settled is None or value is None:
        raise InvalidInput(
            "slot: the world states no current value for this value",
            code="no_current_value",
            fields={"slot": ["the world states no current value for this value"]},
        )
    before = next(i.get("value") for i in instance.plan_items if i.get("slot") == key)
    superseded = Belief.objects.filter(
        instance=instance, slot=settled.slot, status=BeliefStatus.ACTIVE
    ).update(
        status=BeliefStatus.SUPERSEDED,
        status_reason=f"asked again with the world's current value by {user}",
    )
    turn = Belief.objects.filter(instance=instance).order_by("-turn").values_list("turn", flat=True)
    belief = Belief.objects.create(
        instance=instance,
        principal_id=instance.principal_id,
        runtime_id=instance.runtime_id,
        slot=settled.slot,
        value=value,
        # The world's value, as the runtime reported the world: a tool's, to be confirmed.
        source=Source.TOOL.value,
        turn=(turn.first() or 0) + 1,
        acquired_at=timezone.now(),
        world_ref=(instance.world or {}).get(key),
        recorded_via=RecordedVia.RUNTIME,
    )
    actor = Actor(user=user)
    audit(
        AuditKind.PROMPT_REASKED,
        actor=actor,
        instance=instance,
        subject=key,
        data={
            "before": digest_of(before),
            "after": digest_of(value),
            "belief": belief.pk,
            "superseded": superseded,
            "status_before": instance.status,
            "reason": "the person chose the world's current value",
        },
    )
    plan_locked(instance, actor)
    return instance
