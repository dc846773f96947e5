"""Key-by-key comparison of a belief's world reference with the world now.

Pure Python. Nested objects are flattened to dotted paths; lists and scalars are leaves.
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Any, NamedTuple


class Change(StrEnum):
    ADDED = "added"
    REMOVED = "removed"
    CHANGED = "changed"
    UNCHANGED = "unchanged"


class DiffEntry(NamedTuple):
    """One key of the diff. A named tuple, not a frozen dataclass: a plan makes a few per slot,
    and a frozen dataclass sets each field through `object.__setattr__`."""

    key: str
    old: Any
    new: Any
    change: Change

    def to_dict(self) -> dict[str, Any]:
        # Written out rather than `_asdict`: the values are only ever serialised. A `Change` is
        # a str enum, so it is its own value (and reads back as one from JSON).
        return {"key": self.key, "old": self.old, "new": self.new, "change": self.change}


_MISSING = object()


def flatten(obj: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """{"a": {"b": 1}} -> {"a.b": 1}; an empty nested object stays a leaf."""
    flat: dict[str, Any] = {}
    _flatten_into(flat, obj, prefix)
    return flat


def _flatten_into(flat: dict[str, Any], obj: dict[str, Any], prefix: str) -> None:
    for key, value in obj.items():
        text = key if type(key) is str else str(key)
        # A key that itself contains a dot (or starts with a quote) is written JSON-quoted, so
        # that {"a.b": 1} and {"a": {"b": 1}} flatten to different paths and neither can hide
        # the other.
        if "." in text or text.startswith('"'):
            text = json.dumps(text, ensure_ascii=False)
        path = prefix + text
        if value and isinstance(value, dict):
            _flatten_into(flat, value, path + ".")
        else:
            flat[path] = value


def _same(a: Any, b: Any) -> bool:
    # JSON equality: 1 and True are different values, 1 and 1.0 are the same number; this
    # holds inside lists and the objects in them too (Python's == says [1] == [True]).
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


def world_diff(old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[DiffEntry]:
    """Every key of either side, sorted, with how it changed.

    With no reference, or no statement of the world now, there is nothing to compare: [].
    """
    return [DiffEntry(**entry) for entry in world_diff_json(old, new)]


def world_diff_json(old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[dict[str, Any]]:
    """`world_diff`'s entries as the JSON that plans and prompts hold (`DiffEntry.to_dict`),
    made directly: planning makes a few per slot."""
    if old is None or new is None:
        return []
    before, after = flatten(old), flatten(new)
    entries = []
    for key in sorted(before.keys() | after.keys()):
        o, n = before.get(key, _MISSING), after.get(key, _MISSING)
        if o is _MISSING:
            entries.append({"key": key, "old": None, "new": n, "change": Change.ADDED})
        elif n is _MISSING:
            entries.append({"key": key, "old": o, "new": None, "change": Change.REMOVED})
        elif _same(o, n):
            entries.append({"key": key, "old": o, "new": n, "change": Change.UNCHANGED})
        else:
            entries.append({"key": key, "old": o, "new": n, "change": Change.CHANGED})
    return entries


def has_changes(entries: list[DiffEntry]) -> bool:
    return any(entry.change is not Change.UNCHANGED for entry in entries)


def current_value(value: Any, entries: list[dict[str, Any]]) -> Any:
    """The world's current value for a value that a changed detail of its world stated: the
    `new` of the first changed entry whose `old` was the value itself (a registry's LEI that
    the person kept after the registry moved on); None when no changed detail stated it (a
    consent whose scope grew has no "current value" of its own)."""
    for entry in entries:
        if entry.get("change") != Change.CHANGED:
            continue
        old, new = entry.get("old"), entry.get("new")
        if new is not None and _same(old, value) and not _same(new, value):
            return new
    return None
