"""The key-by-key world diff."""

from __future__ import annotations

from beliefs.domain.worlddiff import Change, DiffEntry, flatten, has_changes, world_diff


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
