"""What the instance page shows: the instance with its task class, principal and receipt, when
its latest belief was recorded, and every prompt with its slot and belief (`instance_page`); the
decisions it restates (`instance_decisions`); once it is finished, the next instance waiting for
the person (`next_waiting`). The page, its live updates and the answer to each click read the
first two, and an answer that finishes the instance the third, all in fixed SQL (named, with
their figures, in the read layer's docstring; their ORM versions are in `tests/oracles.py`,
held equal by `tests/services/test_read_parity.py`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

from django.contrib.auth.models import User
from django.db.models import Model

from beliefs.models import (
    Belief,
    Decision,
    InstanceStatus,
    Prompt,
    PromptState,
    Receipt,
    Slot,
    TaskClass,
    TaskInstance,
)
from beliefs.selectors import rows
from beliefs.selectors.access import Owner, owned_rows
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


def instance_sql(related: tuple[type[Model], str], last: tuple[str, str], where: str) -> str:
    """SQL for one instance with every column of it, its task class, its principal and the
    `related` model its field names (left joined), then the highest value of one column of
    its beliefs (`last`: the column, and its alias), WHERE `where`."""
    col = rows.column
    model, field = related
    column, alias = last
    columns = [*rows.concrete(TaskInstance), *rows.concrete(TaskClass), *rows.concrete(User)]
    columns += rows.concrete(model)
    highest = (
        f"(SELECT MAX({col(Belief, column, alias)}) FROM {rows.table(Belief, alias)}"
        f" WHERE {col(Belief, 'instance', alias)} = {col(TaskInstance, 'id')})"
    )
    return (
        f"SELECT {', '.join(col(m, n) for m, n in columns)}, {highest}"
        f" FROM {rows.table(TaskInstance)}"
        f" INNER JOIN {rows.table(TaskClass)}"
        f" ON {col(TaskClass, 'id')} = {col(TaskInstance, 'task_class')}"
        f" INNER JOIN {rows.table(User)} ON {col(User, 'id')} = {col(TaskInstance, 'principal')}"
        f" LEFT OUTER JOIN {rows.table(model)}"
        f" ON {col(model, model._meta.pk.attname)} = {col(TaskInstance, field)}"
        f" WHERE {where}"
    )


@cache
def _instance_sql(owner: str) -> str:
    where = f"{rows.column(TaskInstance, 'id')} = %s AND {owner}"
    return instance_sql((Receipt, "receipt"), ("created_at", "l"), where)


def instance_page(instance_id: Any, *, principal_id: int) -> PageRead | None:
    """The instance page's read, if `principal_id` is the instance's principal; else None."""
    found = owned_rows(_instance_sql, instance_id, Owner.of(principal_id=principal_id), _COLUMNS)
    if not found:
        return None
    instance, instance.task_class, instance.principal, instance.receipt, beliefs_at = (
        rows.models_of(found[0], (TaskInstance, TaskClass, User, Receipt))
    )
    prompts = fetch_prompts(instance, "1 = 1", [], Order.SLOTS)
    return PageRead(instance, prompts, beliefs_at)


@dataclass(frozen=True)
class DecisionView:
    """A decision as the pages restate it: its key, its label and the keys of its slots."""

    key: str
    label: str
    slot_keys: frozenset[str]


@cache
def _decisions_sql() -> str:
    col = rows.column
    through: type[Model] = Decision.slots.through
    return (
        f"SELECT {col(Decision, 'id')}, {col(Decision, 'key')}, {col(Decision, 'label')},"
        f" {col(Slot, 'key')} FROM {rows.table(Decision)}"
        f" LEFT OUTER JOIN {rows.table(through)}"
        f" ON {col(through, 'decision')} = {col(Decision, 'id')}"
        f" LEFT OUTER JOIN {rows.table(Slot)} ON {col(Slot, 'id')} = {col(through, 'slot')}"
        f" WHERE {col(Decision, 'task_class')} = %s ORDER BY {col(Decision, 'id')}"
    )


def instance_decisions(instance: TaskInstance) -> list[DecisionView]:
    """The decisions of the instance's task class, each with its slots' keys, in declared
    order (one query): what the pages restate and check an answer against."""
    found = rows.fetch(
        _decisions_sql(),
        [instance.task_class_id],
        ((Decision, "id"), (Decision, "key"), (Decision, "label"), (Slot, "key")),
    )
    decisions: dict[int, tuple[str, str, set[str]]] = {}
    for pk, key, label, slot_key in found:
        _, _, keys = decisions.setdefault(pk, (key, label, set()))
        if slot_key is not None:
            keys.add(slot_key)
    return [DecisionView(key, label, frozenset(keys)) for key, label, keys in decisions.values()]


_NEXT_COLUMNS = (*rows.concrete(TaskInstance), *rows.concrete(TaskClass))


@cache
def _next_waiting_sql() -> str:
    """`TaskInstanceQuerySet.waiting` of one person, one instance left out, the newest first:
    waiting for them (an answer, or a signature not yet due) with no blocking prompt past its
    time (`overdue_q`)."""
    col = rows.column
    overdue = (
        f"SELECT 1 FROM {rows.table(Prompt, 'p')}"
        f" WHERE {col(Prompt, 'instance', 'p')} = {col(TaskInstance, 'id')}"
        f" AND {col(Prompt, 'blocking', 'p')} AND {col(Prompt, 'state', 'p')} = %s"
        f" AND {col(Prompt, 'expires_at', 'p')} <= %s"
    )
    status, due = col(TaskInstance, "status"), col(TaskInstance, "signature_due_at")
    waiting = ", ".join(["%s"] * len(InstanceStatus.waiting_for_person()))
    return (
        f"SELECT {', '.join(col(m, n) for m, n in _NEXT_COLUMNS)} FROM {rows.table(TaskInstance)}"
        f" INNER JOIN {rows.table(TaskClass)}"
        f" ON {col(TaskClass, 'id')} = {col(TaskInstance, 'task_class')}"
        f" WHERE {col(TaskInstance, 'principal')} = %s AND {status} IN ({waiting})"
        f" AND NOT EXISTS ({overdue})"
        f" AND NOT ({status} = %s AND {due} IS NOT NULL AND {due} <= %s)"
        f" AND {col(TaskInstance, 'id')} <> %s"
        f" ORDER BY {col(TaskInstance, 'created_at')} DESC LIMIT 1"
    )


def next_waiting(user: User, now: datetime, after: TaskInstance) -> TaskInstance | None:
    """The instance to go to once `after` is finished: the newest other one still waiting for
    this person (the inbox's first row, `after` left out), with its task class (of the
    instance itself, what the link to it shows: its id and run number)."""
    at = rows.prepare(Prompt, "expires_at", now)
    params = [
        user.pk,
        *sorted(InstanceStatus.waiting_for_person()),
        PromptState.OPEN,
        at,
        InstanceStatus.AWAITING_SIGNATURE,
        rows.prepare(TaskInstance, "signature_due_at", now),
        rows.prepare(TaskInstance, "id", after.pk),
    ]
    found = rows.fetch(_next_waiting_sql(), params, _NEXT_COLUMNS)
    if not found:
        return None
    instance, instance.task_class = rows.models_of(found[0], (TaskInstance, TaskClass))
    return instance
