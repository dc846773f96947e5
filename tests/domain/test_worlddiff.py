"""The key-by-key world diff."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from beliefs.domain.worlddiff import Change, DiffEntry, flatten, has_changes, world_diff
from tests.examples import examples


def _changes(old: dict | None, new: dict | None) -> dict[str, Change]:
    return {entry.key: entry.change for entry in world_diff(old, new)}


def test_it_marks_an_added_key() -> None:
    entries = world_diff({"scope": "email"}, {"scope": "email", "date": "2025-01-01"})
    assert entries == [
        DiffEntry("date", None, "2025-01-01", Change.ADDED),
        DiffEntry("scope", "email", "email", Change.UNCHANGED),
    ]
    assert has_changes(entries)


def test_it_marks_a_removed_key() -> None:
    entries = world_diff({"scope": "email", "date": "2025-01-01"}, {"scope": "email"})
    assert DiffEntry("date", "2025-01-01", None, Change.REMOVED) in entries


def test_it_marks_a_changed_key_with_both_sides() -> None:
    entries = world_diff({"policy_version": "3"}, {"policy_version": "4"})
    assert entries == [DiffEntry("policy_version", "3", "4", Change.CHANGED)]
    assert entries[0].to_dict() == {
        "key": "policy_version",
        "old": "3",
        "new": "4",
        "change": "changed",
    }


def test_it_reports_nothing_changed_for_an_equal_world() -> None:
    world = {"scope": "email", "meta": {"version": 3, "tags": ["a", "b"]}}
    entries = world_diff(world, dict(world))
    assert entries
    assert not has_changes(entries)
    assert {e.change for e in entries} == {Change.UNCHANGED}


def test_it_sorts_keys() -> None:
    keys = [e.key for e in world_diff({"b": 1, "a": 1, "c": 1}, {"c": 1, "a": 2})]
    assert keys == ["a", "b", "c"]


def test_it_flattens_nested_keys_to_dotted_paths() -> None:
    old = {"counterparty": {"entity": {"id": "LEI-1", "jurisdiction": "DE"}, "name": "ACME"}}
    new = {"counterparty": {"entity": {"id": "LEI-2", "jurisdiction": "DE"}, "name": "ACME"}}
    assert _changes(old, new) == {
        "counterparty.entity.id": Change.CHANGED,
        "counterparty.entity.jurisdiction": Change.UNCHANGED,
        "counterparty.name": Change.UNCHANGED,
    }


def test_it_keeps_an_empty_nested_object_as_a_leaf() -> None:
    assert flatten({"a": {}, "b": {"c": 1}}) == {"a": {}, "b.c": 1}
    assert _changes({"a": {}}, {"a": {"x": 1}}) == {"a": Change.REMOVED, "a.x": Change.ADDED}


def test_it_compares_a_scalar_replaced_by_an_object() -> None:
    assert _changes({"scope": "email"}, {"scope": {"kind": "email"}}) == {
        "scope": Change.REMOVED,
        "scope.kind": Change.ADDED,
    }


def test_it_has_nothing_to_compare_when_either_side_is_missing() -> None:
    assert world_diff(None, {"a": 1}) == []
    assert world_diff({"a": 1}, None) == []
    assert world_diff(None, None) == []


def test_it_lists_every_key_of_an_empty_side() -> None:
    assert _changes({}, {"a": 1}) == {"a": Change.ADDED}
    assert _changes({"a": 1}, {}) == {"a": Change.REMOVED}
    assert world_diff({}, {}) == []


def test_it_tells_a_bool_from_an_int() -> None:
    assert _changes({"consent": 1}, {"consent": True}) == {"consent": Change.CHANGED}
    assert _changes({"consent": False}, {"consent": 0}) == {"consent": Change.CHANGED}
    assert _changes({"consent": True}, {"consent": True}) == {"consent": Change.UNCHANGED}


def test_it_treats_one_and_one_point_zero_as_the_same_number() -> None:
    assert _changes({"amount": 1}, {"amount": 1.0}) == {"amount": Change.UNCHANGED}


def test_it_tells_a_bool_from_an_int_inside_lists_and_objects_in_lists() -> None:
    assert _changes({"flags": [1, 0]}, {"flags": [True, False]}) == {"flags": Change.CHANGED}
    assert _changes({"rows": [{"ok": 1}]}, {"rows": [{"ok": True}]}) == {"rows": Change.CHANGED}
    assert _changes({"rows": [{"ok": True}]}, {"rows": [{"ok": True}]}) == {
        "rows": Change.UNCHANGED
    }


def test_it_tells_null_from_a_missing_key() -> None:
    assert _changes({"date": None}, {}) == {"date": Change.REMOVED}
    assert _changes({}, {"date": None}) == {"date": Change.ADDED}
    assert _changes({"date": None}, {"date": None}) == {"date": Change.UNCHANGED}


def test_it_does_not_confuse_a_dotted_key_with_a_nested_one() -> None:
    # {"a.b": 1} and {"a": {"b": 1}} are different worlds; the diff must not call them equal,
    # nor let one key hide the other when both are present.
    assert has_changes(world_diff({"a.b": 1}, {"a": {"b": 1}}))
    both = flatten({"a.b": 1, "a": {"b": 2}})
    assert len(both) == 2
    assert sorted(both.values()) == [1, 2]


def test_it_quotes_a_key_that_contains_a_dot() -> None:
    entries = world_diff({"v1.2": {"ok": True}}, {"v1.2": {"ok": False}})
    assert [e.key for e in entries] == ['"v1.2".ok']


def _reference(old: dict[str, Any], new: dict[str, Any]) -> list[tuple[str, Any, Any, str]]:
    """The diff as its docstring states it, written plainly: every leaf path of either side,
    sorted, with how it changed (JSON equality: 1 is not True, 1 is 1.0)."""

    def leaves(obj: dict[str, Any], prefix: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in obj.items():
            segment = json.dumps(key, ensure_ascii=False) if "." in key or key[:1] == '"' else key
            if isinstance(value, dict) and value:
                out.update(leaves(value, prefix + segment + "."))
            else:
                out[prefix + segment] = value
        return out

    def equal(a: Any, b: Any) -> bool:
        if isinstance(a, bool) or isinstance(b, bool):
            return type(a) is type(b) and a == b
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            return a == b
        if isinstance(a, list) and isinstance(b, list):
            return len(a) == len(b) and all(map(equal, a, b))
        if isinstance(a, dict) and isinstance(b, dict):
            return set(a) == set(b) and all(equal(a[k], b[k]) for k in a)
        return type(a) is type(b) and a == b

    before, after = leaves(old, ""), leaves(new, "")
    entries = []
    for key in sorted(set(before) | set(after)):
        if key not in before:
            entries.append((key, None, after[key], "added"))
        elif key not in after:
            entries.append((key, before[key], None, "removed"))
        else:
            change = "unchanged" if equal(before[key], after[key]) else "changed"
            entries.append((key, before[key], after[key], change))
    return entries


_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 2),
    st.sampled_from([0.0, 1.0, 2.5]),
    st.text(max_size=2),
)
_keys = st.sampled_from(["a", "b", "a.b", '"q', "", "é"])
_worlds = st.dictionaries(
    _keys,
    st.recursive(
        _leaves,
        lambda inner: st.one_of(
            st.lists(inner, max_size=2), st.dictionaries(_keys, inner, max_size=2)
        ),
        max_leaves=5,
    ),
    max_size=4,
)


@pytest.mark.fuzz
@settings(max_examples=examples(300), deadline=None)
@given(old=_worlds, new=_worlds)
def test_it_agrees_with_a_plain_reading_of_its_rule(
    old: dict[str, Any], new: dict[str, Any]
) -> None:
    got = [(e.key, e.old, e.new, e.change.value) for e in world_diff(old, new)]
    assert got == _reference(old, new)
    assert [e.to_dict() for e in world_diff(old, new)] == [
        {"key": k, "old": o, "new": n, "change": c} for k, o, n, c in got
    ]
