"""Attention: what a confirmation asks of a person beyond one click, as pure data.

Two acts make the person read the content rather than press a button by habit:
- an irreversible CONFIRM whose world diff is not empty is confirmed only once the person has
  acknowledged each changed detail, named;
- when a person's recent irreversible confirmations look habitual (mostly kept unchanged, and
  fast), the next ones ask the person to type the last characters of the value, until the
  pattern breaks.

Only a confirm needs them: an edit is typed, which is already an act on the content.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from statistics import median
from typing import Any

from beliefs.domain.canonical import canonical_json
from beliefs.domain.policy import RiskClass, Route
from beliefs.domain.reveal import is_hidden

# How many characters of the value a stronger act types: the last ones, read off the value.
TAIL_LENGTH = 4


# --- a changed detail, named ----------------------------------------------------------------


@dataclass(frozen=True)
class ChangedDetail:
    """One key of a world diff that is not unchanged: what the person acknowledges."""

    key: str
    change: str  # changed, added or removed
    old: Any = None
    new: Any = None

    def as_data(self) -> dict[str, Any]:
        return {"key": self.key, "change": self.change, "old": self.old, "new": self.new}


def changed_details(world_diff: Iterable[dict[str, Any]] | None) -> tuple[ChangedDetail, ...]:
    """The entries of a world diff a person must acknowledge: every one that is not unchanged
    (an entry without a "change" counts as changed, as the insights count it)."""
    details = []
    for entry in world_diff or []:
        change = entry.get("change", "changed")
        if change == "unchanged":
            continue
        details.append(
            ChangedDetail(
                key=str(entry.get("key")),
                change=str(change),
                old=entry.get("old"),
                new=entry.get("new"),
            )
        )
    return tuple(details)


# --- habituation ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Thresholds:
    """When recent confirmations count as habitual (settings `CONSOLE_HABIT_*`)."""

    window: int = 20  # the latest irreversible confirmations looked at
    kept_share: float = 0.9  # at least this share kept the value on record ...
    median_dwell_s: float = 2.0  # ... and their median dwell is below this


@dataclass(frozen=True)
class Sample:
    """One answered irreversible confirmation: kept the value on record (confirm) or not
    (edit), and seconds from shown to answered (None when it was never shown on a page)."""

    kept: bool
    dwell_s: float | None


@dataclass(frozen=True)
class Habit:
    """A person's latest irreversible confirmations, judged."""

    thresholds: Thresholds
    looked_at: int  # confirmations in the window (at most thresholds.window)
    kept: int
    median_dwell_s: float | None  # None when none in the window was shown on a page

    @property
    def habitual(self) -> bool:
        """A full window, mostly kept, and fast. A confirmation that was never shown on a page
        (answered through the API) says nothing about dwell and counts as slow."""
        t = self.thresholds
        return (
            self.looked_at >= t.window > 0
            and self.kept >= t.kept_share * self.looked_at
            and self.median_dwell_s is not None
            and self.median_dwell_s < t.median_dwell_s
        )

    @property
    def kept_share(self) -> float | None:
        return self.kept / self.looked_at if self.looked_at else None

    def as_data(self) -> dict[str, Any]:
        """What the audit records with a change of friction: the figures and the thresholds."""
        t = self.thresholds
        dwell = self.median_dwell_s
        return {
            "looked_at": self.looked_at,
            "kept": self.kept,
            "median_dwell_s": None if dwell is None else round(dwell, 3),
            "window": t.window,
            "kept_share_at_least": t.kept_share,
            "median_dwell_below_s": t.median_dwell_s,
        }


def habit_of(samples: Sequence[Sample], thresholds: Thresholds) -> Habit:
    """The habit shown by the latest samples, newest first (only the first `window` count)."""
    window = list(samples[: max(thresholds.window, 0)])
    dwell = [s.dwell_s if s.dwell_s is not None else float("inf") for s in window]
    middle = median(dwell) if dwell else None
    return Habit(
        thresholds=thresholds,
        looked_at=len(window),
        kept=sum(1 for s in window if s.kept),
        median_dwell_s=None if middle is None or middle == float("inf") else middle,
    )


# --- what a confirm needs -------------------------------------------------------------------


