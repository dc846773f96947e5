"""The one state machine of everything the console sends out (webhook deliveries, emails).

    pending ──claim──▶ sending ──finish──▶ done (succeeded, sent, skipped…)
       ▲                  │  └──finish (failed)──▶ pending again, after the retry schedule's
       │                  │                        delay; failed after its last step
       └──resume──────────┘  (the lease ran out: the worker died mid-attempt)
       └──release─────────┘  (claimed, never attempted: the worker is stopping)

The outbox tables are the queue: a worker takes a batch of due items at once (`due`: oldest
first, row-locked with SKIP LOCKED on PostgreSQL, so two workers never take the same item) and
claims them with one UPDATE. A claim takes a lease longer than the attempt's deadline (settings
refuse otherwise), so no second attempt starts while one runs. Each claim counts an attempt,
and an attempt may finish only the claim it made (`attempts` is its token): a worker paused
past its lease cannot overwrite what the attempt after it recorded. Outcomes are recorded in
batches (`finish_many`), one UPDATE per kind of outcome.

Writing an item wakes the workers: `announce` sends a PostgreSQL NOTIFY in the writing
transaction (delivered on commit), naming what was written (deliveries or emails), so a
woken worker looks only there; on SQLite the workers look every fraction of a second.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.db import transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from beliefs.domain.webhooks import retry_delay
from beliefs.models import OutboxItem, OutgoingEmail
from beliefs.selectors import postgres

PENDING = "pending"
SENDING = "sending"
FAILED = "failed"
# The PostgreSQL channel the workers LISTEN on.
CHANNEL = "console_outbox"
# What an announcement names (its payload). A payload a worker does not know (an empty one, from
# a process of an earlier version) makes it look at everything.
DELIVERIES = "deliveries"
EMAILS = "emails"
# Deliveries were held for want of room under a cap: a worker whose lane ends claims again.
HELD = "held"

Item = TypeVar("Item", bound=OutboxItem)


def announce(what: str = DELIVERIES) -> None:
    """Wake the workers when the caller's transaction commits: there is something to send
    (`what`: DELIVERIES, the default, EMAILS or HELD)."""
    postgres.notify(CHANNEL, what)


def announced_as(model: type[OutboxItem]) -> str:
    return EMAILS if issubclass(model, OutgoingEmail) else DELIVERIES


def due(model: type[Item], *, now: datetime) -> QuerySet[Item]:
    """The items due now, oldest first, locked as they are read; items another worker is
    taking right now are skipped (PostgreSQL; SQLite has one writer at a time). Slice it, and
    read it inside the transaction that claims them."""
    return (
        model._default_manager.filter(state=PENDING, next_attempt_at__lte=now)
        .order_by("next_attempt_at", "id")
        .select_for_update(skip_locked=True, of=("self",))
    )


def claim_many(
    model: type[OutboxItem],
    pks: Sequence[int],
    *,
    lease: timedelta,
    now: datetime,
    claimed_by: str = "",
    **fields: Any,
) -> int:
    """Take the items for one attempt each, those of them still pending and due: one UPDATE.
    Returns how many were taken."""
    if not pks:
        return 0
    return model._default_manager.filter(
        pk__in=list(pks), state=PENDING, next_attempt_at__lte=now
    ).update(
        state=SENDING,
        lease_until=now + lease,
        attempts=F("attempts") + 1,
        last_attempt_at=now,
        claimed_by=claimed_by,
        **fields,
    )


def as_claimed(
    items: Sequence[OutboxItem],
    *,
    lease: timedelta,
    now: datetime,
    claimed_by: str = "",
    **fields: Any,
) -> None:
    """Set on items read (and locked) in the claim's transaction what `claim_many`, given the
    same arguments, wrote to their rows, so that they need not be read again."""
    for item in items:
        item.state = SENDING
        item.lease_until = now + lease
        item.attempts += 1
        item.last_attempt_at = now
        item.claimed_by = claimed_by
        for name, value in fields.items():
            setattr(item, name, value)


def claim(
    model: type[OutboxItem], pk: int, *, lease: timedelta, now: datetime, claimed_by: str = ""
) -> bool:
    """Take the item for one attempt, if it is pending and due."""
    return claim_many(model, [pk], lease=lease, now=now, claimed_by=claimed_by) == 1


@dataclass(frozen=True)
class Finished:
    recorded: bool  # False: this attempt's lease ran out and it was taken up again
    state: str
    text: str  # what happened, for the log
    next_attempt_at: datetime | None = None  # pending again: when it is tried next


@dataclass
class Attempt:
    """One attempt's outcome, to record: `done` names the state it ended in; None means it
    failed, and it is tried again after the schedule's delay, or marked failed after the last
    (or at once when `final`). `fields` are the item's own (a status code, a sent time)."""

    item: OutboxItem
    done: str | None
    error: str = ""
    final: bool = False
    fields: dict[str, Any] = field(default_factory=dict)


