"""Change notifications: whoever waits for an instance hears the moment a change to it commits.

Every writer of an instance takes its row lock (`lifecycle.lock_instance`, or the re-plan's
own lock) or, redeeming a receipt, changes the receipt's row: those places call
`instance_changed` inside their transaction. The notice is sent on commit only, so a waiter
re-reading then sees the change, and a rolled-back write wakes nobody.

- PostgreSQL: `NOTIFY console_instance, '<id>'` inside the transaction; the database delivers it
  on commit to every listening process (one LISTEN connection per server process, `listen`).
- Everywhere, the process that committed also wakes its own waiters (`transaction.on_commit`).
- SQLite (one machine, no NOTIFY): on commit the id also goes, as a datagram, to every server
  process listening on that machine (a Unix socket each, in the directory `<database>-changes`
  beside the database file, `listen_locally`), so a waiter in another process wakes as at once
  as on PostgreSQL. Where there is no such socket (an in-memory database, a path too long for
  a socket) waiters fall back to a short poll (see `beliefs.api.longpoll`).

A notice may be spurious (a lock taken for a write that changed nothing): a waiter only re-reads
and compares the ETag, so one too many costs a read, one too few would cost a wait.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import hashlib
import logging
import os
import socket
import stat
import tempfile
import threading
import time
import uuid
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from django.db import connection, connections, transaction

from beliefs.observed import WAITERS
from beliefs.selectors import postgres

CHANNEL = "console_instance"
log = logging.getLogger(__name__)


def instance_changed(instance_id: Any) -> None:
    """Announce, on commit, that the instance changed (call inside the changing transaction)."""
    key = str(instance_id)
    postgres.notify(CHANNEL, key)
    transaction.on_commit(lambda: _committed(key))


def _committed(key: str) -> None:
    wake(key)
    if connection.vendor == "sqlite":
        _broadcast(key)


# The waiters of this process: instance id → futures, each on the event loop awaiting it (the
# server's, one per process; a test may run a loop of its own). Woken from any thread (a commit
# runs in a worker thread), hence the lock and `call_soon_threadsafe`.
_waiters: dict[str, set[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]]] = {}
_lock = threading.Lock()


def watch(key: str) -> asyncio.Future[None]:
    """A future done at the next change of the instance `key` (call `unwatch` when done)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[None] = loop.create_future()
    with _lock:
        _waiters.setdefault(key, set()).add((loop, future))
    WAITERS.inc()
    return future


def unwatch(key: str, future: asyncio.Future[None]) -> None:
    with _lock:
        entries = _waiters.get(key)
        held = entries is not None and (future.get_loop(), future) in entries
        if entries is not None:
            entries.discard((future.get_loop(), future))
            if not entries:
                del _waiters[key]
    if held:
        WAITERS.dec()


# Waiters on ANY hear every instance's change (a person's inbox lists many, and new ones).
ANY = "*"


def wake(key: str | None) -> None:
    """Wake the waiters of instance `key` (and those on ANY), or every waiter (None)."""
    with _lock:
        if key is None:
            entries = [entry for group in _waiters.values() for entry in group]
        else:
            entries = [*_waiters.get(key, ()), *_waiters.get(ANY, ())]
    for loop, future in entries:
        # RuntimeError: that waiter's loop has closed, nobody is left to wake.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(_resolve, future)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


# How many times `end_waits` ran: a wait begun before it ends at its next read.
_ended = [0]


def end_waits() -> None:
    """Answer every wait of this process now (after its read in flight, if any): the test
    server's before the database is emptied under it, so no snapshot read is left holding
    table locks that the emptying then waits for (PostgreSQL would break that deadlock by
    failing one of the two)."""
    with _lock:
        _ended[0] += 1
    wake(None)


T = TypeVar("T")
# The shortest pause between two reads a recheck may ask for.
MIN_PAUSE = 0.05


# --- what waits, and for how long -----------------------------------------------------------
#
# A view that may wait says so twice: on itself, which key's changes it waits for (`waits`,
# read off the view before the request runs, so a change committed during the first read is
# still heard), and on an answer that found nothing new, for how long (`unchanged`). The
# request is then answered again, whole, at the next notice for the key, until an answer finds
# something or the time is up (`wait_for_change`). Who repeats it is the server's handler,
# `console.asgi`, between requests, holding no thread (under `make run`, `make serve` and the
# tests' live server alike). A server that does not repeat answers (a WSGI server, Django's test
# client) gets every answer at once, and a view then says it did not wait (`server_waits`).

_WAITS = "changes_waits"
_UNCHANGED = "changes_unchanged"


