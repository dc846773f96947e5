"""A webhook receiver on loopback that verifies Standard Webhooks signatures: what
`manage.py webhook_listen` serves, and what the tests post to. No Django."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

MAX_BODY = 1024 * 1024


@dataclass
class Received:
    headers: dict[str, str]  # names in lower case
    body: bytes
    event: Any  # the verified JSON, or None when refused
    refused: str = ""  # why the signature check failed


@dataclass
class Receiver:
    """Serve on 127.0.0.1; `received` lists every request, verified or not. `answer` picks the
    status code for each verified request (e.g. to fail the first few).

    Made, it holds its port (`port`, or a free one) and refuses connections; `start()` serves.
    So an endpoint can be registered at its address first and its secret given after
    (`use_secret`), with no moment where another socket could take the port."""

    secret: str
    port: int = 0
    on_event: Callable[[Received], None] | None = None
    answer: Callable[[Received], int] = lambda _: 204
    received: list[Received] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._webhook = Webhook(self.secret)
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            # Keeps the connection open between requests (a worker sends several over one).
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                with receiver._lock:
                    receiver._open.add(self.connection)

            def finish(self) -> None:
                with receiver._lock:
                    receiver._open.discard(self.connection)
                super().finish()

            def do_POST(self) -> None:  # noqa: N802 - the name http.server calls
                length = min(int(self.headers.get("Content-Length") or 0), MAX_BODY)
                body = self.rfile.read(length)
                status = receiver.handle({k.lower(): v for k, v in self.headers.items()}, body)
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(
            ("127.0.0.1", self.port), Handler, bind_and_activate=False
        )
        try:
            self.server.server_bind()  # bound, not listening: a connection is refused
        except OSError:
            self.server.server_close()
            raise
        self.port = self.server.server_address[1]
        self._listening = False
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks"

    def handle(self, headers: dict[str, str], body: bytes) -> int:
        try:
            event = self._webhook.verify(body, headers)
            item = Received(headers, body, event)
        except (WebhookVerificationError, ValueError) as exc:
            item = Received(headers, body, None, refused=str(exc) or type(exc).__name__)
        with self._lock:
            self.received.append(item)
        if self.on_event is not None:
            self.on_event(item)
        return self.answer(item) if item.event is not None else 400

    def use_secret(self, secret: str) -> None:
        """Verify with this secret from now on (an endpoint's, once registered at `url`)."""
        self._webhook = Webhook(secret)
        self.secret = secret

    def events(self) -> list[Any]:
        with self._lock:
            return [r.event for r in self.received if r.event is not None]

    def start(self) -> Receiver:
        if not self._listening:
            self.server.server_activate()
            self._listening = True
        # Its loop looks for a stop every 50 ms (the default, 0.5 s, is how long stop() waits).
        self._thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:  # shutdown() waits for a loop that was never started
            self.server.shutdown()
            self._thread = None
        self.server.server_close()
        with self._lock:  # connections kept open: a stopped receiver answers nothing more
            kept, self._open = list(self._open), set()
        for conn in kept:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def __enter__(self) -> Receiver:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def describe(item: Received) -> str:
    """One printed line per request, for the listener."""
    if item.event is None:
        return f"REFUSED ({item.refused}) webhook-id={item.headers.get('webhook-id', '?')}"
    return json.dumps(item.event, indent=2, ensure_ascii=False)