def tail_text(value: Any) -> str:
    """The value as a person reads and types it, without what cannot be typed (hidden
    characters, surrounding spaces): text as it is, anything else as compact JSON."""
    if isinstance(value, bool):
        text = "yes" if value else "no"
    elif isinstance(value, str):
        text = value
    else:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return "".join(c for c in text if not is_hidden(c)).strip()


def value_tail(value: Any) -> str:
    """The last TAIL_LENGTH characters of the value (all of it when shorter)."""
    return tail_text(value)[-TAIL_LENGTH:]


def tail_matches(value: Any, typed: Any) -> bool:
    """Does what was typed match the value's last characters? Case and surrounding spaces do
    not matter; every other character does (a look-alike letter is not the letter)."""
    if not isinstance(typed, str):
        return False
    expected = value_tail(value)
    return bool(expected) and typed.strip().casefold() == expected.casefold()


@dataclass(frozen=True)
class Acts:
    """What confirming a prompt needs beyond one click after the delay."""

    acknowledge: tuple[ChangedDetail, ...] = ()  # each changed detail, named
    type_tail: bool = False  # type the value's last characters (friction)
    habit: Habit | None = field(default=None, compare=False)  # why friction is raised

    @property
    def any(self) -> bool:
        return bool(self.acknowledge) or self.type_tail

    @property
    def keys(self) -> list[str]:
        return [d.key for d in self.acknowledge]


NO_ACTS = Acts()


def acts_for(
    *,
    route: str,
    effective_risk: str,
    world_diff: Iterable[dict[str, Any]] | None,
    habit: Habit | None,
) -> Acts:
    """The acts a confirm of this prompt needs: only an irreversible CONFIRM needs any; its
    changed details are acknowledged, and under a habitual pattern the value's tail is typed."""
    if route != Route.CONFIRM or effective_risk != RiskClass.IRREVERSIBLE:
        return NO_ACTS
    habitual = habit is not None and habit.habitual
    return Acts(
        acknowledge=changed_details(world_diff),
        type_tail=habitual,
        habit=habit if habitual else None,
    )


@dataclass(frozen=True)
class Missing:
    """What a confirm lacked: the changed details not acknowledged, and whether the typed tail
    was missing or wrong."""

    unacknowledged: tuple[ChangedDetail, ...] = ()
    tail: bool = False

    def __bool__(self) -> bool:
        return bool(self.unacknowledged) or self.tail


def missing_acts(
    acts: Acts, *, prefill: Any, acknowledged: Collection[str], typed_tail: Any
) -> Missing:
    """What a confirm with these acknowledgements and this typed tail still lacks. Keys are
    compared exactly: an acknowledgement names the detail it acknowledges."""
    given = {k for k in acknowledged if isinstance(k, str)}
    return Missing(
        unacknowledged=tuple(d for d in acts.acknowledge if d.key not in given),
        tail=acts.type_tail and not tail_matches(prefill, typed_tail),
    )


# --- a change typed twice -------------------------------------------------------------------


def value_to_change(
    *, route: str, effective_risk: str, prefill: Any, context_value: Any
) -> tuple[Any] | None:
    """The value on record that a typed answer to this prompt would change, as `(value,)`, where
    changing it must be entered twice; None where a typed answer is entered once.

    Only an irreversible prompt asks for it. Its value on record is a CONFIRM's pre-filled
    value, or the earlier value an ASK shows as context (R3, R5); a blank ASK has none (its
    first answer is no change of anything the person was shown), so it is typed once."""
    if effective_risk != RiskClass.IRREVERSIBLE:
        return None
    if route == Route.CONFIRM:
        return (prefill,)
    if route == Route.ASK and context_value is not None:
        return (context_value,)
    return None


def same_value(one: Any, other: Any) -> bool:
    """Two values are the same when their canonical JSON is (so 1 is not true, nor "1")."""
    return canonical_json(one) == canonical_json(other)


def change_needs_repeat(
    *, route: str, effective_risk: str, prefill: Any, context_value: Any, value: Any
) -> bool:
    """Whether `value`, typed for this prompt, changes a value on record that a change must be
    entered twice for (`value_to_change`)."""
    on_record = value_to_change(
        route=route, effective_risk=effective_risk, prefill=prefill, context_value=context_value
    )
    return on_record is not None and not same_value(value, on_record[0])
