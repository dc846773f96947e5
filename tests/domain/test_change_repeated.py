"""Which typed values must be entered twice (`domain.attention.change_needs_repeat`), over
every combination of route, effective risk, value on record and typed value. No database."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from beliefs.domain.attention import change_needs_repeat, same_value, value_to_change
from beliefs.domain.policy import RiskClass, Route

ON_RECORD = "DE89370400440532013000"


@pytest.mark.parametrize(
    ("route", "risk", "recorded", "typed"),
    list(
        itertools.product(
            list(Route), list(RiskClass), ["none", "on record"], ["same", "different"]
        )
    ),
)
def test_only_a_change_of_an_irreversible_value_on_record_is_entered_twice(
    route: Route, risk: RiskClass, recorded: str, typed: str
) -> None:
    value: Any = ON_RECORD if typed == "same" else "XX00ATTACKER"
    on_record = ON_RECORD if recorded == "on record" else None
    # A CONFIRM's value on record is its pre-fill; an ASK's, the earlier value it shows.
    prefill = on_record if route in (Route.CONFIRM, Route.SURFACED) else None
    context = on_record if route is Route.ASK else None
    needed = change_needs_repeat(
        route=route, effective_risk=risk, prefill=prefill, context_value=context, value=value
    )
    irreversible = risk is RiskClass.IRREVERSIBLE
    has_record = route is Route.CONFIRM or (route is Route.ASK and on_record is not None)
    assert needed is (irreversible and has_record and not same_value(value, on_record))
    shown = value_to_change(
        route=route, effective_risk=risk, prefill=prefill, context_value=context
    )
    assert (shown is not None) is (irreversible and has_record)


def test_a_value_is_the_same_only_as_the_same_json() -> None:
    assert same_value({"a": 1, "b": [2]}, {"b": [2], "a": 1})
    assert not same_value(1, True) and not same_value(1, "1") and not same_value(None, "")
