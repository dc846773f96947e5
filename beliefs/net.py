"""Talking to the outside: one HTTP POST to a checked address, under a total deadline.

Apart from the code that decides what to send (services/webhooks/delivery.py), and built like
sentry's net/http.py: urllib3's connections (http.client's parser underneath) whose only change
is where they connect. No Django here. The guarantees:

- the connection goes to an address that was checked (`Destination.addresses`), never to a
  fresh DNS answer; TLS checks the certificate against the host name, not the address;
- one deadline for the whole attempt (connect, TLS, send, read): every wait on the socket gets
  what is left of it, so a peer dripping a byte at a time cannot stretch it;
- a reply cut off anywhere (in the status line, in the headers, in the body) is a failure, not
  a delivery;
- redirects are not followed (a 3xx is a status like any other); at most KEEP_BYTES of the
  answer's body are kept, at most MAX_READ_BYTES read;
- with a `Pool`, a connection left open by a complete answer is used again, but only for the
  same origin (scheme, host, port) and the same checked address, while it is idle for less
  than IDLE_SECONDS and the peer has sent nothing since; any error drops it.
"""

from __future__ import annotations

import io
import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.util import SKIP_HEADER

from beliefs.domain.webhooks import RESPONSE_KEEP_BYTES, Destination

KEEP_BYTES = RESPONSE_KEEP_BYTES
# A receiver's answer is read to its end (to know it is complete), but not past this.
MAX_READ_BYTES = 1024 * 1024
_CHUNK = 16 * 1024
# Characters left as they are in a path or query (RFC 3986 reserved and unreserved, and %).
_SAFE = "/:@!$&'()*+,;=-._~%?"
# A kept connection idle longer than this is closed rather than used again (receivers close
# idle connections after a few seconds: a request must not race that close).
IDLE_SECONDS = 2.0


class DeadlineExceeded(OSError):
    """The attempt's time is up."""


class IncompleteResponse(OSError):
    """The peer's reply is not a complete HTTP response."""


@dataclass(frozen=True)
class Outcome:
    status: int | None
    response: str
    error: str

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


def to_uri(url: str) -> str:
    """An IRI as the ASCII URI it stands for: the host in IDNA, the path and query
    percent-encoded as UTF-8. ASCII URLs come back unchanged. ValueError if it cannot be."""
    if url.isascii():
        return url
    parts = urlsplit(url)
    host = parts.hostname or ""
    ascii_host = host.encode("idna").decode("ascii") if not host.isascii() else host
    netloc = parts.netloc
    if host and ascii_host != host:
        start = netloc.lower().rfind(host.lower())
        netloc = netloc[:start] + ascii_host + netloc[start + len(host) :]
    if not netloc.isascii():  # a user name or port with non-ASCII: not a URL we post to
        raise ValueError("the host part is not ASCII")
    return urlunsplit(
        (
            parts.scheme,
            netloc,
            quote(parts.path, safe=_SAFE),
            quote(parts.query, safe=_SAFE),
            quote(parts.fragment, safe=_SAFE),
        )
    )


class Deadline:
    """A point in time (monotonic clock) that every wait is measured against."""

    def __init__(self, seconds: float) -> None:
        self.at = time.monotonic() + seconds

    def left(self) -> float:
        left = self.at - time.monotonic()
        if left <= 0:
            raise DeadlineExceeded("the attempt took longer than its deadline")
        return left


def resolve_within(
    resolve: Callable[[str, int], Sequence[str]], deadline: Deadline
) -> Callable[[str, int], Sequence[str]]:
    """`resolve` bounded by the deadline: a stuck resolver is left behind (in a daemon thread)
    instead of holding the attempt."""

    def bounded(host: str, port: int) -> Sequence[str]:
        try:  # an address needs no resolver (nor a thread to bound it)
            ipaddress.ip_address(host)
        except ValueError:
            pass
        else:
            return resolve(host, port)
        box: list[Sequence[str] | BaseException] = []

        def run() -> None:
            try:
                box.append(resolve(host, port))
            except BaseException as exc:  # noqa: BLE001 - handed over to the caller
                box.append(exc)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        thread.join(deadline.left())
        if not box:
            raise OSError(f"resolving {host!r} took longer than the deadline")
        if isinstance(box[0], BaseException):
            raise box[0]
        return box[0]

    return bounded


