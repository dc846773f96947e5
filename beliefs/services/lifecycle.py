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
    Prompt,
    PromptState,
    TaskClass,
    TaskInstance,
)
from beliefs.selectors import rows
from beliefs.selectors.beliefs import open_prompts_of
from beliefs.services.changes import instance_changed
from beliefs.services.notify import instance_status_changed
from beliefs.services.receipts import receipt_revoke


def lock_instance(instance: TaskInstance) -> TaskInstance:
    """Re-read the instance, with its task class and principal, under a row lock so concurrent
    writers queue.

    Only the instance's own row is locked (`of`): the joined task class and principal are read,
    not locked, so a writer never holds a user or task-class row that an open waits for. No key
    update: inserts that refer to the instance (prompts, beliefs) need only a key share.
    """
    return _read_instance(instance.pk, None, lock=True)


def instance_with_open_prompts(
    *, pk: Any, runtime_id: int | None = None, lock: bool
) -> tuple[TaskInstance, list[Prompt]]:
    """The instance (only if `runtime_id`'s runtime opened it, when given; under
    `lock_instance`'s lock only when `lock`) and its open prompts, at most one per slot: what
    planning reads first. NotFound (404) when there is none, whether it does not exist or
    belongs to someone else.

    Two queries, not one joined: a join repeats the instance's plan and world, its largest
    columns, on every prompt's row (at 200 slots, megabytes per read).
    """
    instance = _read_instance(pk, runtime_id, lock=lock)
    return instance, open_prompts_of(instance)


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
    """The instance (the runtime's only, when given): under the lock with its task class and
    principal, without it alone and without its stored plan. NotFound when there is none."""
    params = [rows.prepare(TaskInstance, "id", pk)]
    if runtime_id is not None:
        params.append(runtime_id)
    columns = _INSTANCE_COLUMNS if lock else _UNLOCKED_COLUMNS
    found = rows.fetch(_instance_sql(by_runtime=runtime_id is not None, lock=lock), params, columns)
    if not found:
        raise NotFound("No such instance.")
    if lock:
        # Every writer of an instance takes this lock: the one place that tells its waiters
        # (on commit; a lock taken for nothing costs them a read).
        instance_changed(pk)
        return _instance_of(found[0])
    return rows.instance_of(TaskInstance, found[0], [name for _, name in _UNLOCKED_COLUMNS])


def _instance_of(values: list[Any]) -> TaskInstance:
    """The instance, its task class and its principal from `_INSTANCE_COLUMNS` values."""
    instances, classes = len(rows.concrete(TaskInstance)), len(rows.concrete(TaskClass))
    instance = rows.instance_of(TaskInstance, values[:instances])
    instance.task_class = rows.instance_of(TaskClass, values[instances : instances + classes])
    instance.principal = rows.instance_of(User, values[instances + classes :])
    return instance


_INSTANCE_COLUMNS = (*rows.concrete(TaskInstance), *rows.concrete(TaskClass), *rows.concrete(User))
# Unlocked, the instance comes alone and without its stored plan: its task class and principal
# are for the writes that only happen under the lock, and the stored plan is compared by its
# digest (either is read on first use, should anything ask).
_UNLOCKED_COLUMNS = tuple(c for c in rows.concrete(TaskInstance) if c[1] != "plan_items")


@cache
def _instance_sql(*, by_runtime: bool, lock: bool) -> str:
    """Fixed SQL (planning reads an instance on every request; see `selectors.rows`): with
    its task class and principal under the lock, alone without it."""
    col = rows.column
    columns = [col(m, n) for m, n in (_INSTANCE_COLUMNS if lock else _UNLOCKED_COLUMNS)]
    sql = f"SELECT {', '.join(columns)} FROM {rows.table(TaskInstance)}"
    if lock:
        sql += (
            f" INNER JOIN {rows.table(TaskClass)}"
            f" ON {col(TaskClass, 'id')} = {col(TaskInstance, 'task_class')}"
            f" INNER JOIN {rows.table(User)}"
            f" ON {col(User, 'id')} = {col(TaskInstance, 'principal')}"
        )
    sql += f" WHERE {col(TaskInstance, 'id')} = %s"
    if by_runtime:
        sql += f" AND {col(TaskInstance, 'runtime')} = %s"
    if lock and connection.features.has_select_for_update:
        # As `select_for_update(of=("self",), no_key=True)` writes it.
        sql += f" FOR NO KEY UPDATE OF {rows.table(TaskInstance)}"
    return sql