@dataclass(frozen=True)
class Waits:
    """A view's marker: it waits for the changes of the instance its URL names (`on`, the URL
    argument; None: any instance's, ANY); with `prefer`, only when the request asks to wait
    (`Prefer: wait`)."""

    on: str | None
    prefer: bool = False

    def key(self, kwargs: dict[str, Any], prefer: str | None) -> str | None:
        """The key a request to the view waits on, or None when this request does not wait."""
        if self.prefer and "wait" not in (prefer or "").lower():
            return None
        return ANY if self.on is None else str(kwargs[self.on])


V = TypeVar("V", bound=Callable[..., Any])


def waits(on: str | None, *, prefer: bool = False) -> Callable[[V], V]:
    """Mark a view as one whose answer may wait for a change (see `Waits`)."""

    def mark(view: V) -> V:
        setattr(view, _WAITS, Waits(on, prefer))
        return view

    return mark


def waits_on(view: Callable[..., Any], kwargs: dict[str, Any], prefer: str | None) -> str | None:
    """The key a request to `view` (with its URL arguments) waits on; None: it does not wait."""
    marker: Waits | None = getattr(view, _WAITS, None)
    return None if marker is None else marker.key(kwargs, prefer)


# Set in an ASGI request's scope by the handler that answers it again until a change.
SERVER_WAITS = "console.waits"


def server_waits(request: Any) -> bool:  # noqa: ANN401 - any request
    """Whether the server repeats this request's unchanged answer until a change (see above);
    elsewhere an answer is final as it is, and a view must not claim to have waited."""
    scope = getattr(request, "scope", None)
    return isinstance(scope, dict) and bool(scope.get(SERVER_WAITS))


@dataclass(frozen=True)
class Unchanged:
    """An answer that found nothing new may wait `seconds` in all (counted from the request's
    first answer) and should be asked again after `recheck` seconds regardless (a question's
    time to live running out, which nobody writes; None: only at a notice)."""

    seconds: float
    recheck: float | None = None


def mark_unchanged(response: Any, seconds: float, recheck: float | None = None) -> Any:  # noqa: ANN401 - any response
    """Say of `response` that it found nothing new and may wait (see `Unchanged`)."""
    setattr(response, _UNCHANGED, Unchanged(seconds, recheck))
    return response


def unchanged(response: Any) -> Unchanged | None:  # noqa: ANN401 - any response
    """How long `response` may wait for a change; None: it is the answer."""
    return getattr(response, _UNCHANGED, None)


async def wait_for_change(
    key: str,
    attempt: Callable[[], Awaitable[T]],
    *,
    listen: bool,
    poll: float,
    gone: asyncio.Future[Any] | None = None,
) -> T | None:
    """The wait every waiting request goes through: `attempt()` answers the request; while its
    answer is `unchanged`, it is called again at each notice for `key` (an instance id, or ANY)
    and at the answer's recheck, until an answer is not unchanged or the time the first answer
    gave has passed; what it last answered is the answer. With `listen`, other processes'
    changes are heard (see `listening`); else it also answers again every `poll` seconds. A
    wait begun before `end_waits` ends at its next answer. Having heard nothing to the end, it
    gives the last answer without asking again. `gone`: done when the client went away, which
    ends the wait with None (no task of its own per waiter: thousands of them wait at once)."""
    started, era = time.monotonic(), _ended[0]
    heard = listen and await listening()
    deadline: float | None = None
    while True:
        # Watching before answering: a change committed between the two still wakes us.
        changed = watch(key)
        try:
            result = await attempt()
            wait = unchanged(result)
            if wait is None or _ended[0] != era:
                return result
            if deadline is None:
                deadline = started + wait.seconds
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return result
            pause = remaining if heard else poll
            if wait.recheck is not None:
                pause = min(pause, max(wait.recheck, MIN_PAUSE))
            awaited = (changed,) if gone is None else (changed, gone)
            done, _ = await asyncio.wait(
                awaited, timeout=min(pause, remaining), return_when=asyncio.FIRST_COMPLETED
            )
            if gone is not None and gone.done():
                return None
            if not done and heard and time.monotonic() >= deadline:
                return result  # heard nothing to the end: what was answered still holds
        finally:
            unwatch(key, changed)


def waiting() -> int:
    """How many waiters this process holds (for the benchmark's measurement and the tests)."""
    with _lock:
        return sum(len(group) for group in _waiters.values())


def _engine() -> str:
    """The default database's backend module, read from the settings: every waiting request
    asks, on the event loop, and `connections["default"]` there would make a connection object
    for each request's context (Django keeps one per asyncio context), about 3 KB a waiter."""
    return str(connections.settings["default"]["ENGINE"])


