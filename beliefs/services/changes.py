"""Change notifications: whoever waits for an instance hears the moment a change to it commits.

Every writer of an instance takes its row lock (`lifecycle.lock_instance`, or the re-plan's
own lock) or, redeeming a receipt, changes the receipt's row: those places call
`instance_changed` inside their transaction. The notice is sent on commit only, so a waiter
re-reading then sees the change, and a rolled-back write wakes nobody.

- PostgreSQL: `NOTIFY console_instance, '<id>'` inside the transaction; the database delivers it
  on commit to every listening process (one LISTEN connection per server process, `listen`).
- Everywhere, the process that committed also wakes its own waiters (`transaction.on_commit`):
  on SQLite (one machine, no NOTIFY) that is all there is, and waiters in other processes fall
  back to a short poll (see `beliefs.api.longpoll`).

A notice may be spurious (a lock taken for a write that changed nothing): a waiter only re-reads
and compares the ETag, so one too many costs a read, one too few would cost a wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from typing import Any

from django.db import connection, connections, transaction

CHANNEL = "console_instance"
log = logging.getLogger(__name__)


def instance_changed(instance_id: Any) -> None:
    """Announce, on commit, that the instance changed (call inside the changing transaction)."""
    key = str(instance_id)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_notify(%s, %s)", [CHANNEL, key])
    transaction.on_commit(lambda: wake(key))


# The waiters of this process: instance id → futures, each on the event loop awaiting it (under
# ASGI one loop per process; under WSGI each waiting request runs a loop of its own). Woken from
# any thread (a commit runs in a worker thread), hence the lock and `call_soon_threadsafe`.
_waiters: dict[str, set[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]]] = {}
_lock = threading.Lock()


def watch(key: str) -> asyncio.Future[None]:
    """A future done at the next change of the instance `key` (call `unwatch` when done)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[None] = loop.create_future()
    with _lock:
        _waiters.setdefault(key, set()).add((loop, future))
    return future


def unwatch(key: str, future: asyncio.Future[None]) -> None:
    with _lock:
        entries = _waiters.get(key)
        if entries is not None:
            entries.discard((future.get_loop(), future))
            if not entries:
                del _waiters[key]


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


def waiting() -> int:
    """How many waiters this process holds (for the README's measurement and the tests)."""
    with _lock:
        return sum(len(group) for group in _waiters.values())


# PostgreSQL: one LISTEN connection per process, on the server's event loop, shared by all.
_listener: dict[str, Any] = {}


async def listening(timeout: float = 2.0) -> bool:
    """Whether this process hears other processes' changes: starts the LISTEN connection on the
    running loop when there is none (PostgreSQL only) and waits up to `timeout` for it."""
    if connections["default"].vendor != "postgresql":
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

    # As Django connects (host, credentials, sslmode and the other OPTIONS), less what only its
    # own sync cursors use.
    params = connections["default"].get_connection_params()
    for name in ("cursor_factory", "context", "prepare_threshold"):
        params.pop(name, None)
    while True:
        try:
            conn = await psycopg.AsyncConnection.connect(**params, autocommit=True)
            async with conn:
                await conn.execute(f"LISTEN {CHANNEL}")
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
