"""`same_json` answers exactly as comparing canonical JSON texts would, over random values."""

from __future__ import annotations

import copy
from enum import StrEnum
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from beliefs.domain.canonical import canonical_json, same_json
from tests.examples import examples

# The scalars that are easy to confuse in Python and distinct in JSON: 0, 0.0, -0.0, False,
# 1, 1.0, True, "1", None.
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([0.0, -0.0, 1.0, 1.5, -2.0]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["", "1", "a", "é", "A"]),
    st.text(max_size=3),
)
keys = st.sampled_from(["a", "b", "1", ""])
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(keys, inner, max_size=3),
    ),
    max_leaves=8,
)


def _twisted(value: Any, draw: Any) -> Any:
    """A copy of `value` with, sometimes, one leaf changed into a value that is equal in
    Python but not in JSON (1 -> 1.0 -> True, 0.0 -> -0.0), or a list turned into a tuple."""
    if isinstance(value, dict):
        return {k: _twisted(v, draw) for k, v in value.items()}
    if isinstance(value, list):
        items = [_twisted(v, draw) for v in value]
        return tuple(items) if draw(st.booleans()) else items
    if draw(st.integers(0, 3)) == 0:
        if isinstance(value, bool):
            return int(value)  # True -> 1
        if isinstance(value, int) and value in (0, 1):
            return draw(st.sampled_from([float(value), bool(value)]))  # 1 -> 1.0 or True
        if isinstance(value, float) and value == 0.0:
            return -value  # 0.0 <-> -0.0
    return value


@settings(max_examples=examples(300), deadline=None)
@given(a=json_values, b=json_values)
def test_it_agrees_with_canonical_json_on_any_two_values(a: Any, b: Any) -> None:
    assert same_json(a, b) == (canonical_json(a) == canonical_json(b))


@settings(max_examples=examples(300), deadline=None)
@given(a=json_values, data=st.data())
def test_it_agrees_with_canonical_json_on_near_copies(a: Any, data: Any) -> None:
    b = _twisted(copy.deepcopy(a), data.draw)
    assert same_json(a, b) == (canonical_json(a) == canonical_json(b))
    assert same_json(b, a) == same_json(a, b)


class Route(StrEnum):
    ASK = "ASK"


def test_an_enums_value_is_its_text_and_the_confusable_numbers_differ() -> None:
    assert same_json({"route": Route.ASK}, {"route": "ASK"})
    assert same_json((1, [2]), [1, (2,)])
    for left, right in [(1, 1.0), (1, True), (0, False), (0.0, -0.0), (None, 0), ("1", 1)]:
        assert not same_json(left, right) and not same_json(right, left), (left, right)
