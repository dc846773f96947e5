"""A prompt's content digest is the same exactly when every field's canonical JSON text is,
over random values: comparing digests is comparing the fields as their JSON texts compare."""

from __future__ import annotations

import copy
from enum import StrEnum
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from beliefs.domain.canonical import canonical_json
from beliefs.services.planning import DESIRED_FIELDS, content_digest
from tests.examples import examples

# The scalars that are easy to confuse in Python: 0, 0.0, -0.0, False, 1, 1.0, True, "1",
# None (distinct in JSON but for 0/0.0/-0.0 and 1/1.0, one number each in RFC 8785).
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


def _same_fields(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """What planning compared before prompts kept a digest: field by field, as JSON texts."""
    return all(canonical_json(a[f]) == canonical_json(b[f]) for f in DESIRED_FIELDS)


contents = st.fixed_dictionaries(dict.fromkeys(DESIRED_FIELDS, json_values))
# A content draws a value for each of the fields: ~9 ms an example, so a developer's run draws
# 100 of each (CI, at HYPOTHESIS_SCALE=3, 300).


@pytest.mark.fuzz
@settings(max_examples=examples(100), deadline=None)
@given(a=contents, b=contents)
def test_it_agrees_with_the_fields_json_on_any_two_contents(
    a: dict[str, Any], b: dict[str, Any]
) -> None:
    assert (content_digest(a) == content_digest(b)) == _same_fields(a, b)


@pytest.mark.fuzz
@settings(max_examples=examples(100), deadline=None)
@given(a=contents, data=st.data())
def test_it_agrees_with_the_fields_json_on_near_copies(a: dict[str, Any], data: Any) -> None:
    b = _twisted(copy.deepcopy(a), data.draw)
    assert (content_digest(a) == content_digest(b)) == _same_fields(a, b)


@pytest.mark.fuzz
@settings(max_examples=examples(100), deadline=None)
@given(a=contents, data=st.data())
def test_a_value_moved_to_another_field_changes_it(a: dict[str, Any], data: Any) -> None:
    """Field boundaries count: the same values under other fields are other content."""
    first, second = data.draw(st.permutations(DESIRED_FIELDS))[:2]
    b = {**a, first: a[second], second: a[first]}
    assert (content_digest(a) == content_digest(b)) == _same_fields(a, b)


class Route(StrEnum):
    ASK = "ASK"


def _content(**values: Any) -> dict[str, Any]:
    return {field: values.get(field) for field in DESIRED_FIELDS}


def test_an_enums_value_is_its_text_and_the_confusable_numbers_differ() -> None:
    assert content_digest(_content(route=Route.ASK)) == content_digest(_content(route="ASK"))
    assert content_digest(_content(world_diff=(1, [2]))) == content_digest(
        _content(world_diff=[1, (2,)])
    )
    for left, right in [(1, True), (0, False), (None, 0), ("1", 1), (1, 1.5)]:
        assert content_digest(_content(prefill=left)) != content_digest(_content(prefill=right)), (
            left,
            right,
        )
    # One JSON number each (RFC 8785 writes a double as ECMAScript does, "1" and "0"): no
    # client could tell them apart, so neither is a change of what the person saw.
    for left, right in [(1, 1.0), (0.0, -0.0), (120, 120.0)]:
        assert content_digest(_content(prefill=left)) == content_digest(_content(prefill=right))
