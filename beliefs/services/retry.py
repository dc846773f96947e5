"""Retrying a transaction the database gave up on.

Writers lock in one order (the principal's row, then the instance's, each with `of=("self",)`),
so they queue rather than deadlock. PostgreSQL may still abort a transaction with a deadlock or
a serialization failure (a race between transactions that never touch the same locks in the same
order, such as two vetoes retiring each other's older beliefs); that transaction did nothing, so
running it again is safe. After a few tries the caller gets a 503 with a JSON body, never a 500.

A database out of reach (a restart, a cut connection) is a 503 as well: `as_unavailable` tells
the database's trouble from any other error, for the API's handler and the pages' alike.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import random
import time
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from django.db import DatabaseError, InterfaceError, OperationalError, connection, connections

from beliefs.errors import DatabaseUnavailable, ServiceUnavailable

logger = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")

ATTEMPTS = 5
# PostgreSQL's SQLSTATEs for "this transaction lost a race; try it again".
RETRYABLE_SQLSTATES = frozenset({"40001", "40P01"})


def is_retryable(exc: BaseException) -> bool:
    """Did the database abort the transaction because of a race (deadlock, serialization)?"""
    cause = exc.__cause__ or exc.__context__
    return getattr(cause, "sqlstate", None) in RETRYABLE_SQLSTATES


def is_unavailable(exc: BaseException) -> bool:
    """Could the database not be reached, or did it drop the connection (a restart, an
    administrator's `pg_terminate_backend`, a cut network, a timeout)? Then the request could
    not be answered, and trying again in a moment will work: a 503, never a 500.

    Follows the chain of causes, for an error raised while handling the database's."""
    seen: BaseException | None = exc
    for _ in range(10):
        if seen is None:
            return False
        if isinstance(seen, OperationalError | InterfaceError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def drop_broken_connections() -> None:
    """Close each connection the database dropped, so that the process's next request opens a
    new one instead of failing on the dead one (Django's own check runs only when the request
    has finished). A connection inside a transaction is its owner's to close (a test's)."""
    for conn in connections.all(initialized_only=True):
        if not conn.in_atomic_block:
            # Closing a dead connection may itself fail; it is forgotten either way.
            with contextlib.suppress(DatabaseError):
                conn.close_if_unusable_or_obsolete()


BUSY_DETAIL = "The database was busy with competing changes; nothing was recorded. Try again."
UNAVAILABLE_DETAIL = (
    "The database could not be reached, or it dropped the connection, while answering this "
    "request. Try again in a moment. A change sent with it may or may not have been recorded; "
    "sending it again is safe (an answer names its prompt version, an open its "
    "Idempotency-Key)."
)


def as_unavailable(exc: BaseException) -> ServiceUnavailable | None:
    """The 503 to answer for `exc`, or None when it is not the database's trouble: a race the
    retries could not win (`busy`), or a database out of reach (`database_unavailable`, and
    the dead connection is closed so the next request reconnects)."""
    if isinstance(exc, ServiceUnavailable):
        return exc
    if isinstance(exc, DatabaseError) and is_retryable(exc):
        # A race the services could not retry (the retries ran out, or a read lost one).
        return ServiceUnavailable(BUSY_DETAIL, code="busy")
    if is_unavailable(exc):
        logger.warning("database unavailable: %s", str(exc).strip())
        drop_broken_connections()
        return DatabaseUnavailable(UNAVAILABLE_DETAIL)
    return None


def retry_on_race(func: Callable[P, R]) -> Callable[P, R]:
    """Run `func` (a whole transaction) again when the database aborts it for a race.

    Only the outermost transaction can be retried: inside another one (a test, a caller's own
    `atomic`) the error goes up unchanged, since the enclosing transaction is already aborted.
    """

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        for attempt in range(ATTEMPTS):
            try:
                return func(*args, **kwargs)
            except DatabaseError as exc:
                if not is_retryable(exc) or connection.in_atomic_block:
                    raise
                # Back off a little, with jitter, so the racers do not collide again in step.
                time.sleep(random.uniform(0, 0.02 * 2**attempt))  # noqa: S311 - not security
        raise ServiceUnavailable(
            "The database is busy with competing changes to this instance; nothing was "
            "recorded. Try again in a moment.",
            code="busy",
        )

    return wrapper
