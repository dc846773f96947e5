"""Locking an instance, refusing work on a closed one, and closing one."""

from __future__ import annotations

from functools import cache
from typing import Any

from django.contrib.auth.models import User
from django.db import connection
from django.utils import timezone

from beliefs.errors import Conflict, NotFound
from beliefs.models import (
    InstanceStatus,
    PromptState,
    TaskClass,
    TaskInstance,
)
from beliefs.selectors import rows
from beliefs.services.notify import instance_status_changed


def lock_instance(instance: TaskInstance) -> TaskInstance:
    """Re-read the instance under a row lock so concurrent writers queue.

    Only the instance's own row is locked (`of`): the joined task class and principal are read,
    not locked, so a writer never holds a user or task-class row that an open waits for. No key
    update: inserts that refer to the instance (prompts, beliefs) need only a key share.
    """
    return lock_instance_where(pk=instance.pk)


def lock_instance_where(*, pk: Any, runtime_id: int | None = None) -> TaskInstance:
    """The instance (only if `runtime_id`'s runtime opened it, when given), with its task class
    and principal, read under `lock_instance`'s row lock; NotFound (404) when there is none,
    whether it does not exist or belongs to someone else."""
    return _instance_where(pk, runtime_id, lock=True)


def instance_where(*, pk: Any, runtime_id: int | None = None) -> TaskInstance:
    """`lock_instance_where` without the lock: a read."""
    return _instance_where(pk, runtime_id, lock=False)


def _instance_where(pk: Any, runtime_id: int | None, *, lock: bool) -> TaskInstance:
    # Fixed SQL: planning reads an instance this way on every request (see `selectors.rows`).
    params = [rows.prepare(TaskInstance, "id", pk)]
    if runtime_id is not None:
        params.append(runtime_id)
    found = rows.fetch(_instance_sql(runtime_id is not None, lock), params, _INSTANCE_COLUMNS)
    if not found:
        raise NotFound("No such instance.")
    values = found[0]
    instances, classes = len(rows.concrete(TaskInstance)), len(rows.concrete(TaskClass))
    instance = rows.instance_of(TaskInstance, values[:instances])
    instance.task_class = rows.instance_of(TaskClass, values[instances : instances + classes])
    instance.principal = rows.instance_of(User, values[instances + classes :])
    return instance


_INSTANCE_COLUMNS = (*rows.concrete(TaskInstance), *rows.concrete(TaskClass), *rows.concrete(User))


@cache
def _instance_sql(by_runtime: bool, lock: bool) -> str:
    col = rows.column
    sql = (
        f"SELECT {', '.join(col(m, n) for m, n in _INSTANCE_COLUMNS)}"
        f" FROM {rows.table(TaskInstance)}"
        f" INNER JOIN {rows.table(TaskClass)}"
        f" ON {col(TaskClass, 'id')} = {col(TaskInstance, 'task_class')}"
        f" INNER JOIN {rows.table(User)} ON {col(User, 'id')} = {col(TaskInstance, 'principal')}"
        f" WHERE {col(TaskInstance, 'id')} = %s"
    )
    if by_runtime:
        sql += f" AND {col(TaskInstance, 'runtime')} = %s"
    if lock and connection.features.has_select_for_update:
        # As `select_for_update(of=("self",), no_key=True)` writes it.
        sql += f" FOR NO KEY UPDATE OF {rows.table(TaskInstance)}"
    return sql


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
