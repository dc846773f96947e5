"""When what a value means runs out: a world reference's `valid_until`, and dates that must
lie ahead.

Pure Python, no Django. A scalar can hide that its meaning went stale (a consent's policy
version that lapsed, an execution date now in the past); these two facts let routing ask
afresh instead of binding such a value silently or listing it as an assumption.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Any

VALID_UNTIL = "valid_until"


class InvalidInstant(ValueError):
    """A `valid_until` that is not an ISO 8601 date or date-time."""


def parse_instant(text: Any) -> datetime:
    """The instant an ISO 8601 `valid_until` ends at, in UTC.

    A date-time without a zone is read as UTC; a date alone (`2026-12-31`) is valid for that
    whole day in UTC, so it ends at the next midnight."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidInstant("must be an ISO 8601 date or date-time, e.g. 2026-12-31T18:00:00Z")
    text = text.strip()
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            return datetime.combine(day + timedelta(days=1), time(0), tzinfo=UTC)
        instant = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidInstant(
            "must be an ISO 8601 date or date-time, e.g. 2026-12-31T18:00:00Z"
        ) from None
    if instant.tzinfo is None:
        instant = instant.replace(tzinfo=UTC)
    return instant.astimezone(UTC)


def valid_until(world_ref: Any) -> datetime | None:
    """When the world reference stops meaning what it said: its `valid_until`, or None where it
    names none. One that cannot be read counts as already past (the console never trusts a
    limit it cannot read; the API refuses such references as they come in)."""
    if not isinstance(world_ref, dict) or world_ref.get(VALID_UNTIL) is None:
        return None
    try:
        return parse_instant(world_ref[VALID_UNTIL])
    except InvalidInstant:
        return datetime.min.replace(tzinfo=UTC)


def meaning_expired(
    world_ref: Any, now: datetime, *, in_console: bool, acquired_at: datetime
) -> bool:
    """Has what the value referred to expired by `now`?

    A value the person gave in the console after that time stands: they answered a question
    that said what had expired, so asking them again would only ask the same thing forever."""
    until = valid_until(world_ref)
    if until is None or until > now:
        return False
    return not (in_console and acquired_at >= until)


def check_valid_until(world_ref: Any) -> str | None:
    """Why a world reference's `valid_until` is refused as input (None: it is fine or absent)."""
    if not isinstance(world_ref, dict) or world_ref.get(VALID_UNTIL) is None:
        return None
    try:
        parse_instant(world_ref[VALID_UNTIL])
    except InvalidInstant as exc:
        return f"{VALID_UNTIL} {exc}"
    return None


def date_in_past(value: Any, today: date) -> bool:
    """Is `value` a date before `today`, or no date at all? For a slot that takes only dates
    from today on: such a value is asked, not bound. An ISO 8601 date-time counts by its date."""
    if not isinstance(value, str):
        return True
    try:
        day = date.fromisoformat(value.strip()[:10])
    except ValueError:
        return True
    return day < today
