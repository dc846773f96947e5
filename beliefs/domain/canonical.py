"""Canonical JSON and the bindings digest: pure, shared by the server and its tests."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

# One encoder for every call: `json.dumps` with options builds a new one each time.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_json(data: Any) -> str:
    """Sorted keys, no spaces, non-ASCII as itself: `json.dumps(data, sort_keys=True,
    separators=(",", ":"), ensure_ascii=False)`."""
    return _CANONICAL.encode(data)


def json_digest(data: Any) -> str:
    """SHA-256 of the canonical JSON of `data` (sorted keys, no spaces, UTF-8), in hex."""
    return text_digest(canonical_json(data))


def text_digest(text: str) -> str:
    """SHA-256 of a text's UTF-8, in hex: `json_digest` of data whose canonical JSON it is."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def bindings_digest(bindings: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON of the bindings (sorted keys, no spaces, UTF-8)."""
    return json_digest(bindings)


def worlds_digest(worlds: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON of `{slot: world_ref}` over the bound irreversible slots."""
    return json_digest(worlds)


CANONICALIZATION = "RFC8785"
