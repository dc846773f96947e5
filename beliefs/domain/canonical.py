"""Canonical JSON and the bindings digest: pure, shared by the server and its tests."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any


def canonical_json(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def same_json(a: Any, b: Any) -> bool:
    """`canonical_json(a) == canonical_json(b)` for JSON values (str keys, finite numbers), found
    without encoding either: planning compares every slot's prompt and the whole plan on each
    request, and encoding them cost more than the rest of a re-plan.

    As in their JSON texts, a bool is not a number, an int is not a float (1 is not 1.0) and
    -0.0 is not 0.0, while a tuple is a list and a str subclass (an enum's value) a str.
    """
    if isinstance(a, (list, tuple)):
        return (
            isinstance(b, (list, tuple))
            and len(a) == len(b)
            and all(same_json(x, y) for x, y in zip(a, b, strict=True))
        )
    if isinstance(a, dict):
        return (
            isinstance(b, dict)
            and a.keys() == b.keys()
            and all(same_json(v, b[k]) for k, v in a.items())
        )
    if isinstance(a, str):
        return isinstance(b, str) and a == b
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int):
        return isinstance(b, int) and a == b
    if isinstance(a, float):
        return isinstance(b, float) and a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return a is None and b is None


def json_digest(data: Any) -> str:
    """SHA-256 of the canonical JSON of `data` (sorted keys, no spaces, UTF-8), in hex."""
    return hashlib.sha256(canonical_json(data).encode("utf-8")).hexdigest()


def bindings_digest(bindings: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON of the bindings (sorted keys, no spaces, UTF-8)."""
    return json_digest(bindings)
