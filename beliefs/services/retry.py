"""Retrying a transaction the database gave up on.

Writers lock in one order (the principal's row, then the instance's, each with `of=("self",)`),
so they queue rather than deadlock. PostgreSQL may still abort a transaction with a deadlock or
a serialization failure (a race between transactions that never touch the same locks in the same
order, such as two vetoes retiring each other's older beliefs); that transaction did nothing, so
running it again is safe. After a few tries the caller gets a 503 with a JSON body, never a 500.
"""

from __future__ import annotations

import functools
import random
import time
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from django.db import DatabaseError, connection

from beliefs.errors import ServiceUnavailable

P = ParamSpec("P")
R = TypeVar("R")

ATTEMPTS = 5
# PostgreSQL's SQLSTATEs for "this transaction lost a race; try it again".
RETRYABLE_SQLSTATES = frozenset({"40001", "40P01"})


def is_retryable(exc: BaseException) -> bool:
    """Did the database abort the transaction because of a race (deadlock, serialization)?"""
    cause = exc.__cause__ or exc.__context__
    return getattr(cause, "sqlstate", None) in RETRYABLE_SQLSTATES


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
