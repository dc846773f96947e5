"""What an answer to a prompt reads first: the instance under the lock every writer takes, found
through the prompt and its principal, with every prompt the answer and the re-plan after it look
at. Two queries of fixed SQL, which a person's every click runs: the ORM took several times the
database's time building them (`tests.oracles.answer_under_lock` is the same read through the ORM,
and `tests/services/test_read_parity.py` holds the two equal)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from django.contrib.auth.models import User
from django.db import connection
from django.db.models import Model

from beliefs.models import Belief, Prompt, PromptState, Runtime, Slot, TaskClass, TaskInstance
from beliefs.selectors import rows
from beliefs.selectors.access import Owner
from beliefs.selectors.pages import instance_sql
from beliefs.selectors.prompts import Order
from beliefs.selectors.prompts import fetch as fetch_prompts

# The prompts an answer looks at besides its own: the open ones (the re-plan reconciles them)
# and the answered ones (a receipt names who answered what).
LOOKED_AT = (PromptState.OPEN, PromptState.ANSWERED)

_LOCKED_COLUMNS: tuple[tuple[type[Model], str], ...] = (
    *rows.concrete(TaskInstance),
    *rows.concrete(TaskClass),
    *rows.concrete(User),
    *rows.concrete(Runtime),
    (Belief, "turn"),
)


_TO_ANSWER_COLUMNS: tuple[tuple[type[Model], str], ...] = (
    *rows.concrete(Prompt),
    *rows.concrete(Slot),
    (TaskInstance, "status"),
)


@dataclass(frozen=True)
class AnswerRead:
    """The instance locked, with its task class, principal and runtime attached; the prompt
    answered; `prompts`, the instance's open and answered prompts and the one answered, by id,
    each with its slot and its belief (of the belief's instance, its run number and runtime);
    `last_turn`, the highest turn of the instance's beliefs (0: none)."""

    instance: TaskInstance
    prompt: Prompt
    prompts: list[Prompt]
    last_turn: int

    def open_prompts(self) -> list[Prompt]:
        return [p for p in self.prompts if p.state == PromptState.OPEN]


@cache
def _locked_sql(owner: str) -> str:
    col = rows.column
    sql = instance_sql(
        (Runtime, "runtime"),
        ("turn", "t"),
        f"{col(TaskInstance, 'id')} = (SELECT {col(Prompt, 'instance', 'a')}"
        f" FROM {rows.table(Prompt, 'a')} WHERE {col(Prompt, 'id', 'a')} = %s) AND {owner}",
    )
    if connection.features.has_select_for_update:
        # As `select_for_update(of=("self",), no_key=True)` writes it: only the instance's row.
        sql += f" FOR NO KEY UPDATE OF {rows.table(TaskInstance)}"
    return sql


@cache
def _to_answer_sql(owner: str) -> str:
    col = rows.column
    columns = [col(m, n) for m, n in _TO_ANSWER_COLUMNS]
    return (
        f"SELECT {', '.join(columns)} FROM {rows.table(Prompt)}"
        f" INNER JOIN {rows.table(Slot)} ON {col(Slot, 'id')} = {col(Prompt, 'slot')}"
        f" INNER JOIN {rows.table(TaskInstance)}"
        f" ON {col(TaskInstance, 'id')} = {col(Prompt, 'instance')}"
        f" WHERE {col(Prompt, 'id')} = %s AND {col(Prompt, 'instance')} = %s AND {owner}"
    )


def prompt_to_answer(instance_id: Any, prompt_id: int, *, principal_id: int) -> Prompt | None:
    """The prompt of that instance, with its slot and (of its instance) its status, if
    `principal_id` is the instance's principal; else None. What a page reads to parse the
    answer a person posts, before the answer itself (`answer_under_lock`)."""
    owner = Owner.of(principal_id=principal_id)
    found = rows.fetch(
        _to_answer_sql(owner.sql()),
        [prompt_id, rows.prepare(Prompt, "instance", instance_id), owner.id],
        _TO_ANSWER_COLUMNS,
    )
    if not found:
        return None
    values = found[0]
    width = len(rows.concrete(Prompt))
    prompt = rows.instance_of(Prompt, values[:width])
    slot = rows.instance_of(Slot, values[width:-1])
    Prompt.slot.field.set_cached_value(prompt, slot)
    instance = rows.instance_of(TaskInstance, [prompt.instance_id, values[-1]], ["id", "status"])
    Prompt.instance.field.set_cached_value(prompt, instance)
    return prompt


def answer_under_lock(prompt_id: int, *, principal_id: int) -> AnswerRead | None:
    """The prompt's instance under its row lock (only the instance's row: its task class,
    principal and runtime are read, not locked), if `principal_id` is its principal; None for
    anyone else or no such prompt. The caller holds a transaction."""
    owner = Owner.of(principal_id=principal_id)
    found = rows.fetch(_locked_sql(owner.sql()), [prompt_id, owner.id], _LOCKED_COLUMNS)
    if not found:
        return None
    instance, instance.task_class, instance.principal, instance.runtime, last_turn = rows.models_of(
        found[0], (TaskInstance, TaskClass, User, Runtime)
    )
    state = rows.column(Prompt, "state")
    where = f"{state} IN (%s, %s) OR {rows.column(Prompt, 'id')} = %s"
    prompts = fetch_prompts(instance, where, [*LOOKED_AT, prompt_id], Order.MADE)
    (prompt,) = [p for p in prompts if p.pk == prompt_id]
    return AnswerRead(instance, prompt, prompts, last_turn or 0)
