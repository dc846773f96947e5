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
from beliefs.services.notify import instance_status_changed


def lock_instance(instance: TaskInstance) -> TaskInstance:
    """Re-read the instance, with its task class and principal, under a row lock so concurrent
    writers queue.

    Only the instance's own row is locked (`of`): the joined task class and principal are read,
    not locked, so a writer never holds a user or task-class row that an open waits for. No key
    update: inserts that refer to the instance (prompts, beliefs) need only a key share.
    """
    found = rows.fetch(
        _instance_sql(by_runtime=False, lock=True),
        [rows.prepare(TaskInstance, "id", instance.pk)],
        _INSTANCE_COLUMNS,
    )
    if not found:
        raise NotFound("No such instance.")
    return _instance_of(found[0])


def instance_with_open_prompts(
    *, pk: Any, runtime_id: int | None = None, lock: bool
) -> tuple[TaskInstance, list[Prompt]]:
    """The instance (only if `runtime_id`'s runtime opened it, when given; under
    `lock_instance`'s lock only when `lock`) with its open prompts, at most one per slot, in
    one query: what planning reads first. NotFound (404) when there is none, whether it does
    not exist or belongs to someone else."""
    params = [PromptState.OPEN, rows.prepare(TaskInstance, "id", pk)]
    if runtime_id is not None:
        params.append(runtime_id)
    sql = _instance_sql(by_runtime=runtime_id is not None, lock=lock, with_open_prompts=True)
    # Unlocked, the instance comes alone: its task class and principal are for the writes that
    # only ever happen under the lock (and would be loaded on first use).
    columns = _INSTANCE_COLUMNS if lock else rows.concrete(TaskInstance)
    found = rows.fetch_one_with_many(sql, params, columns, rows.concrete(Prompt))
    if found is None:
        raise NotFound("No such instance.")
    values, prompts = found
    instance = _instance_of(values) if lock else rows.instance_of(TaskInstance, values)
    return instance, [rows.instance_of(Prompt, row) for row in prompts]


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


def _instance_of(values: list[Any]) -> TaskInstance:
    """The instance, its task class and its principal from `_INSTANCE_COLUMNS` values."""
    instances, classes = len(rows.concrete(TaskInstance)), len(rows.concrete(TaskClass))
    instance = rows.instance_of(TaskInstance, values[:instances])
    instance.task_class = rows.instance_of(TaskClass, values[instances : instances + classes])
    instance.principal = rows.instance_of(User, values[instances + classes :])
    return instance


_INSTANCE_COLUMNS = (*rows.concrete(TaskInstance), *rows.concrete(TaskClass), *rows.concrete(User))


@cache
def _instance_sql(*, by_runtime: bool, lock: bool, with_open_prompts: bool = False) -> str:
    """Fixed SQL (planning reads an instance on every request; see `selectors.rows`)."""
    col = rows.column
    related = lock or not with_open_prompts  # see `instance_with_open_prompts`
    columns = [
        col(m, n) for m, n in (_INSTANCE_COLUMNS if related else rows.concrete(TaskInstance))
    ]
    if with_open_prompts:
        columns += [col(m, n) for m, n in rows.concrete(Prompt)]
    sql = f"SELECT {', '.join(columns)} FROM {rows.table(TaskInstance)}"
    if related:
        sql += (
            f" INNER JOIN {rows.table(TaskClass)}"
            f" ON {col(TaskClass, 'id')} = {col(TaskInstance, 'task_class')}"
            f" INNER JOIN {rows.table(User)}"
            f" ON {col(User, 'id')} = {col(TaskInstance, 'principal')}"
        )
    if with_open_prompts:
        sql += (
            f" LEFT OUTER JOIN {rows.table(Prompt)}"
            f" ON {col(Prompt, 'instance')} = {col(TaskInstance, 'id')}"
            f" AND {col(Prompt, 'state')} = %s"
        )
    sql += f" WHERE {col(TaskInstance, 'id')} = %s"
    if by_runtime:
        sql += f" AND {col(TaskInstance, 'runtime')} = %s"
    if with_open_prompts:
        sql += f" ORDER BY {col(Prompt, 'id')}"
    if lock and connection.features.has_select_for_update:
        # As `select_for_update(of=("self",), no_key=True)` writes it.
        sql += f" FOR NO KEY UPDATE OF {rows.table(TaskInstance)}"
    return sql
