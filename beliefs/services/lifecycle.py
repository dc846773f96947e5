"""Locking an instance, refusing work on a closed one, and closing one."""

from __future__ import annotations

from django.utils import timezone

from beliefs.errors import Conflict
from beliefs.models import (
    InstanceStatus,
    PromptState,
    TaskInstance,
)
from beliefs.services.notify import instance_status_changed


def lock_instance(instance: TaskInstance) -> TaskInstance:
    """Re-read the instance under a row lock so concurrent writers queue.

    Only the instance's own row is locked (`of`): the joined task class and principal are read,
    not locked, so a writer never holds a user or task-class row that an open waits for. No key
    update: inserts that refer to the instance (prompts, beliefs) need only a key share.
    """
    return (
        TaskInstance.objects.select_for_update(of=("self",), no_key=True)
        .select_related("task_class", "principal")
        .get(pk=instance.pk)
    )


def require_open(instance: TaskInstance, doing: str) -> None:
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


def close_instance(
    instance: TaskInstance, status: InstanceStatus, prompt_state: PromptState, reason: str
) -> None:
    status_before = instance.status
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
    instance_status_changed(instance, status_before)
