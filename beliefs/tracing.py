"""W3C Trace Context: the `traceparent` a request came with (or a fresh one), carried into what
it causes. A runtime that sends `traceparent` with its calls finds the same trace id on the
webhooks they cause (a new parent id per hop, as the specification asks) and in the console's
JSON log lines."""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")
_current: ContextVar[str | None] = ContextVar("traceparent", default=None)


def parse(header: str | None) -> str | None:
    """The header when it is a valid version-00 traceparent (all-zero ids are invalid); else
    None."""
    match = _TRACEPARENT.match((header or "").strip().lower())
    if match is None or set(match[1]) == {"0"} or set(match[2]) == {"0"}:
        return None
    return match[0]


def fresh() -> str:
    """A new trace, sampled."""
    return f"00-{secrets.token_hex(16)}-{secrets.token_hex(8)}-01"


def child(traceparent: str) -> str:
    """The traceparent of the next hop: the same trace and flags, a new parent id."""
    _, trace, _, flags = traceparent.split("-")
    return f"00-{trace}-{secrets.token_hex(8)}-{flags}"


def current() -> str | None:
    """The traceparent of what runs now (a request, a delivery), if any."""
    return _current.get()


def trace_id() -> str | None:
    traceparent = _current.get()
    return traceparent.split("-")[1] if traceparent else None


@contextmanager
def continued(traceparent: str | None) -> Iterator[str | None]:
    """Run the block in `traceparent`'s trace (None: in none)."""
    token = _current.set(traceparent)
    try:
        yield traceparent
    finally:
        _current.reset(token)
