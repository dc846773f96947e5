"""The bindings digest, computed exactly as the console does."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from typing import Any

from console_client.errors import DigestMismatch


def canonical_json(data: Any) -> str:
    """Sorted keys, no spaces, non-ASCII kept as is (hashed as UTF-8)."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def bindings_digest(bindings: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of the canonical JSON of the bindings."""
    return hashlib.sha256(canonical_json(bindings).encode("utf-8")).hexdigest()


def verify_bindings(bindings: Mapping[str, Any], digest: str | None) -> dict[str, Any]:
    """Return the bindings if they hash to `digest`; raise `DigestMismatch` otherwise."""
    if not digest:
        raise DigestMismatch("no digest to check the bindings against")
    actual = bindings_digest(bindings)
    if not hmac.compare_digest(actual, digest):
        raise DigestMismatch(f"bindings hash to {actual}, the console sent {digest}")
    return dict(bindings)
