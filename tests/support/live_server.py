"""The tests' live server: uvicorn serving `console.asgi`'s handler in a thread of the test
process, over real HTTP on loopback, so that browser, client and long-poll tests run the code
production runs (the same handler, the same waiting between requests) and not a WSGI stand-in.

It shares the test process's database settings, so it serves the test database; a test that
uses it is transactional (pytest-django's `_live_server_helper` asks for `transactional_db`
whenever a test names `live_server`). Static files come from the apps' directories through
WhiteNoise's finders, as under `make run`.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import httpx
from django.test.utils import modify_settings, override_settings

HOST = "localhost"  # a name, not an address: passkeys refuse an IP address as relying party


def _counting_handler() -> Any:  # noqa: ANN401 - a subclass of console.asgi.Handler
    """`console.asgi.Handler`, counting the answers under way on its threads (`answering()`): a
    client that goes away ends a request's wait at once, but not the read its thread is doing,
    and a test must not empty the database under that read."""
    from console.asgi import Handler

    class CountingHandler(Handler):
        def __init__(self, threads: int) -> None:
            self._count_lock = threading.Lock()
            self._answering = 0
            super().__init__(threads)

        def _answer_here(self, *args: Any) -> Any:  # noqa: ANN401 - as the handler's
            with self._count_lock:
                self._answering += 1
            try:
                return super()._answer_here(*args)
            finally:
                with self._count_lock:
                    self._answering -= 1

        def answering(self) -> int:
            with self._count_lock:
                return self._answering

    return CountingHandler


class LiveServer:
    """One uvicorn server on a free loopback port, in a daemon thread (its own event loop).

    `url` is where it answers; `handler` is the `console.asgi.Handler` it serves (a test may
    wrap its `_answer` to serialize requests with its own database writes). pytest-django's
    `_live_server_helper` enables `_live_server_modified_settings` around each test."""

    def __init__(self, *, start_within: float = 30.0) -> None:
        import uvicorn

        from console.settings import REQUEST_THREADS

        # Serves the apps' static files itself (tests run with DEBUG off, where WhiteNoise
        # would serve only STATIC_ROOT's collected files).
        with override_settings(WHITENOISE_USE_FINDERS=True):
            self.handler = _counting_handler()(REQUEST_THREADS)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.port: int = sock.getsockname()[1]
        self.url = f"http://{HOST}:{self.port}"
        config = uvicorn.Config(
            self.handler,
            log_level="warning",
            server_header=False,
            proxy_headers=False,
            timeout_graceful_shutdown=5,
        )
        self.server = uvicorn.Server(config)
        self._live_server_modified_settings = modify_settings(ALLOWED_HOSTS={"append": HOST})
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [sock]}, name="live-server", daemon=True
        )
        self.thread.start()
        deadline = time.monotonic() + start_within
        while not self.server.started:  # a condition polled for, not a fixed wait
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the live server did not start")
            time.sleep(0.01)

    def settle(self, within: float = 60.0) -> None:
        """Ends every wait this process holds and returns once no wait and no answer is under way
        (a client that went away ends its wait at once, but not the read its thread is doing)."""
        from beliefs.services import changes

        changes.end_waits()
        deadline = time.monotonic() + within

        def busy() -> bool:
            return bool(changes.waiting() or self.handler.answering())

        while busy() and time.monotonic() < deadline:
            time.sleep(0.01)  # a condition polled for, not a fixed wait
        assert not busy(), "the live server still holds a wait or an answer"

    def stop(self) -> None:
        """Stops serving: uvicorn's graceful shutdown, then the loop closes, and with it the
        change listener's database connection (the test database can then be dropped)."""
        self.server.should_exit = True
        self.thread.join(30)
        self.handler.threads.shutdown(wait=True)

    def __str__(self) -> str:
        return self.url

    def __add__(self, other: Any) -> str:  # noqa: ANN401 - as pytest-django's LiveServer
        return f"{self}{other}"


class Answered:
    """An answer of the live server, read as a Django test response is: `status_code`,
    `content`, `json()`, a header by `answer["ETag"]`, and `"ETag" in answer`."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self.status_code = response.status_code
        self.content = response.content

    def json(self) -> Any:  # noqa: ANN401 - the parsed JSON
        return self.response.json()

    def __getitem__(self, header: str) -> str:
        return self.response.headers[header]

    def __contains__(self, header: str) -> bool:
        return header in self.response.headers


class Served:
    """A client of the live server, called as Django's test client is: `get(path, data,
    **extra)` with headers as `HTTP_…` keywords (`HTTP_PREFER="wait=30"`)."""

    def __init__(self, server: LiveServer, headers: dict[str, str] | None = None) -> None:
        self.http = httpx.Client(base_url=server.url, headers=headers or {}, timeout=120)

    def get(self, path: str, data: dict[str, Any] | None = None, **extra: str) -> Answered:
        headers = {
            name.removeprefix("HTTP_").replace("_", "-"): value
            for name, value in extra.items()
            if name.startswith("HTTP_")
        }
        return Answered(self.http.get(path, params=data, headers=headers))

    def close(self) -> None:
        self.http.close()
