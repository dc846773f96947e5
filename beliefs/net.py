"""Talking to the outside: one HTTP POST to a checked address, under a total deadline.

Apart from the code that decides what to send (services/webhooks.py), like sentry's
net/http.py. No Django here. The guarantees:

- the connection goes to an address that was checked (`Destination.addresses`), never to a
  fresh DNS answer; TLS checks the certificate against the host name, not the address;
- one deadline for the whole attempt (connect, TLS, send, read): every wait on the socket gets
  what is left of it, so a peer dripping a byte at a time cannot stretch it;
- the answer is judged by a real HTTP/1.1 parser (h11): a reply cut off anywhere (after the
  status line, in the headers, in the body) is a failure, not a delivery;
- redirects are not followed (a 3xx is a status like any other); at most KEEP_BYTES of the
  answer's body are kept, at most MAX_READ_BYTES read;
- with a `Pool`, a connection left open by a complete answer is used again, but only for the
  same origin (scheme, host, port) and the same checked address, while it is idle for less
  than IDLE_SECONDS and the peer has sent nothing since; any error drops it.
"""

from __future__ import annotations

import ipaddress
import select
import socket
import ssl
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import quote, urlsplit, urlunsplit

import h11

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


class _Socket:
    """A non-blocking socket whose every wait is bounded by the deadline."""

    def __init__(self, sock: socket.socket, deadline: Deadline) -> None:
        self.sock = sock
        self.deadline = deadline
        sock.setblocking(False)

    def _wait(self, *, write: bool) -> None:
        left = self.deadline.left()
        readable, writable, _ = select.select(
            [] if write else [self.sock], [self.sock] if write else [], [], left
        )
        if not readable and not writable:
            raise DeadlineExceeded("the attempt took longer than its deadline")

    def _retrying(self, operation: Callable[[], object]) -> object:
        while True:
            try:
                return operation()
            except (BlockingIOError, ssl.SSLWantReadError):
                self._wait(write=False)
            except ssl.SSLWantWriteError:
                self._wait(write=True)

    def handshake(self) -> None:
        assert isinstance(self.sock, ssl.SSLSocket)
        self._retrying(self.sock.do_handshake)

    def send_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:

            def send(part: memoryview = view) -> int:
                return self.sock.send(part)

            sent = self._retrying(send)
            assert isinstance(sent, int)
            view = view[sent:]

    def recv(self) -> bytes:
        data = self._retrying(lambda: self.sock.recv(_CHUNK))
        assert isinstance(data, bytes)
        return data

    def close(self) -> None:
        self.sock.close()

    def idle_and_open(self) -> bool:
        """Whether the peer has sent nothing (no bytes, no close) since the last answer."""
        try:
            readable, _, _ = select.select([self.sock], [], [], 0)
        except (OSError, ValueError):
            return False
        return not readable


def tls_context() -> ssl.SSLContext:
    """The system's trust store, certificate and host name checked (tests add their own CA)."""
    return ssl.create_default_context()


def _connect(dest: Destination, address: str, deadline: Deadline) -> _Socket:
    raw = socket.create_connection((address, dest.port), timeout=deadline.left())
    if dest.scheme != "https":
        return _Socket(raw, deadline)
    tls = tls_context()
    try:
        # The certificate is checked against the host name, not the address.
        wrapped = tls.wrap_socket(raw, server_hostname=dest.host, do_handshake_on_connect=False)
    except BaseException:
        raw.close()
        raise
    sock = _Socket(wrapped, deadline)
    try:
        sock.handshake()
    except BaseException:
        sock.close()
        raise
    return sock


def _host_header(dest: Destination) -> str:
    host = f"[{dest.host}]" if ":" in dest.host else dest.host
    default = 443 if dest.scheme == "https" else 80
    return host if dest.port == default else f"{host}:{dest.port}"


