"""Parsing of untrusted input that the services still take as plain data."""

from __future__ import annotations

from typing import Any

from beliefs.domain.policy import Source
from beliefs.errors import field_error

MAX_KEY_LENGTH = 200
MAX_TEXT_LENGTH = 2000


def require_key(field: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise field_error(field, "must be a non-empty string")
    if len(value) > MAX_KEY_LENGTH:
        raise field_error(field, f"must be at most {MAX_KEY_LENGTH} characters")
    return value.strip()


def optional_text(field: str, value: Any, *, limit: int = MAX_TEXT_LENGTH) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise field_error(field, "must be a string")
    if len(value) > limit:
        raise field_error(field, f"must be at most {limit} characters")
    return value


def world_object(field: str, value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise field_error(field, "must be a JSON object or null")
    return value


def world_per_slot(field: str, world: dict[str, Any]) -> dict[str, Any]:
    """The world is {slot_key: {...}}: each slot's statement is an object, diffed key by key."""
    for slot_key, slot_world in world.items():
        if not isinstance(slot_world, dict):
            raise field_error(f"{field}.{slot_key}", "must be a JSON object")
    return world


def parse_source(field: str, value: Any) -> Source:
    try:
        return Source(value)
    except ValueError:
        allowed = ", ".join(s.value for s in Source)
        raise field_error(field, f"must be one of {allowed}") from None


def parse_turn(field: str, value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**31:
        raise field_error(field, "must be a whole number from 0 to 2147483647")
    return value
