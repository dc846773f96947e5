"""Live pages: a page asks "anything new since version V?" and the answer waits for a change.

The instance page and the inbox each carry the version of what they show (`data-live-version`).
Their script asks the page's live endpoint with `?since=V`: the answer is the fresh fragment
(with its version in `Live-Version`) as soon as the version differs, or 204 after `PAGE_WAIT`
seconds with no change, when the script simply asks again. The wait is the API long-poll's
(`beliefs.api.longpoll`): woken by change notifications (`beliefs.services.changes`), and
re-reading every `POLL_SECONDS` where other processes' changes cannot be heard.

A version is a digest of what the page is made of, read cheaply (no rendering): a notice that
changed nothing the page shows costs a read, not a swap.

Why a long-poll rather than server-sent events: it is the same wait the API already has (one
code path, one test of it), it needs no htmx extension, a proxy or the test client handles it
as a plain request, and the script must merge the answer into the page by hand anyway (cards
being typed in are kept).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar
from uuid import UUID

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.db import connection
from django.http import HttpRequest
from django.utils import timezone

from beliefs import selectors
from beliefs.models import PromptState
from beliefs.services import changes

# Under `manage.py runserver` a waiting page holds a thread: short waits keep that harmless.
PAGE_WAIT = 20
POLL_SECONDS = 0.5

T = TypeVar("T")


def digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def instance_version(instance_id: UUID, user_id: int) -> tuple[str, float | None] | None:
    """The version of this person's view of the instance, and the seconds until its next
    question's time to live runs out (None: no open blocking question has one); None when the
    instance is not theirs."""
    read = selectors.instance_read(instance_id, principal_id=user_id)
    if read is None:
        return None
    expiries = [
        datetime.fromisoformat(p["expires_at"])
        for p in read.payload.get("prompts", [])
        if p["state"] == PromptState.OPEN and p["blocking"] and p["expires_at"]
    ]
    # Past a question's TTL the page shows it expired: that is a change with no write. When it
    # was first shown is not on the page (and showing it sets it).
    shown = {**read.payload, "prompts": [_unshown(p) for p in read.payload.get("prompts", [])]}
    return digest([shown, read.expiry_due]), _seconds_until(expiries)


def inbox_version(context: dict[str, Any]) -> tuple[str, float | None]:
    """The version of an inbox page (the context `_inbox_context` gives it), and the seconds
    until its first row's time to live runs out (the row then leaves the list)."""
    rows = [
        [str(i.pk), i.blocking_count, i.assumption_count, i.next_expiry, i.updated_at]
        for i in context["waiting"]
    ]
    recent = [[str(i.pk), i.status] for i in context["recent"]]
    facts = [context["page"], context["has_next"], context["past_the_end"]]
    expiries = [i.next_expiry for i in context["waiting"] if i.next_expiry is not None]
    return digest([rows, recent, facts]), _seconds_until(expiries)


def _unshown(prompt: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in prompt.items() if k != "shown_at"}


def _seconds_until(moments: list[datetime]) -> float | None:
    return (min(moments) - timezone.now()).total_seconds() if moments else None


def requested_wait(request: HttpRequest) -> float:
    """`?wait=N` seconds (0 to PAGE_WAIT, for tests), else PAGE_WAIT."""
    raw = request.GET.get("wait", "")
    if raw.isascii() and raw.isdigit() and len(raw) < 4:
        return min(int(raw), PAGE_WAIT)
    return PAGE_WAIT


def _released(read: Callable[[], T]) -> Callable[[], T]:
    def run() -> T:
        try:
            return read()
        finally:
            if not connection.in_atomic_block:
                connection.close()  # a waiter keeps no database connection between reads

    return run


async def wait_for_change(
    request: HttpRequest, key: str, read: Callable[[], tuple[T | None, float | None]], wait: float
) -> T | None:
    """`read()` (sync, run in a thread) until it finds something, or None after `wait` seconds.
    It is re-run at each notice for `key` (an instance id, or `changes.ANY`), and by the time it
    says (seconds, its second value: when a question's time to live runs out, nobody writes)."""
    deadline = time.monotonic() + wait
    heard = isinstance(request, ASGIRequest) and await changes.listening()
    while True:
        # Watching before reading: a change committed between the two still wakes us.
        changed = changes.watch(key)
        try:
            remaining = deadline - time.monotonic()
            found, recheck = await sync_to_async(_released(read))()
            if found is not None or remaining <= 0:
                return found
            pause = remaining if heard else POLL_SECONDS
            if recheck is not None:
                pause = min(pause, max(recheck, 0.05))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed, min(pause, remaining))
        finally:
            changes.unwatch(key, changed)
