"""What the instance page shows, read in two queries of fixed SQL: the instance with its task
class, principal and receipt, when its latest belief was recorded, and every prompt with its
slot and belief. The page, its live updates and the answer to each click read it
(`reference.instance_page` is the same read through the ORM, held equal by
`tests/test_read_parity.py`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

from django.contrib.auth.models import User
from django.db.models import Model

from beliefs.models import Belief, Prompt, Receipt, TaskClass, TaskInstance
from beliefs.selectors import rows
from beliefs.selectors.access import Owner
from beliefs.selectors.prompts import Order
from beliefs.selectors.prompts import fetch as fetch_prompts

_COLUMNS: tuple[tuple[type[Model], str], ...] = (
    *rows.concrete(TaskInstance),
    *rows.concrete(TaskClass),
    *rows.concrete(User),
    *rows.concrete(Receipt),
    (Belief, "created_at"),
)


@dataclass(frozen=True)
class PageRead:
    """The instance with its task class, principal and receipt attached; every prompt of it in
    the page's order (`instance_prompts`'); when its latest belief was recorded (None: none)."""

    instance: TaskInstance
    prompts: list[Prompt]
    beliefs_at: datetime | None


@cache
def _instance_sql(owner: str) -> str:
    col = rows.column
    latest = (
        f"(SELECT MAX({col(Belief, 'created_at', 'l')}) FROM {rows.table(Belief, 'l')}"
        f" WHERE {col(Belief, 'instance', 'l')} = {col(TaskInstance, 'id')})"
    )
    return (
        f"SELECT {', '.join(col(m, n) for m, n in _COLUMNS[:-1])}, {latest}"
        f" FROM {rows.table(TaskInstance)}"
        f" INNER JOIN {rows.table(TaskClass)}"
        f" ON {col(TaskClass, 'id')} = {col(TaskInstance, 'task_class')}"
        f" INNER JOIN {rows.table(User)} ON {col(User, 'id')} = {col(TaskInstance, 'principal')}"
        f" LEFT OUTER JOIN {rows.table(Receipt)}"
        f" ON {col(Receipt, 'jti')} = {col(TaskInstance, 'receipt')}"
        f" WHERE {col(TaskInstance, 'id')} = %s AND {owner}"
    )


def instance_page(instance_id: Any, *, principal_id: int) -> PageRead | None:
    """The instance page's read, if `principal_id` is the instance's principal; else None."""
    owner = Owner.of(principal_id=principal_id)
    found = rows.fetch(
        _instance_sql(owner.sql()),
        [rows.prepare(TaskInstance, "id", instance_id), owner.id],
        _COLUMNS,
    )
    if not found:
        return None
    values = found[0]
    widths = [len(rows.concrete(m)) for m in (TaskInstance, TaskClass, User, Receipt)]
    ends = [sum(widths[: i + 1]) for i in range(len(widths))]
    instance = rows.instance_of(TaskInstance, values[: ends[0]])
    instance.task_class = rows.instance_of(TaskClass, values[ends[0] : ends[1]])
    instance.principal = rows.instance_of(User, values[ends[1] : ends[2]])
    receipt = values[ends[2] : ends[3]]
    instance.receipt = rows.instance_of(Receipt, receipt) if receipt[0] is not None else None
    prompts = fetch_prompts(instance, "1 = 1", [], Order.SLOTS)
    return PageRead(instance, prompts, values[ends[3]])
