"""The one state machine of everything the console sends out (webhook deliveries, emails).

    pending ──claim──▶ sending ──finish──▶ done (succeeded, sent, skipped…)
       ▲                  │  └──finish (failed)──▶ pending again, after the retry schedule's
       │                  │                        delay; failed after its last step
       └──resume──────────┘  (the lease ran out: the worker died mid-attempt)

A claim is one conditional UPDATE, so of two workers holding jobs for one item, one claims it.
The claim takes a lease longer than the attempt's deadline (settings refuse otherwise), so no
second attempt starts while one runs. Each claim counts an attempt, and an attempt may finish
only the claim it made (`attempts` is its token): a worker paused past its lease cannot
overwrite what the attempt after it recorded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone
from django_tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from beliefs.domain.webhooks import retry_delay
from beliefs.models import OutboxItem

PENDING = "pending"
SENDING = "sending"
FAILED = "failed"
# A pending item whose job has not run for this long lost its job (pruned, or never committed
# by a crashed worker): the sweep gives it a new one.
OVERDUE = timedelta(minutes=10)

Item = TypeVar("Item", bound=OutboxItem)
# Queue the item's job (at a time, or now).
Enqueue = Callable[[int, "datetime | None"], None]


def claim(model: type[OutboxItem], pk: int, *, lease: timedelta, now: datetime) -> bool:
    """Take the item for one attempt, if it is pending and due."""
    return (
        model._default_manager.filter(pk=pk, state=PENDING, next_attempt_at__lte=now).update(
            state=SENDING,
            lease_until=now + lease,
            attempts=F("attempts") + 1,
            last_attempt_at=now,
        )
        == 1
    )


@dataclass(frozen=True)
class Finished:
    recorded: bool  # False: this attempt's lease ran out and it was taken up again
    state: str
    text: str  # what happened, for the job log


def finish(
    item: OutboxItem,
    *,
    done: str | None,
    error: str = "",
    schedule: Sequence[float],
    enqueue: Enqueue,
    final: bool = False,
    **fields: Any,
) -> Finished:
    """Record the attempt: `done` names the state it ended in; None means it failed, and it is
    tried again after the schedule's delay, or marked failed after the last (or at once when
    `final`). `fields` are the item's own (a status code, a sent time). Call it in a
    transaction."""
    now = timezone.now()
    fields.update(lease_until=None, last_error=error)
    delay = None if done is not None or final else retry_delay(item.attempts, schedule)
    if done is not None:
        fields.update(state=done)
        result = done
    elif delay is None:
        fields.update(state=FAILED)
        result = f"failed for good after {item.attempts} attempts"
    else:
        fields.update(state=PENDING, next_attempt_at=now + timedelta(seconds=delay))
        result = f"attempt {item.attempts} failed; retry in {delay:g} s"
    updated = (
        type(item)
        ._default_manager.filter(pk=item.pk, state=SENDING, attempts=item.attempts)
        .update(**fields)
    )
    if not updated:
        return Finished(False, fields["state"], "finished elsewhere (its lease ran out)")
    if fields["state"] == PENDING:
        enqueue(item.pk, fields["next_attempt_at"])
    return Finished(True, fields["state"], f"{result}: {error}" if error else result)


def resume(
    model: type[OutboxItem],
    *,
    now: datetime,
    schedule: Sequence[float],
    enqueue: Enqueue,
    job_path: str,
    overdue_filter: Q | None = None,
) -> int:
    """Take up again what a dead worker held (its lease ran out) and pending items whose job is
    long overdue. A duplicate job is harmless: the claim admits one. Returns how many.

    The dead worker's job (`job_path`, still RUNNING in the queue) is closed as failed, so the
    queue does not show it running for ever."""
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
            if resumed:
                _close_dead_job(job_path, item, now)
            if resumed and not gone:
                enqueue(item.pk, None)
        count += resumed
    overdue = manager.filter(state=PENDING, next_attempt_at__lt=now - OVERDUE)
    if overdue_filter is not None:
        overdue = overdue.filter(overdue_filter)
    for pk in overdue.values_list("pk", flat=True):
        enqueue(pk, None)
        count += 1
    return count


def _close_dead_job(job_path: str, item: OutboxItem, now: datetime) -> None:
    """The job that claimed the item started before its claim and is still RUNNING after the
    lease: its worker is gone."""
    if item.last_attempt_at is None:  # never claimed through claim(): no job to tell apart
        return
    DBTaskResult.objects.filter(
        status=TaskResultStatus.RUNNING,
        task_path=job_path,
        args_kwargs__args=[item.pk],
        started_at__lte=item.last_attempt_at,
    ).update(
        status=TaskResultStatus.FAILED,
        finished_at=now,
        exception_class_path="beliefs.services.outbox.WorkerStopped",
        traceback="The worker stopped during the attempt (its lease ran out); the item was "
        "taken up again by the sweep.",
    )
