"""An instance's prompts as the pages and an answer read them, in fixed SQL: every column of each
prompt and of its slot, and its belief as planning reads one (of the belief's instance, its run
number and runtime). A person's every click and every live page reads them; building each prompt,
slot and belief through the ORM cost several times the database's own time.

Only the read layer uses this module (`answering`, `page`); each read written with it has an
ORM twin in `tests/oracles.py`, held equal by `tests/services/test_read_parity.py`."""

from __future__ import annotations

from enum import Enum
from functools import cache
from typing import Any
from uuid import UUID

from django.db.models import Model

from beliefs.models import Belief, Prompt, Slot, TaskInstance
from beliefs.selectors import rows
from beliefs.selectors.beliefs import _CHOSEN_COLUMNS, _belief_columns, _belief_joins, _belief_of

COLUMNS: tuple[tuple[type[Model], str], ...] = (
    *rows.concrete(Prompt),
    *rows.concrete(Slot),
    *_CHOSEN_COLUMNS,
)


class Order(Enum):
    SLOTS = "slots"  # as the page shows them: in slot order, then as they were made
    MADE = "made"  # as they were made (by id)


@cache
def sql(where: str, order: Order) -> str:
    """The prompts of one instance (its id the first parameter) that meet `where` (SQL over the
    prompt's table, whose own parameters follow), in `order`."""
    col = rows.column
    columns = [col(m, n) for m, n in (*rows.concrete(Prompt), *rows.concrete(Slot))]
    columns += _belief_columns("b")
    if order is Order.SLOTS:
        ordering = f"{col(Slot, 'position')}, {col(Slot, 'id')}, {col(Prompt, 'id')}"
    else:
        ordering = col(Prompt, "id")
    return (
        f"SELECT {', '.join(columns)} FROM {rows.table(Prompt)}"
        f" INNER JOIN {rows.table(Slot)} ON {col(Slot, 'id')} = {col(Prompt, 'slot')}"
        f" LEFT OUTER JOIN {rows.table(Belief, 'b')}"
        f" ON {col(Belief, 'id', 'b')} = {col(Prompt, 'belief')}"
        f"{_belief_joins('b')}"
        f" WHERE {col(Prompt, 'instance')} = %s AND ({where}) ORDER BY {ordering}"
    )


def fetch(instance: TaskInstance, where: str, params: list[Any], order: Order) -> list[Prompt]:
    """The instance's prompts that meet `where` (with its `params`), each with its slot and
    belief attached, and the instance itself as its instance."""
    found = rows.fetch(
        sql(where, order), [rows.prepare(Prompt, "instance", instance.pk), *params], COLUMNS
    )
    prompt_width, slot_width = len(rows.concrete(Prompt)), len(rows.concrete(Slot))
    slots: dict[int, Slot] = {}
    lights: dict[UUID, TaskInstance] = {}
    out = []
    for values in found:
        prompt = rows.instance_of(Prompt, values[:prompt_width])
        Prompt.instance.field.set_cached_value(prompt, instance)
        slot_values = values[prompt_width : prompt_width + slot_width]
        slot = slots.get(slot_values[0])
        if slot is None:
            slot = slots[slot_values[0]] = rows.instance_of(Slot, slot_values)
        Prompt.slot.field.set_cached_value(prompt, slot)
        belief_values = values[prompt_width + slot_width :]
        belief = _belief_of(belief_values, lights) if belief_values[0] is not None else None
        Prompt.belief.field.set_cached_value(prompt, belief)
        out.append(prompt)
    return out