def finish_many(attempts: Sequence[Attempt], *, schedule: Sequence[float]) -> list[Finished]:
    """Record the attempts (items of one model): one UPDATE per distinct outcome (a batch of
    successes is one statement), each writing only the items still held by these very attempts
    (still sending, and `attempts` still the claim's token), so an attempt that outlived its
    lease changes nothing. No transaction of its own: each UPDATE stands alone."""
    if not attempts:
        return []
    manager = type(attempts[0].item)._default_manager
    now = timezone.now()
    planned: list[tuple[dict[str, Any], str]] = []
    groups: dict[tuple[int, tuple[tuple[str, Any], ...]], list[int]] = {}
    for index, attempt in enumerate(attempts):
        item = attempt.item
        fields = {**attempt.fields, "lease_until": None, "last_error": attempt.error}
        delay = (
            None
            if attempt.done is not None or attempt.final
            else retry_delay(item.attempts, schedule)
        )
        if attempt.done is not None:
            fields["state"] = attempt.done
            text = attempt.done
        elif delay is None:
            fields["state"] = FAILED
            text = f"failed for good after {item.attempts} attempts"
        else:
            fields.update(state=PENDING, next_attempt_at=now + timedelta(seconds=delay))
            text = f"attempt {item.attempts} failed; retry in {delay:g} s"
        planned.append((fields, text))
        groups.setdefault((item.attempts, tuple(sorted(fields.items()))), []).append(index)
    recorded = [False] * len(attempts)
    for (token, fields_key), indexes in groups.items():
        pks = [attempts[i].item.pk for i in indexes]
        fields = dict(fields_key)
        written = manager.filter(pk__in=pks, state=SENDING, attempts=token).update(**fields)
        if written == len(pks):
            ours = set(pks)
        elif written == 0:
            ours = set()
        else:
            # Some of them were taken up after their lease ran out: those that hold what this
            # update wrote are ours (a resumed item carries the sweep's error, not ours).
            ours = set(
                manager.filter(
                    pk__in=pks,
                    attempts=token,
                    state=fields["state"],
                    last_error=fields["last_error"],
                    lease_until=None,
                ).values_list("pk", flat=True)
            )
        for i in indexes:
            recorded[i] = attempts[i].item.pk in ours
    results = []
    for attempt, (fields, text), ok in zip(attempts, planned, recorded, strict=True):
        if not ok:
            results.append(
                Finished(False, fields["state"], "finished elsewhere (its lease ran out)")
            )
            continue
        error = attempt.error
        results.append(
            Finished(
                True,
                fields["state"],
                f"{text}: {error}" if error else text,
                fields.get("next_attempt_at"),
            )
        )
    return results


def finish(
    item: OutboxItem,
    *,
    done: str | None,
    error: str = "",
    schedule: Sequence[float],
    final: bool = False,
    **fields: Any,
) -> Finished:
    """Record one attempt (see `Attempt`)."""
    (finished,) = finish_many([Attempt(item, done, error, final, fields)], schedule=schedule)
    return finished


def release(items: Sequence[OutboxItem]) -> int:
    """Give back items claimed but never attempted (the worker is stopping, or too little of
    the lease was left to start one): pending and due again, the attempt uncounted."""
    model = type(items[0]) if items else None
    count = 0
    for item in items:
        assert model is not None
        count += model._default_manager.filter(
            pk=item.pk, state=SENDING, attempts=item.attempts
        ).update(state=PENDING, attempts=F("attempts") - 1, lease_until=None)
    if count and model is not None:
        announce(announced_as(model))
    return count


def resume(
    model: type[OutboxItem],
    *,
    now: datetime,
    schedule: Sequence[float],
) -> int:
    """Take up again what a dead worker held (its lease ran out). Returns how many."""
    manager = model._default_manager
    count = 0
    for item in manager.filter(state=SENDING, lease_until__lt=now):
        # The attempt that died counts: past the schedule's end the item fails.
        gone = retry_delay(item.attempts, schedule) is None
        error = f"the worker stopped during attempt {item.attempts} (its lease ran out)"
        with transaction.atomic():
            resumed = manager.filter(
                pk=item.pk, state=SENDING, attempts=item.attempts, lease_until__lt=now
            ).update(
                state=FAILED if gone else PENDING,
                lease_until=None,
                next_attempt_at=now,
                last_error=error,
            )
            if resumed and not gone:
                announce(announced_as(model))
        count += resumed
    return count
