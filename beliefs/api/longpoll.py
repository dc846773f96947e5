"""`GET /api/v1/instances/{id}/` with `Prefer: wait=N`: answer when the instance changes.

A runtime waiting for a person sends the ETag it has in `If-None-Match` and `Prefer: wait=25`
(RFC 7240). The answer comes as soon as the instance's ETag differs (200 and the new body) or,
after N seconds with no change, 304; either way with `Preference-Applied: wait=N`, so a client
knows the server waited and need not back off. N is capped at `MAX_WAIT`; a `Prefer` without a
valid wait is ignored, and the request is the plain read.

Nothing holds a thread while it waits: this view is async (under ASGI, one event loop per
process holds every waiter) and awaits a change notification (`beliefs.services.changes`). The
read itself, authentication and the permission check included, stays the DRF view's sync code,
run in a thread per read, and the database connection is given back between reads. Under WSGI
(`manage.py runserver`, the test client) the same code runs in the request's thread, which then
waits with it.
"""

from __future__ import annotations

import asyncio
import re
import weakref
from uuid import UUID

from asgiref.sync import SyncToAsync, sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.db import connection
from django.http import HttpRequest, HttpResponse

from beliefs.api.views import InstanceDetailApi
from beliefs.services import changes

MAX_WAIT = 60
# Without a notification from other processes (under WSGI; an in-memory SQLite database; a
# PostgreSQL LISTEN connection not up yet), how often a waiter re-reads.
POLL_SECONDS = 0.5
# Reads of waiting requests running at once, per process: a change wakes every waiter of the
# instance together, and each read takes a database connection (500 at once would exhaust
# PostgreSQL's connections; 8 at a time answer them all within about a second).
READS_AT_ONCE = 8
_WAIT = re.compile(r'^\s*wait\s*=\s*"?(\d{1,9})"?\s*$', re.IGNORECASE)

_read_view = InstanceDetailApi.as_view()
_read_slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
    weakref.WeakKeyDictionary()
)


def preferred_wait(header: str | None) -> int | None:
    """The seconds `Prefer: wait=N` asks for, capped at MAX_WAIT; None when it asks none validly.

    Preferences are comma-separated, each with optional `;` parameters (RFC 7240 §2)."""
    for preference in (header or "").split(","):
        found = _WAIT.match(preference.split(";", 1)[0])
        if found:
            return min(int(found.group(1)), MAX_WAIT)
    return None


def _read(request: HttpRequest, instance_id: UUID, *, release: bool) -> HttpResponse:
    response = _read_view(request, instance_id=instance_id)
    render = getattr(response, "render", None)
    if callable(render):
        response = render()
    if release:  # a waiter keeps no database connection between its reads
        _close_connection()
    return response


async def instance_detail(request: HttpRequest, instance_id: UUID) -> HttpResponse:
    wait = preferred_wait(request.headers.get("Prefer"))
    if wait is None:
        return await sync_to_async(_read)(request, instance_id, release=False)
    asgi = isinstance(request, ASGIRequest)
    if asgi:
        await _release_request_thread()
    loop = asyncio.get_running_loop()
    slots = _read_slots.setdefault(loop, asyncio.Semaphore(READS_AT_ONCE))
    # Under ASGI each read runs on the loop's shared threads and gives its connection back;
    # under WSGI in the request's own thread, the test's transaction included.
    read = sync_to_async(_read, thread_sensitive=not asgi)

    async def attempt(remaining: float) -> tuple[bool, HttpResponse, None]:
        async with slots:
            response = await read(request, instance_id, release=asgi or remaining > 0)
        return response.status_code != 304, response, None

    # Other processes' changes: heard through LISTEN (PostgreSQL) or this machine's change
    # sockets (SQLite) under ASGI, else polled.
    response = await changes.wait_for_change(
        str(instance_id), attempt, wait, listen=asgi, poll=POLL_SECONDS
    )
    if response.status_code in (200, 304):
        response["Preference-Applied"] = f"wait={wait}"
    return response


async def _release_request_thread() -> None:
    """Let the thread Django's ASGI handler keeps for this request go while it waits.

    Django runs a request's sync code (the middlewares' hooks) in a thread of its own, kept
    until the response (asgiref's `ThreadSensitiveContext`): idle, but one per waiter. Its
    database connection is closed and the thread ended; should the response's hooks need one,
    they start another."""
    context = SyncToAsync.thread_sensitive_context.get(None)
    if context is None:
        return
    executor = SyncToAsync.context_to_thread_executor.get(context)
    if executor is None:
        return
    await sync_to_async(_close_connection)()
    SyncToAsync.context_to_thread_executor.pop(context, None)
    executor.shutdown(wait=False)


def _close_connection() -> None:
    if not connection.in_atomic_block:
        connection.close()


# What the router, the CSRF and sign-in middlewares and the OpenAPI generator read off a view.
for _attribute in ("cls", "initkwargs", "view_class", "view_initkwargs", "csrf_exempt"):
    setattr(instance_detail, _attribute, getattr(_read_view, _attribute))