# PostgreSQL: one LISTEN connection per process, on the server's event loop, shared by all.
_listener: dict[str, Any] = {}


async def listening(timeout: float = 2.0) -> bool:
    """Whether this process hears other processes' changes: starts the LISTEN connection on the
    running loop when there is none (PostgreSQL only) and waits up to `timeout` for it."""
    engine = _engine()
    if engine.endswith("sqlite3"):
        return listen_locally()
    if not engine.endswith("postgresql"):
        return False
    loop = asyncio.get_running_loop()
    if _listener.get("loop") is not loop or _listener["task"].done():
        ready = asyncio.Event()
        _listener.update(loop=loop, ready=ready, task=loop.create_task(_listen(ready)))
    try:
        await asyncio.wait_for(_listener["ready"].wait(), timeout)
    except TimeoutError:
        return False
    return True


async def _listen(ready: asyncio.Event) -> None:
    import psycopg  # PostgreSQL only

    params = postgres.listening_params()
    while True:
        try:
            conn = await psycopg.AsyncConnection.connect(**params, autocommit=True)
            async with conn:
                await postgres.alisten(conn, CHANNEL)
                ready.set()
                # Changes made while this connection was not listening went unheard: everyone
                # re-reads once.
                wake(None)
                async for notice in conn.notifies():
                    wake(notice.payload)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.warning("The change listener lost its connection; reconnecting", exc_info=True)
        ready.clear()
        await asyncio.sleep(1)


# SQLite: every server process of the machine listens on a Unix datagram socket of its own in
# one directory; a committing process sends the instance's id to each socket there.
_local: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Path] = weakref.WeakKeyDictionary()
_sender: list[socket.socket] = []


def channel_directory() -> Path | None:
    """Where this machine's server processes of one SQLite file keep their sockets: a directory
    of the temporary directory named after the file (a socket's path has to stay under about
    100 bytes, which a directory beside a deeply placed file would not); None for an in-memory
    database (one process: nothing to tell others)."""
    name = str(connections.settings["default"].get("NAME") or "")
    if not name or name == ":memory:" or name.startswith("file:") or "mode=memory" in name:
        return None
    digest = hashlib.sha256(str(Path(name).resolve()).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"console-changes-{digest}"


def _own_private(directory: Path) -> bool:
    """Whether `directory` is this user's and nobody else may write in it (the temporary
    directory is shared: a directory someone else made is not trusted with our sockets)."""
    info = directory.lstat()
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o022


def listen_locally() -> bool:
    """Whether this process hears other processes' changes on SQLite: binds this loop's socket
    the first time (and says no when it cannot)."""
    loop = asyncio.get_running_loop()
    if loop in _local:
        return True
    directory = channel_directory()
    if directory is None:
        return False
    path = directory / f"{os.getpid()}-{uuid.uuid4().hex[:8]}.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        directory.mkdir(mode=0o700, exist_ok=True)
        if not _own_private(directory):
            raise PermissionError(f"{directory} is not this user's alone")
        sock.setblocking(False)
        sock.bind(str(path))
    except OSError:
        sock.close()
        log.warning("No change socket at %s: waiters re-read on a timer", path, exc_info=True)
        return False
    loop.add_reader(sock.fileno(), _drain, sock)
    _local[loop] = path
    atexit.register(_forget, path)
    # Changes made before this socket was bound went unheard: everyone re-reads once.
    wake(None)
    return True


def _drain(sock: socket.socket) -> None:
    while True:
        try:
            data = sock.recv(256)
        except (BlockingIOError, InterruptedError):
            return
        wake(data.decode("ascii", "replace"))


def _forget(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


def _broadcast(key: str) -> None:
    """Tell the machine's other listening processes (best effort: a waiter that misses a notice
    re-reads at its next long-poll)."""
    directory = channel_directory()
    if directory is None:
        return
    try:
        if not _own_private(directory):
            return
        names = os.listdir(directory)
    except OSError:
        return
    own = {str(path) for path in _local.values()}
    with _lock:
        if not _sender:
            sender = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            sender.setblocking(False)
            _sender.append(sender)
    data = key.encode("ascii")
    for name in names:
        path = str(directory / name)
        if not name.endswith(".sock") or path in own:
            continue
        try:
            _sender[0].sendto(data, path)
        except (ConnectionRefusedError, FileNotFoundError):
            _forget(Path(path))  # its process is gone
        except OSError:
            pass  # its queue is full: it hears of the change at its waiters' next long-poll
