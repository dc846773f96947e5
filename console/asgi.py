"""The ASGI application (`make serve`): two of Django's handlers, one for requests that wait.

Django's ASGI handler runs a request's synchronous middleware hooks each in a hop to the
request's thread and back (every `process_request` and `process_response` of every
middleware, and the request signals): some thirty hops a request here, which made uvicorn
answer a fifth of what gunicorn answers for the same view. Most requests never wait, so they go
to a handler whose middleware chain is built synchronous and entered once (one hop there, one
back). Requests that wait (the API's `Prefer: wait` long-poll, the live pages' endpoints) go to
Django's own handler, whose async chain lets the waiting view give its thread back while it
waits (see `beliefs.api.longpoll`). Either handler answers any request alike: the choice only
decides what a request costs, never what it gets.
"""

from __future__ import annotations

import os
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from asgiref.sync import sync_to_async
from django.core.asgi import get_asgi_application
from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.base import BaseHandler

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[Mapping[str, Any]], Awaitable[None]]

waiting_handler = get_asgi_application()  # sets Django up first


class OneHopHandler(ASGIHandler):
    """Django's ASGI handler with its middleware chain built synchronous: a request crosses to
    its thread once, runs every middleware and the view there, and comes back with the
    response. An async view still works (Django runs it from that thread); it only keeps the
    thread while it runs, hence `waiting_handler` for those that wait."""

    def __init__(self) -> None:
        BaseHandler.__init__(self)
        self.load_middleware(is_async=False)
        chain: Any = getattr(self, "_middleware_chain")  # noqa: B009 - untyped in the stubs
        self._middleware_chain = sync_to_async(chain, thread_sensitive=True)


one_hop_handler = OneHopHandler()

# The paths whose view may wait: the live pages' endpoints; the API's instance read waits only
# when asked to (`Prefer: wait=N`).
_LIVE_PATH = re.compile(r"/(instances/[0-9a-fA-F-]{36}/live|inbox/rows)/\Z")
_API_INSTANCE = re.compile(r"/api/v1/instances/[0-9a-fA-F-]{36}/\Z")


def waits(scope: Scope) -> bool:
    """Whether this request is one that may wait for a change."""
    path = scope.get("path", "")
    if _LIVE_PATH.search(path):
        return True
    if not _API_INSTANCE.search(path):
        return False
    return any(
        name == b"prefer" and b"wait" in value.lower() for name, value in scope.get("headers", ())
    )


def handlers() -> tuple[ASGIHandler, ASGIHandler]:
    """The two handlers: (one hop, waiting)."""
    return one_hop_handler, waiting_handler


async def application(scope: Scope, receive: Receive, send: Send) -> None:
    handler = waiting_handler if scope["type"] == "http" and waits(scope) else one_hop_handler
    await handler(scope, receive, send)
