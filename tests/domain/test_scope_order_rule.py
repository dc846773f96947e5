"""Rule 4 of four eyes: which scope order changes weaken the escalation guard, checked over
every pair of orders of up to four scopes (3,721 pairs), against the escalation check that
answers really go through."""

from __future__ import annotations

from itertools import permutations
from types import SimpleNamespace

import pytest

from beliefs.domain.classes import (
    Change,
    Classes,
    ScopeOrder,
    SlotClass,
    Snapshot,
    approval_reason,
    impact_of,
    scope_order_weakening,
)
from beliefs.domain.policy import RiskClass
from beliefs.services.responses import escalates

SCOPES = ("a", "b", "c", "d")
UNRANKED = "z"  # a value no order ranks (given before any order existed)
ORDERS: list[ScopeOrder] = [None] + [
    p for n in range(2, len(SCOPES) + 1) for p in permutations(SCOPES, n)
]


def typed_once(order: ScopeOrder, earlier: str, value: str) -> bool:
    """Would a person get `value` accepted by typing it once, with `earlier` granted? The
    answer must be one of the order's scopes (the service refuses any other), and it is typed
    twice when `escalates` says so: the check `responses._respond` runs."""
    if order is None:
        return True  # no order: nothing is an escalation
    if value not in order:
        return False  # refused outright
    return not escalates(SimpleNamespace(scope_order=list(order)), earlier, value)  # type: ignore[arg-type]


def lets_something_through(before: ScopeOrder, after: ScopeOrder) -> bool:
    """Is there an earlier grant a person could hold when the change is made (a scope of
    `before`, or a value no order ranks) and an answer that is typed once after the change but
    was typed twice, or refused, before it?"""
    earlier_grants = [*(before or ()), UNRANKED]
    values = [*SCOPES, UNRANKED]
    return any(
        typed_once(after, e, v) and not typed_once(before, e, v)
        for e in earlier_grants
        for v in values
    )


def removes_a_scope(before: ScopeOrder, after: ScopeOrder) -> bool:
    """A scope taken out could be put back anywhere later: removing one is a weakening too,
    though on its own it only refuses more."""
    return bool(before) and bool(after) and not set(before or ()) <= set(after or ())


def test_the_orders_cover_every_case() -> None:
    assert len(ORDERS) == 1 + 12 + 24 + 24


@pytest.mark.parametrize("before", ORDERS, ids=lambda o: "-".join(o) if o else "none")
def test_a_change_needs_a_second_classifier_exactly_when_it_weakens_the_guard(
    before: ScopeOrder,
) -> None:
    for after in ORDERS:
        why = scope_order_weakening(before, after)
        expected = lets_something_through(before, after) or removes_a_scope(before, after)
        assert (why is not None) == expected, (before, after, why)
        # The same rule, said plainly: keep the old order whole at the bottom.
        no_weaker = before is None or (after is not None and after[: len(before)] == before)
        assert (why is None) == no_weaker, (before, after, why)


@pytest.mark.parametrize(
    ("before", "after", "why"),
    [
        (("a", "b", "c"), None, "it clears the scope order a < b < c"),
        (("a", "b", "c"), ("a", "c"), "it removes b from the scope order"),
        (("a", "b"), ("b", "a"), "it puts b below a"),
        (("a", "b", "c"), ("c", "b", "a"), "it puts b below a (and 2 more pairs)"),
        (("a", "b"), ("c", "a", "b"), "it adds c below b (new scopes go above the highest)"),
        (("a", "b"), ("b", "c"), "it removes a from the scope order"),
        (
            ("a", "b", "c"),
            ("b", "d", "a"),
            "it removes c from the scope order; it puts b below a; "
            "it adds d below a (new scopes go above the highest)",
        ),
    ],
)
def test_the_reason_says_what_weakens(before: ScopeOrder, after: ScopeOrder, why: str) -> None:
    assert scope_order_weakening(before, after) == why


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (None, ("a", "b")),
        (("a", "b"), ("a", "b")),
        (("a", "b"), ("a", "b", "c")),
        (("a", "b"), ("a", "b", "c", "d")),
    ],
)
def test_setting_an_order_or_adding_scopes_at_the_top_takes_effect_at_once(
    before: ScopeOrder, after: ScopeOrder
) -> None:
    assert scope_order_weakening(before, after) is None


def _classes(order: ScopeOrder) -> Classes:
    return Classes((SlotClass("scope", RiskClass.POLICY, True, order),), ())


def test_the_impact_preview_says_a_weaker_order_waits_for_approval() -> None:
    snapshot = Snapshot(_classes(("read", "write", "admin")), 0, 0, ())
    flipped = Change("slot", "scope", "scope_order", ("admin", "write", "read"))
    impact = impact_of(snapshot, [flipped])
    assert impact.needs_approval == ("it puts write below read (and 2 more pairs)",)
    assert "second classifier" in impact.when
    appended = Change("slot", "scope", "scope_order", ("read", "write", "admin", "root"))
    assert approval_reason(snapshot.classes, appended) is None
    assert impact_of(snapshot, [appended]).needs_approval == ()
