"""Canonical JSON and the bindings digest: pure, shared by the server and its tests."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any


def canonical_json(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def bindings_digest(bindings: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON of the bindings (sorted keys, no spaces, UTF-8)."""
    return hashlib.sha256(canonical_json(bindings).encode("utf-8")).hexdigest()
