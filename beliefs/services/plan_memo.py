"""The plan a re-plan found current, remembered per process against everything it was worked
out from, so that asking again while nothing changed costs the reads alone.

A runtime that waits for a person plans again and again (`planning._plan`'s unlocked path),
and while nothing has changed each time routes every slot, diffs its world, digests what its
prompt should hold and encodes the plan, only to find the plan the instance already holds:
at 200 slots that was most of the request. What that work reads is three reads it makes anyway:
the instance, its open prompts and the query of its slots (`slot_rows_raw`: the slots, the
decisions they feed, the beliefs they bind and those beliefs' runs, as the driver gives
them). Its answer depends on nothing else but the time, and only through two facts per slot:
a world reference's `valid_until` passing and, in a slot that takes only future dates, the day
changing. So a plan found current is remembered with those three reads as its `Inputs` and
the first instant either fact could change (`until`, and at most `KEPT_FOR`); a re-plan whose
reads are equal to them, before that instant, answers with it. Any change to any value read
(a belief recorded or retired, a classification, a share, the world, a prompt answered,
revised or expired) makes the reads differ, and the plan is worked out again.

Only a plan that waits for the person is remembered (`awaiting_user`: an open blocking prompt
settles its status, and nothing else is read for it); the approval and signature gates read
tables of their own, so a plan past them is always worked out again. Nothing is remembered
across processes or written anywhere: a memo only spares this process work whose result it
has already seen. Planning under the lock (every write, every binding) never reads it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from typing import Any

from beliefs.domain.canonical import canonical_json
from beliefs.domain.meaning import valid_until
from beliefs.models import Prompt, Slot, TaskInstance
from beliefs.selectors.beliefs import OPEN_PROMPT_NAMES, SlotState
from beliefs.selectors.shapes import PlanItemJSON

# How many instances' plans a process remembers, and how many of their slots in all (the least
# recently asked for go first: a slot's reads, items and text take about 5 KB, so the slots'
# bound holds the memos under about 20 MB a process); and for how long at most, a bound on what
# an input this module did not foresee could cost.
KEPT = 256
KEPT_SLOTS = 4096
KEPT_FOR = timedelta(seconds=60)

# What an instance row is compared by: every column the unlocked read loads (the stored plan
# is deferred, and `plan_digest` stands for it), a JSON value by its canonical text.
_INSTANCE_NAMES = tuple(
    field.attname for field in TaskInstance._meta.concrete_fields if field.attname != "plan_items"
)


Inputs = tuple[tuple[Any, ...], tuple[tuple[Any, ...], ...], list[tuple[Any, ...]]]


@dataclass(frozen=True)
class Current:
    """A plan found current: its items and canonical text, what it was worked out from, and
    from when until when that holds."""

    inputs: Inputs
    since: datetime
    until: datetime
    items: list[PlanItemJSON]
    text: str


_memos: OrderedDict[Any, Current] = OrderedDict()
_lock = threading.Lock()


def inputs(
    instance: TaskInstance, open_prompts: Sequence[Prompt], raw: list[tuple[Any, ...]]
) -> Inputs:
    """What a re-plan of `instance` reads: its row, its open prompts, and its slots' query's
    rows as the driver gave them (`slot_rows_raw`). Equal exactly when the values are."""
    loaded = instance.__dict__
    row = tuple(_plain(loaded.get(name)) for name in _INSTANCE_NAMES)
    prompts = tuple(
        tuple(prompt.__dict__.get(name) for name in OPEN_PROMPT_NAMES) for prompt in open_prompts
    )
    return row, prompts, raw


def _plain(value: Any) -> Any:  # noqa: ANN401 - a column's value
    """A JSON value as its canonical text (so that `true` and `1`, equal in Python, differ)."""
    return canonical_json(value) if isinstance(value, dict | list) else value


def recall(instance_id: Any, seen: Inputs, now: datetime) -> Current | None:  # noqa: ANN401
    """The plan remembered for the instance, if it was worked out from exactly `seen` and
    still holds at `now`."""
    with _lock:
        memo = _memos.get(instance_id)
        if memo is None:
            return None
        if not memo.since <= now < memo.until or memo.inputs != seen:
            del _memos[instance_id]
            return None
        _memos.move_to_end(instance_id)
        return memo


def remember(
    instance_id: Any,  # noqa: ANN401 - a primary key
    seen: Inputs,
    states: Sequence[SlotState],
    now: datetime,
    items: list[PlanItemJSON],
    text: str,
) -> None:
    """Remember the plan found current from `seen` at `now`, with the slot states it routed
    (whose beliefs tell when it stops holding)."""
    memo = Current(seen, now, until(states, now), items, text)
    with _lock:
        _memos.pop(instance_id, None)
        _memos[instance_id] = memo
        slots = kept_slots()
        while len(_memos) > KEPT or (slots > KEPT_SLOTS and len(_memos) > 1):
            _, gone = _memos.popitem(last=False)
            slots -= len(gone.items)


def kept_slots() -> int:
    """The slots of the plans remembered."""
    return sum(len(memo.items) for memo in _memos.values())


def forget() -> None:
    """Forget every plan remembered (the tests' clean slate)."""
    with _lock:
        _memos.clear()


def until(states: Sequence[SlotState], now: datetime) -> datetime:
    """The first instant after `now` at which routing these states could answer otherwise:
    a chosen belief's world reference's `valid_until` passing, or the next day (UTC, as
    `date_in_past` counts) in a slot that takes only future dates; at most `KEPT_FOR` on."""
    ends = now + KEPT_FOR
    for state in states:
        belief = state.belief
        if belief is None:
            continue
        expires = valid_until(belief.world_ref)
        if expires is not None and now < expires < ends:
            ends = expires
        slot = state.slot
        if slot.future and slot.value_type == Slot.ValueType.DATE:
            tomorrow = datetime.combine(now.astimezone(UTC).date() + timedelta(days=1), time(0))
            ends = min(ends, tomorrow.replace(tzinfo=UTC))
    return ends
