"""Locking an instance, refusing work on a closed one, and closing one."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from beliefs.errors import Conflict, NotFound
from beliefs.models import InstanceStatus, Prompt, PromptState, TaskInstance
from beliefs.selectors.beliefs import open_prompts_of
from beliefs.selectors.instances import instance_to_plan
from beliefs.services.changes import instance_changed
from beliefs.services.notify import instance_status_changed
from beliefs.services.receipts import receipt_revoke


def lock_instance(instance: TaskInstance) -> TaskInstance:
    """Re-read the instance, with its task class and principal, under a row lock so concurrent
    writers queue (`selectors.instance_to_plan` tells which row is locked and how)."""
    return _read_instance(instance.pk, None, lock=True)


def locked_with_open_prompts(
    *, pk: Any, runtime_id: int | None = None
) -> tuple[TaskInstance, list[Prompt]]:
    """The instance (only if `runtime_id`'s runtime opened it, when given), under
    `lock_instance`'s lock, and its open prompts, at most one per slot: what planning reads
    under its lock. NotFound (404) when there is none, whether it does not exist or belongs to
    someone else.

    Two queries, not one joined: a join repeats the instance's plan and world, its largest
    columns, on every prompt's row (at 200 slots, megabytes per read).
    """
    instance = _read_instance(pk, runtime_id, lock=True)
    return instance, open_prompts_of(instance)


def read_instance(*, pk: Any, runtime_id: int | None = None) -> TaskInstance:
    """The instance, without a lock (only if `runtime_id`'s runtime opened it, when given);
    NotFound (404) as `locked_with_open_prompts`."""
    return _read_instance(pk, runtime_id, lock=False)


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
    now = timezone.now()
    instance.prompts.filter(state=PromptState.OPEN).update(state=prompt_state, updated_at=now)
    receipt_revoke(instance, f"the instance was {status}", now)
    instance.status = status
    instance.status_reason = reason
    instance.bindings = None
    instance.bindings_digest = ""
    instance.save(
        update_fields=["status", "status_reason", "bindings", "bindings_digest", "updated_at"]
    )
    instance_status_changed(instance, status_before)


def _read_instance(pk: Any, runtime_id: int | None, *, lock: bool) -> TaskInstance:
    """`selectors.instance_to_plan`, or NotFound when there is none."""
    instance = instance_to_plan(pk, runtime_id=runtime_id, lock=lock)
    if instance is None:
        raise NotFound("No such instance.")
    if lock:
        # Every writer of an instance takes this lock: the one place that tells its waiters
        # (on commit; a lock taken for nothing costs them a read).
        instance_changed(pk)
    return instance
