"""The tests' two ways into the ASGI application, so that a request that waits for a change is
answered by the same handler as in production (`console.asgi.Handler`, and its long-poll):

- `WaitsOverAsgi`: a test client's requests that wait go through the handler, answered in the
  test's own thread, so inside its database transaction (a test needs no transactional
  database for them); the others go the test client's usual way.
- `LiveServer`: uvicorn in a thread, serving `console.asgi.application` (and the static files,
  as the development server does) for tests that speak real HTTP (the browser, the client).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future
from typing import Any

import uvicorn
from asgiref.current_thread_executor import CurrentThreadExecutor
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core import signals
from django.core.handlers.wsgi import WSGIRequest
from django.db import close_old_connections
from django.http import HttpResponse
from django.test.utils import modify_settings

from beliefs.services import changes
from console import asgi

Environ = dict[str, Any]
App = Callable[[dict[str, Any], Any, Any], Any]


class _Loop:
    """One event loop in a thread of its own for the test process's waiting requests, as a
    server process has one: the change listener (a socket, or PostgreSQL's LISTEN connection)
    is started on it once and kept."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread: threading.Thread | None = None

    def get(self) -> asyncio.AbstractEventLoop:
        if self.loop is None:
            self.loop = asyncio.new_event_loop()
            self.thread = threading.Thread(
                target=self.loop.run_forever, name="waiting-requests", daemon=True
            )
            self.thread.start()
        return self.loop

    def stop(self) -> None:
        """Ends the loop and what runs on it (the listener's database connection among them:
        the test database cannot be dropped while it is open)."""
        loop, thread = self.loop, self.thread
        if loop is None or thread is None:
            return
        asyncio.run_coroutine_threadsafe(_cancel_all(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)
        loop.close()
        self.loop = self.thread = None


async def _cancel_all() -> None:
    tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


waiting_loop = _Loop()


def _scope(environ: Environ) -> dict[str, Any]:
    """The ASGI scope of the request the test client built as a WSGI environ."""

    def text(value: str) -> str:  # WSGI carries UTF-8 bytes as latin-1 text
        return value.encode("latin-1").decode("utf-8", "replace")

    headers = [
        (name[5:].replace("_", "-").lower().encode("latin-1"), str(value).encode("latin-1"))
        for name, value in environ.items()
        if name.startswith("HTTP_")
    ]
    for name in ("CONTENT_TYPE", "CONTENT_LENGTH"):
        if environ.get(name):
            headers.append((name.replace("_", "-").lower().encode(), environ[name].encode()))
    path = text(environ["PATH_INFO"])
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": environ["REQUEST_METHOD"],
        "scheme": environ.get("wsgi.url_scheme", "http"),
        "path": path,
        "raw_path": path.encode(),
        "query_string": environ.get("QUERY_STRING", "").encode("latin-1"),
        "root_path": text(environ.get("SCRIPT_NAME", "")),
        "headers": headers,
        "client": (environ.get("REMOTE_ADDR", "127.0.0.1"), 50000),
        "server": (environ.get("SERVER_NAME", "testserver"), int(environ.get("SERVER_PORT", 80))),
    }


async def _exchange(app: App, scope: dict[str, Any], body: bytes) -> list[Mapping[str, Any]]:
    """What `app` sends for one request whose client stays (it never disconnects)."""
    sent: list[Mapping[str, Any]] = []
    request = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> Mapping[str, Any]:
        if request:
            return request.pop()
        await asyncio.Future()  # the client stays until the answer is sent
        raise AssertionError("unreachable")

    async def send(message: Mapping[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent


def _response(sent: list[Mapping[str, Any]]) -> HttpResponse:
    """The answer as the test client's own handler gives it (an HttpResponse)."""
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    response = HttpResponse(body, status=start["status"])
    del response["Content-Type"]  # only what the application sent
    for raw_name, raw_value in start["headers"]:
        name, value = raw_name.decode("latin-1"), raw_value.decode("latin-1")
        if name.lower() == "set-cookie":
            response.cookies.load(value)
        else:
            response.headers[name] = value
    return response


@contextlib.contextmanager
def _connection_kept() -> Iterator[None]:
    """As the test client's handler does: the request's end does not close the test's database
    connection (it holds the test's transaction)."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


def answer_over_asgi(environ: Environ) -> HttpResponse:
    """The request answered by `console.asgi.Handler`: its waiting on the shared loop, each of
    its answers in this thread."""
    here = CurrentThreadExecutor(None)
    handler = asgi.Handler(1, executor=here)
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(length) if length else b""
    future: Future[list[Mapping[str, Any]]] = asyncio.run_coroutine_threadsafe(
        _exchange(handler, _scope(environ), body), waiting_loop.get()
    )
    with _connection_kept():
        here.run_until_future(future)
    response = _response(future.result())
    # What the test client reads back of the request (its `resolver_match`).
    response.wsgi_request = WSGIRequest(environ)  # type: ignore[attr-defined]
    return response


class WaitsOverAsgi:
    """A test client's handler: a request that waits for a change (`console.asgi.waiting_key`)
    goes through the ASGI handler, any other through `usual` (the test client's own)."""

    def __init__(self, usual: Callable[[Environ], Any]) -> None:
        self.usual = usual

    def __call__(self, environ: Environ) -> Any:  # noqa: ANN401 - the test client's response
        path = environ["PATH_INFO"].encode("latin-1").decode("utf-8", "replace")
        if asgi.waiting_key(path, environ.get("HTTP_PREFER")) is None:
            return self.usual(environ)
        return answer_over_asgi(environ)

    # The usual handler's attributes are read and set through this one (DRF's APIClient sets
    # the user it forces on its handler).
    def __getattr__(self, name: str) -> Any:  # noqa: ANN401 - the usual handler's attributes
        return getattr(self.usual, name)

    def __setattr__(self, name: str, value: Any) -> None:  # noqa: ANN401
        if name == "usual":
            super().__setattr__(name, value)
        else:
            setattr(self.usual, name, value)


class LiveServer:
    """uvicorn serving the ASGI application in a thread of this process, on a free loopback
    port, as pytest-django's `live_server` (`url`, and the allowed host it adds per test).
    `app` is what it serves: a test may wrap it (and put it back)."""

    host = "localhost"  # a name, not an IP address: passkeys refuse one

    def __init__(self) -> None:
        self.app: App = ASGIStaticFilesHandler(asgi.application)
        self._live_server_modified_settings = modify_settings(ALLOWED_HOSTS={"append": self.host})
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.port = int(self.socket.getsockname()[1])
        config = uvicorn.Config(
            self._serve, interface="asgi3", lifespan="off", log_level="warning",
            server_header=False, proxy_headers=False,
        )  # fmt: skip
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self._run, name="live-server", daemon=True)
        self.thread.start()
        while not self.server.started:
            assert self.thread.is_alive(), "the live server did not start"
            self.thread.join(0.01)

    async def _serve(self, scope: dict[str, Any], receive: Any, send: Any) -> None:  # noqa: ANN401
        await self.app(scope, receive, send)

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(self.server.serve(sockets=[self.socket]))
            loop.run_until_complete(_cancel_all())  # the change listener among them
        finally:
            loop.close()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def __str__(self) -> str:
        return self.url

    def __add__(self, other: str) -> str:
        return f"{self}{other}"

    def stop(self) -> None:
        """Stops serving: the waits still open are answered now, and the server ends with its
        change listener (its database connection would keep the test database from being
        dropped)."""
        changes.end_waits()
        self.server.should_exit = True
        self.thread.join(60)
        assert not self.thread.is_alive(), "the live server did not stop"
        self.socket.close()
