"""The attention rules as pure functions: what a confirm needs beyond the click,
when recent confirmations are habitual, and what typing a value's tail means."""

from __future__ import annotations

import itertools

import pytest

from beliefs.domain.attention import (
    Habit,
    Sample,
    Thresholds,
    acts_for,
    changed_details,
    habit_of,
    missing_acts,
    tail_matches,
    value_tail,
)
from beliefs.domain.policy import RiskClass, Route

CHANGED = [
    {"key": "holder", "change": "changed", "old": "Bob Example", "new": "B. Exampel Holdings"},
    {"key": "bank", "change": "unchanged", "old": "ABN", "new": "ABN"},
    {"key": "verified", "change": "added", "new": True},
]
UNCHANGED = [{"key": "bank", "change": "unchanged", "old": "ABN", "new": "ABN"}]
THRESHOLDS = Thresholds(window=4, kept_share=0.75, median_dwell_s=2.0)
HABITUAL = habit_of([Sample(kept=True, dwell_s=0.5)] * 4, THRESHOLDS)
NOT_HABITUAL = habit_of([Sample(kept=True, dwell_s=5.0)] * 4, THRESHOLDS)
assert HABITUAL.habitual and not NOT_HABITUAL.habitual


@pytest.mark.parametrize(
    ("route", "risk", "diff", "habit"),
    list(
        itertools.product(
            list(Route),
            list(RiskClass),
            [CHANGED, UNCHANGED, [], None],
            [HABITUAL, NOT_HABITUAL, None],
        )
    ),
)
def test_only_an_irreversible_confirm_needs_acts_and_exactly_these(
    route: Route, risk: RiskClass, diff: list | None, habit: Habit | None
) -> None:
    acts = acts_for(route=route, effective_risk=risk, world_diff=diff, habit=habit)
    guarded = route == Route.CONFIRM and risk == RiskClass.IRREVERSIBLE
    changed = diff is CHANGED
    assert acts.keys == (["holder", "verified"] if guarded and changed else [])
    assert acts.type_tail == (guarded and habit is HABITUAL)
    assert acts.any == (guarded and (changed or habit is HABITUAL))
    assert (acts.habit is not None) == acts.type_tail


ACKS = {
    "none": [],
    "some": ["holder"],
    "all": ["holder", "verified"],
    "more": ["holder", "verified", "x"],
}
TAILS = {"right": "ings", "case": " INGS ", "wrong": "ing", "missing": None, "not text": 4}


@pytest.mark.parametrize(
    ("changed", "habitual", "acked", "tail"),
    list(itertools.product([True, False], [True, False], ACKS, TAILS)),
)
def test_a_confirm_lacks_exactly_the_acts_not_given(
    changed: bool, habitual: bool, acked: str, tail: str
) -> None:
    acts = acts_for(
        route=Route.CONFIRM,
        effective_risk=RiskClass.IRREVERSIBLE,
        world_diff=CHANGED if changed else UNCHANGED,
        habit=HABITUAL if habitual else NOT_HABITUAL,
    )
    missing = missing_acts(
        acts, prefill="B. Exampel Holdings", acknowledged=ACKS[acked], typed_tail=TAILS[tail]
    )
    unacked = {"none": ["holder", "verified"], "some": ["verified"]}.get(acked, [])
    assert [d.key for d in missing.unacknowledged] == (unacked if changed else [])
    assert missing.tail == (habitual and tail not in ("right", "case"))
    assert bool(missing) == bool(missing.unacknowledged or missing.tail)


def test_an_acknowledgement_names_its_detail_exactly() -> None:
    acts = acts_for(
        route=Route.CONFIRM, effective_risk=RiskClass.IRREVERSIBLE, world_diff=CHANGED, habit=None
    )
    lacks = missing_acts(acts, prefill="x", acknowledged=["Holder", "verified "], typed_tail=None)
    assert [d.key for d in lacks.unacknowledged] == ["holder", "verified"]


def test_a_changed_detail_keeps_what_it_was_and_is() -> None:
    holder, verified = changed_details(CHANGED)
    assert holder.as_data() == {
        "key": "holder",
        "change": "changed",
        "old": "Bob Example",
        "new": "B. Exampel Holdings",
    }
    assert (verified.change, verified.old, verified.new) == ("added", None, True)
    # An entry without a change word counts as changed, as /insights/ counts it.
    assert [d.key for d in changed_details([{"key": "k", "old": 1, "new": 2}])] == ["k"]
    assert changed_details(None) == ()


@pytest.mark.parametrize(
    ("samples", "habitual"),
    [
        ([Sample(True, 0.5)] * 4, True),
        ([Sample(True, 0.5)] * 3, False),  # not a full window yet
        ([Sample(True, 0.5)] * 3 + [Sample(False, 0.5)], True),  # 75 % kept is enough
        ([Sample(True, 0.5)] * 2 + [Sample(False, 0.5)] * 2, False),  # 50 % kept
        ([Sample(True, 1.9)] * 4, True),
        ([Sample(True, 2.0)] * 4, False),  # the median must be below the threshold
        ([Sample(True, 0.5)] * 2 + [Sample(True, 9.0)] * 2, False),  # median 4.75 s
        ([Sample(True, None)] * 4, False),  # never shown on a page: says nothing about dwell
        ([Sample(True, 0.5)] * 3 + [Sample(True, None)], True),  # an unknown dwell is slow
        ([Sample(True, 0.5)] * 4 + [Sample(False, 30.0)] * 10, True),  # only the window counts
        ([Sample(False, 30.0)] * 2 + [Sample(True, 0.5)] * 4, False),  # the newest break it
    ],
)
def test_a_habit_is_a_full_window_mostly_kept_and_fast(
    samples: list[Sample], habitual: bool
) -> None:
    habit = habit_of(samples, THRESHOLDS)
    assert habit.habitual is habitual
    assert habit.looked_at == min(len(samples), THRESHOLDS.window)


def test_a_habit_says_its_figures_and_thresholds() -> None:
    assert HABITUAL.as_data() == {
        "looked_at": 4,
        "kept": 4,
        "median_dwell_s": 0.5,
        "window": 4,
        "kept_share_at_least": 0.75,
        "median_dwell_below_s": 2.0,
    }
    assert habit_of([], THRESHOLDS).kept_share is None
    assert not habit_of([], Thresholds(window=0)).habitual


@pytest.mark.parametrize(
    ("value", "tail"),
    [
        ("B. Exampel Holdings", "ings"),
        ("NL91 ABNA 0417 1643 00 ", "3 00"),
        ("abc", "abc"),
        ("Hold\u202eings\u200b", "ings"),  # hidden characters cannot be typed: not counted
        (1250, "1250"),
        (12.5, "12.5"),
        (True, "yes"),
        (False, "no"),
        ({"b": 1, "a": 2}, '":1}'),
    ],
)
def test_the_tail_is_what_a_person_can_read_and_type(value: object, tail: str) -> None:
    assert value_tail(value) == tail
    assert tail_matches(value, tail.upper())
    assert tail_matches(value, f"  {tail}  ")


def test_a_look_alike_letter_is_not_the_letter() -> None:
    assert not tail_matches("Holdingѕ", "ings")  # the last letter is Cyrillic
    assert not tail_matches("", "")  # nothing to type: no tail matches
    assert not tail_matches("abcd", None)