def _exchange(
    sock: _Socket,
    conn: h11.Connection,
    dest: Destination,
    headers: Mapping[str, str],
    body: bytes,
    *,
    keep: bool,
) -> Outcome:
    request = h11.Request(
        method="POST",
        target=dest.target.encode("ascii"),
        headers=[
            ("Host", _host_header(dest)),
            ("Content-Length", str(len(body))),
            *(() if keep else (("Connection", "close"),)),
            *(
                (k, v)
                for k, v in headers.items()
                if k.lower() not in ("host", "content-length", "connection")
            ),
        ],
    )
    sock.send_all(
        b"".join(conn.send(e) or b"" for e in (request, h11.Data(data=body), h11.EndOfMessage()))
    )
    status: int | None = None
    kept = bytearray()
    read = 0
    while True:
        try:
            event = conn.next_event()
        except h11.RemoteProtocolError as exc:
            raise IncompleteResponse(f"not a complete HTTP response ({exc})") from None
        if event is h11.NEED_DATA:
            data = sock.recv()
            read += len(data)
            if read > MAX_READ_BYTES:
                raise IncompleteResponse(f"the answer is longer than {MAX_READ_BYTES} bytes")
            conn.receive_data(data)  # b"": the peer closed; h11 judges whether that was early
        elif isinstance(event, h11.Response):
            status = event.status_code
        elif isinstance(event, h11.Data):
            kept += event.data[: max(KEEP_BYTES - len(kept), 0)]
        elif isinstance(event, h11.EndOfMessage):
            assert status is not None
            return Outcome(status, bytes(kept).decode("utf-8", errors="replace"), "")
        elif isinstance(event, h11.ConnectionClosed):
            raise IncompleteResponse("the connection closed before a complete response")
        # h11.InformationalResponse (1xx): wait for the final one.


@dataclass
class _Kept:
    sock: _Socket
    conn: h11.Connection
    since: float  # monotonic time it went idle


class Pool:
    """Connections kept open between attempts: one pool per endpoint (a worker's). A
    connection is handed out again only for the same origin and checked address, idle for less
    than IDLE_SECONDS, the peer silent since its last complete answer; it is dropped on any
    error. Safe to share between threads; each connection is used by one attempt at a time."""

    def __init__(self, keep: int = 4) -> None:
        self.keep = keep  # idle connections kept per origin and address
        self._idle: dict[tuple[str, str, int, str], list[_Kept]] = {}
        self._lock = threading.Lock()
        self.opened = 0  # connections opened (for tests and the benchmark)

    def take(self, dest: Destination, address: str) -> _Kept | None:
        key = (dest.scheme, dest.host, dest.port, address)
        while True:
            with self._lock:
                idle = self._idle.get(key)
                if not idle:
                    return None
                kept = idle.pop()
            if time.monotonic() - kept.since < IDLE_SECONDS and kept.sock.idle_and_open():
                return kept
            kept.sock.close()

    def give_back(self, dest: Destination, address: str, kept: _Kept) -> None:
        key = (dest.scheme, dest.host, dest.port, address)
        kept.since = time.monotonic()
        with self._lock:
            idle = self._idle.setdefault(key, [])
            if len(idle) < self.keep:
                idle.append(kept)
                return
        kept.sock.close()

    def close(self) -> None:
        with self._lock:
            kept = [k for idle in self._idle.values() for k in idle]
            self._idle.clear()
        for k in kept:
            k.sock.close()


def _reusable(conn: h11.Connection) -> bool:
    if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
        return False
    try:
        conn.start_next_cycle()
    except h11.LocalProtocolError:
        return False
    return True


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
        kept = pool.take(dest, address) if pool is not None else None
        if kept is not None:
            sock, conn = kept.sock, kept.conn
            sock.deadline = deadline
        else:
            try:
                sock = _connect(dest, address, deadline)
            except DeadlineExceeded as exc:
                return Outcome(None, "", f"DeadlineExceeded: {exc}")
            except OSError as exc:  # refused, unreachable, TLS: try the next address
                error = f"{type(exc).__name__}: {exc}"[:500]
                continue
            conn = h11.Connection(our_role=h11.CLIENT)
            if pool is not None:
                pool.opened += 1
        reused = False
        try:
            outcome = _exchange(sock, conn, dest, headers, body, keep=pool is not None)
            if pool is not None and _reusable(conn):
                pool.give_back(dest, address, _Kept(sock, conn, 0.0))
                reused = True
            return outcome
        except (OSError, ValueError, h11.LocalProtocolError) as exc:
            # ValueError: a target or header that is not ASCII (a row stored before IRIs were
            # encoded); OSError: reset, deadline, an incomplete answer.
            return Outcome(None, "", f"{type(exc).__name__}: {exc}"[:500])
        finally:
            if not reused:
                sock.close()
    return Outcome(None, "", error)