class _Reader(io.BufferedReader):
    """The socket's reader for http.client, noting a line the peer's close cut short: http.client
    takes headers ended by a close for complete ones, which they are not."""

    cut = False

    def readline(self, size: int | None = -1) -> bytes:
        line = super().readline(size)
        if not line.endswith(b"\n") and (size is None or size < 0 or len(line) < size):
            self.cut = True
        return line


class _Bounded:
    """What both sockets (plain and TLS) add: every send and receive waits at most what is left
    of the attempt's deadline, and no more than MAX_READ_BYTES are received."""

    deadline: Deadline | None = None
    received = 0
    reader: _Reader | None = None

    def _left(self) -> None:
        if self.deadline is not None:
            self.settimeout(self.deadline.left())  # type: ignore[attr-defined]

    def recv_into(self, buffer: Any, *args: Any) -> int:
        self._left()
        try:
            count: int = super().recv_into(buffer, *args)  # type: ignore[misc]
        except TimeoutError:
            raise DeadlineExceeded("the attempt took longer than its deadline") from None
        self.received += count
        if self.received > MAX_READ_BYTES:
            raise IncompleteResponse(f"the answer is longer than {MAX_READ_BYTES} bytes")
        return count

    def sendall(self, data: Any, *args: Any) -> None:
        self._left()
        try:
            super().sendall(data, *args)  # type: ignore[misc]
        except TimeoutError:
            raise DeadlineExceeded("the attempt took longer than its deadline") from None

    def makefile(self, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if mode != "rb":
            return super().makefile(mode, *args, **kwargs)  # type: ignore[misc]
        # What socket.makefile("rb") does, with the reader that notes a cut line.
        raw = socket.SocketIO(self, "rb")  # type: ignore[arg-type]
        self._io_refs += 1  # type: ignore[attr-defined]
        self.reader = _Reader(raw, io.DEFAULT_BUFFER_SIZE)
        return self.reader


class _Socket(_Bounded, socket.socket):
    pass


class _TLSSocket(_Bounded, ssl.SSLSocket):
    pass


def tls_context() -> ssl.SSLContext:
    """The system's trust store, certificate and host name checked (tests add their own CA)."""
    return ssl.create_default_context()


class _Pinned:
    """What both connections (HTTP and HTTPS) change in urllib3's: the socket goes to `address`,
    an address that passed the check, whatever the host name resolves to now; the host name is
    still the one in the Host header and the one the certificate must be valid for."""

    port: int  # urllib3's connection sets it

    def __init__(self, dest: Destination, address: str, deadline: Deadline) -> None:
        self.address = address
        self.deadline = deadline
        super().__init__(dest.host, dest.port, timeout=deadline.left())  # type: ignore[call-arg]

    def _new_conn(self) -> socket.socket:
        raw = socket.create_connection((self.address, self.port), timeout=self.deadline.left())
        try:
            raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock = _Socket(raw.family, raw.type, raw.proto, raw.detach())
        except BaseException:
            raw.close()
            raise
        sock.settimeout(self.deadline.left())  # the TLS handshake waits at most this
        return sock

    def connect(self) -> None:
        super().connect()  # type: ignore[misc]
        self.bound.deadline = self.deadline

    @property
    def bound(self) -> _Bounded:
        sock = self.sock  # type: ignore[attr-defined]
        assert isinstance(sock, _Bounded)
        return sock


class _PinnedHTTP(_Pinned, HTTPConnection):
    pass


class _PinnedHTTPS(_Pinned, HTTPSConnection):
    def __init__(self, dest: Destination, address: str, deadline: Deadline) -> None:
        super().__init__(dest, address, deadline)
        context = tls_context()
        context.sslsocket_class = _TLSSocket  # bounded like the plain socket
        self.ssl_context = context


_Connection = _PinnedHTTP | _PinnedHTTPS


class Pool:
    """Connections kept open between attempts: one pool per endpoint (a worker's). A
    connection is handed out again only for the same origin and checked address, idle for less
    than IDLE_SECONDS, the peer silent since its last complete answer; it is dropped on any
    error. Safe to share between threads; each connection is used by one attempt at a time."""

    def __init__(self, keep: int = 4) -> None:
        self.keep = keep  # idle connections kept per origin and address
        self._idle: dict[tuple[str, str, int, str], list[tuple[_Connection, float]]] = {}
        self._lock = threading.Lock()
        self.opened = 0  # connections opened (for tests and the benchmark)

    def take(self, dest: Destination, address: str) -> _Connection | None:
        key = (dest.scheme, dest.host, dest.port, address)
        while True:
            with self._lock:
                idle = self._idle.get(key)
                if not idle:
                    return None
                conn, since = idle.pop()
            # is_connected: the peer has sent nothing (no bytes, no close) since its answer.
            if time.monotonic() - since < IDLE_SECONDS and conn.is_connected:
                return conn
            conn.close()

    def give_back(self, dest: Destination, address: str, conn: _Connection) -> None:
        key = (dest.scheme, dest.host, dest.port, address)
        with self._lock:
            idle = self._idle.setdefault(key, [])
            if len(idle) < self.keep:
                idle.append((conn, time.monotonic()))
                return
        conn.close()

    def close(self) -> None:
        with self._lock:
            kept = [conn for idle in self._idle.values() for conn, _ in idle]
            self._idle.clear()
        for conn in kept:
            conn.close()


def _host_header(dest: Destination) -> str:
    host = f"[{dest.host}]" if ":" in dest.host else dest.host
    default = 443 if dest.scheme == "https" else 80
    return host if dest.port == default else f"{host}:{dest.port}"


def _exchange(
    conn: _Connection, dest: Destination, headers: Mapping[str, str], body: bytes, *, keep: bool
) -> Outcome:
    sock = conn.bound
    sock.received = 0
    conn.request(
        "POST",
        dest.target,
        body=body,
        headers={
            "Host": _host_header(dest),
            "Content-Length": str(len(body)),
            # Nothing the receiver did not get before: no urllib3 defaults.
            "User-Agent": SKIP_HEADER,
            "Accept-Encoding": SKIP_HEADER,
            **({} if keep else {"Connection": "close"}),
            **{
                k: v
                for k, v in headers.items()
                if k.lower() not in ("host", "content-length", "connection")
            },
        },
        preload_content=False,
        decode_content=False,
    )
    response = conn.getresponse()
    if sock.reader is not None and sock.reader.cut:
        raise IncompleteResponse("the connection closed before the headers ended")
    kept = bytearray()
    while chunk := response.read(_CHUNK, decode_content=False):
        kept += chunk[: max(KEEP_BYTES - len(kept), 0)]
    return Outcome(response.status, bytes(kept).decode("utf-8", errors="replace"), "")


def _error(exc: BaseException, deadline: Deadline) -> str:
    """An attempt's error in words; urllib3 wraps a socket's timeout in its own errors, and
    whatever failed once the time was up failed for that reason."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, (DeadlineExceeded, TimeoutError)):
            return "DeadlineExceeded: the attempt took longer than its deadline"
        cause = cause.__cause__ or cause.__context__
    if time.monotonic() >= deadline.at:
        return "DeadlineExceeded: the attempt took longer than its deadline"
    return f"{type(exc).__name__}: {exc}"[:500]


def post(
    dest: Destination,
    headers: Mapping[str, str],
    body: bytes,
    deadline: Deadline,
    pool: Pool | None = None,
) -> Outcome:
    """POST once, within `deadline`. The checked addresses are tried in turn until one
    connects (a connection kept in `pool` for the origin and that address first); once the
    request may have been sent, whatever happens is this attempt's outcome (never a second
    copy to another address, nor on another connection)."""
    error = "no address to connect to"
    for address in dest.addresses:
        conn = pool.take(dest, address) if pool is not None else None
        if conn is not None:
            conn.deadline = conn.bound.deadline = deadline
        else:
            try:
                conn = (_PinnedHTTPS if dest.scheme == "https" else _PinnedHTTP)(
                    dest, address, deadline
                )
                conn.connect()
            except OSError as exc:  # refused, unreachable, TLS: try the next address
                if conn is not None:
                    conn.close()
                error = _error(exc, deadline)
                if error.startswith("DeadlineExceeded"):
                    return Outcome(None, "", error)
                continue
            if pool is not None:
                pool.opened += 1
        reused = False
        try:
            outcome = _exchange(conn, dest, headers, body, keep=pool is not None)
            # http.client lets go of the socket when the answer says the connection closes.
            if pool is not None and conn.sock is not None:
                pool.give_back(dest, address, conn)
                reused = True
            return outcome
        except Exception as exc:  # noqa: BLE001 - any failure is this attempt's outcome
            # A reset, the deadline, an incomplete or unparsable answer (http.client's
            # HTTPException), a target or header that is not ASCII (a row stored before IRIs
            # were encoded).
            return Outcome(None, "", _error(exc, deadline))
        finally:
            if not reused:
                conn.close()
    return Outcome(None, "", error)
