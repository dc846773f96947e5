"""The ASGI application (`make serve`): Django's handler, one thread hop a request, and the
long-poll between requests.

Django's own ASGI handler starts a thread for each request (asgiref's `ThreadSensitiveContext`)
and joins it at the end, and crosses to it and back for every synchronous middleware hook and
request signal: some thirty crossings a request here, which made uvicorn answer a fifth of what
gunicorn answers for the same view. This handler builds the middleware chain synchronous and
answers a request in one call on a thread of a small fixed pool (`REQUEST_THREADS`, 4: enough
to overlap one request's database work with another's, where more only take turns with the
interpreter lock, the event loop among them): the request signals, every middleware, the view
and the closing of the response, so each request gives its database connection back before its
answer is sent.

A request to a view that waits (`beliefs.services.changes.waits`: the API's `Prefer: wait`
long-poll, the live pages' endpoints) whose answer found nothing new (`changes.unchanged`) is
answered again, whole, at each change notification for its key, until an answer is new or its
time is up (`changes.wait_for_change`). While it waits it holds no thread and no database
connection, only its place on the event loop; a client that goes away ends its wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import IO, Any, TypeVar, cast

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core import signals
from django.core.asgi import get_asgi_application
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.core.handlers.base import BaseHandler
from django.http import HttpResponse, HttpResponseBase, StreamingHttpResponse
from django.urls import Resolver404, resolve, set_script_prefix

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
get_asgi_application()  # sets Django up first

from beliefs.services import changes  # noqa: E402 - after Django's set-up

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[Mapping[str, Any]]]
Send = Callable[[Mapping[str, Any]], Awaitable[None]]
T = TypeVar("T")


class Handler(ASGIHandler):
    """Django's ASGI handler, answering each request in one call on a pooled thread, and
    waiting between requests (see the module's docstring)."""

    def __init__(self, threads: int) -> None:
        BaseHandler.__init__(self)
        self.load_middleware(is_async=False)
        self.threads = ThreadPoolExecutor(threads, thread_name_prefix="request")
        self._answer = sync_to_async(
            self._answer_here, thread_sensitive=False, executor=self.threads
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        try:
            body = await self.read_body(receive)
        except RequestAborted:
            return
        try:
            key = waiting_key(_path_info(scope), _header(scope, b"prefer"))
            if key is None:
                response = await self._answer(scope, body)
            else:
                waited = await self._wait(key, scope, body, receive)
                if waited is None:
                    return  # the client went away
                response = waited
            await self._send(response, send)
        finally:
            body.close()

    def _answer_here(
        self, scope: Scope, body: IO[bytes], gone: asyncio.Future[Any] | None = None
    ) -> HttpResponseBase:
        """The request answered, on this (pooled) thread: as Django's handlers do, with its
        signals; a response that is not streamed is closed here, giving its database
        connection back. `gone`: done when the client went away while the request waited for
        a thread, in which case nobody is left to answer (see `_wait`)."""
        if gone is not None and gone.done():
            return HttpResponse(status=499)  # never sent: the client is gone
        set_script_prefix(get_script_prefix(scope))
        signals.request_started.send(sender=self.__class__, scope=scope)
        request, error = self.create_request(scope, body)
        if request is None:  # a request Django cannot make (its error response)
            assert error is not None
            response: HttpResponseBase = error
        else:
            response = self.get_response(request)
        setattr(response, "_handler_class", self.__class__)  # noqa: B010 - as Django's handler
        if not response.streaming:
            response.close()
            return _kept(response)
        return response

    async def _wait(
        self, key: str, scope: Scope, body: IO[bytes], receive: Receive
    ) -> HttpResponseBase | None:
        """The answer once it is new or its time is up; None when the client went away.

        A waiting request whose client went away is not answered at all, not even once more
        when its turn for a thread comes: when the servers fall behind, their queue is full of
        waits their clients gave up on and asked again, and answering those (the client's
        retry is answered as well) would keep them behind."""
        data = body.read()  # each answer closes the request it read, and so its body
        body.close()  # (its copy is `data`: not kept twice while it waits)
        scope[changes.SERVER_WAITS] = True
        gone = asyncio.ensure_future(self.listen_for_disconnect(receive))

        async def attempt() -> HttpResponseBase:
            return await self._answer(scope, io.BytesIO(data), gone)

        try:
            answer = await changes.wait_for_change(
                key, attempt, listen=True, poll=POLL_SECONDS, gone=gone
            )
            return None if gone.done() else answer
        finally:
            gone.cancel()
            with contextlib.suppress(asyncio.CancelledError, RequestAborted, AssertionError):
                await gone

    async def _send(self, response: HttpResponseBase, send: Send) -> None:
        if isinstance(response, StreamingHttpResponse) and not response.is_async:
            # A streamed body (a static file, an export) is read chunk by chunk on the pool.
            content = cast(Iterator[bytes], response.streaming_content)
            response.streaming_content = self._chunks(iter(content))
        try:
            with contextlib.suppress(asyncio.CancelledError):  # the client went away
                await self.send_response(response, send)
        finally:
            if response.streaming:
                await self._in_pool(response.close)

    async def _chunks(self, chunks: Iterator[bytes]) -> AsyncIterator[bytes]:
        while (chunk := await self._in_pool(next, chunks, None)) is not None:
            yield chunk

    async def _in_pool(self, function: Callable[..., T], *args: Any) -> T:
        return await sync_to_async(function, thread_sensitive=False, executor=self.threads)(*args)


def _kept(response: HttpResponseBase) -> HttpResponseBase:
    """What a waiting request holds of an answer that found nothing new, while it waits: its
    status, headers, cookies, body and how long it may wait, and nothing else. The answer
    itself may hold its request, view and authentication (a REST framework response keeps them
    for rendering): some 10 KB a waiter, for thousands of waiters."""
    wait = changes.unchanged(response)
    if wait is None or not isinstance(response, HttpResponse):
        return response
    kept = HttpResponse(response.content, status=response.status_code)
    kept.reason_phrase = response.reason_phrase
    del kept["Content-Type"]  # (its own default: the answer's headers are copied as they are)
    for name, value in response.items():
        kept[name] = value
    kept.cookies = response.cookies
    changes.mark_unchanged(kept, wait.seconds, wait.recheck)
    return kept


# Where other processes' changes cannot be heard (a PostgreSQL LISTEN connection not up yet),
# how often a waiting request is answered again.
POLL_SECONDS = 0.5


def waiting_key(path_info: str, prefer: str | None) -> str | None:
    """The key of the changes a request waits for (see `beliefs.services.changes.waits`): that of
    the view its path resolves to; None when it never waits."""
    try:
        match = resolve(path_info)
    except Resolver404:
        return None
    return changes.waits_on(match.func, match.kwargs, prefer)


async def _lifespan(receive: Receive, send: Send) -> None:
    """The server's start and end: nothing to do at either (Django is set up at import, and the
    change listener starts with the first wait), said so that the server does not guess."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


def _path_info(scope: Scope) -> str:
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    return path.removeprefix(root) if root and path.startswith(root) else path


def _header(scope: Scope, name: bytes) -> str | None:
    """The header's value, several of the same name joined as Django joins them."""
    values = [v.decode("latin-1") for k, v in scope.get("headers", ()) if k.lower() == name]
    return ",".join(values) if values else None


application = Handler(settings.REQUEST_THREADS)
