"""Delivering webhook events: deliveries follow the outbox's state machine (services/outbox.py);
the transport is beliefs/net.py.

A worker claims due deliveries in batches, as lanes: up to `lane_size()` deliveries of one
endpoint, sent in turn over one kept-alive connection (a `Pool` per endpoint) and recorded
together. The caps count lanes: at most CONSOLE_WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT connections
to an endpoint and …_PER_RUNTIME to a runtime's endpoints at once, over all workers.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Min, Q
from django.utils import timezone
from opentelemetry.trace import SpanKind
from standardwebhooks.webhooks import Webhook

from beliefs.domain import webhooks as rules
from beliefs.domain.vocabulary import AuditKind
from beliefs.domain.webhooks import UnsafeDestination
from beliefs.models import WebhookDelivery, WebhookEndpoint, WebhookEvent
from beliefs.net import Deadline, Outcome, Pool, post, resolve_within
from beliefs.selectors.outbox import claimable_deliveries, lanes_in_flight, lock_runtimes
from beliefs.services import outbox
from beliefs.services.audit import Actor, audit
from beliefs.services.webhooks.endpoints import resolve
from beliefs.tracing import annotate
from beliefs.tracing import span as traced

USER_AGENT = "confirmation-console-webhooks/1"
# At most this many deliveries in one lane (also bounded by the lease: see `lane_size`).
MAX_LANE = 25
# A held delivery that nothing took up for this long is freed by the sweep.
OVERDUE = timedelta(minutes=10)


@transaction.atomic
def delivery_redeliver(*, delivery: WebhookDelivery, actor: Actor) -> bool:
    """Send a delivery again with the same webhook-id, its retry schedule started afresh.
    A delivery being sent right now is left alone (False)."""
    now = timezone.now()
    updated = (
        WebhookDelivery.objects.filter(pk=delivery.pk)
        .exclude(state=WebhookDelivery.State.SENDING)
        .update(state=WebhookDelivery.State.PENDING, attempts=0, next_attempt_at=now, held=False)
    )
    if not updated:
        return False
    outbox.announce(outbox.DELIVERIES)
    audit(
        AuditKind.WEBHOOK_REDELIVERED,
        actor=actor,
        subject=delivery.event.type,
        data={"delivery": delivery.pk, "webhook_id": delivery.event.webhook_id},
    )
    return True


def body_of(event: WebhookEvent) -> str:
    """The exact text that is signed and sent: the same on every attempt. ASCII only, so no
    encoding can differ between the signature and the bytes."""
    return json.dumps(event.payload, separators=(",", ":"), ensure_ascii=True)


def signature_headers(
    endpoint: WebhookEndpoint, event: WebhookEvent, body: str, now: datetime
) -> dict[str, str]:
    secrets = [endpoint.secret]
    if (
        endpoint.previous_secret
        and endpoint.previous_secret_until
        and (endpoint.previous_secret_until > now)
    ):
        secrets.append(endpoint.previous_secret)
    signatures = [Webhook(s).sign(event.webhook_id, now, body) for s in secrets]
    return {
        "webhook-id": event.webhook_id,
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": " ".join(signatures),
    }


def _schedule() -> Sequence[float]:
    return settings.CONSOLE_WEBHOOK_RETRY_SECONDS or rules.RETRY_SECONDS


def _lease() -> timedelta:
    return timedelta(seconds=settings.CONSOLE_WEBHOOK_LEASE_SECONDS)


def lane_size() -> int:
    """Deliveries in one lane: as many as fit in the lease if each took its whole deadline.
    (What bounds an attempt is `lane_deliver`: it starts one only with its whole deadline left
    within the lease, and gives back the rest.)"""
    lease = settings.CONSOLE_WEBHOOK_LEASE_SECONDS
    deadline = settings.CONSOLE_WEBHOOK_TIMEOUT_SECONDS
    return max(1, min(MAX_LANE, int(lease // max(deadline, 0.001)) - 1))


@dataclass
class Lane:
    """Deliveries of one endpoint claimed together by one worker, sent in turn over one
    connection. `lease_ends` is the lease's end on this process's monotonic clock."""

    endpoint_id: int
    runtime_id: int
    claimed_by: str
    lease_ends: float
    deliveries: list[WebhookDelivery] = field(default_factory=list)
    due_by: datetime | None = None  # renewing, take only deliveries due by then
    # The claim that filled it may have left more of its endpoint's deliveries due.
    backlog: bool = False
    # Asked once its deliveries are sent: whether to look for more of its endpoint's due
    # deliveries, to claim them in the transaction that records its outcomes (None: always).
    # A worker answers from what it has heard since the lane last looked.
    renew: Callable[[], bool] | None = None
    # The earliest retry its failed attempts were given.
    retry_at: datetime | None = None


class _Room:
    """Lanes open per endpoint and per runtime, against the caps."""

    def __init__(self, lanes: Sequence[Any]) -> None:
        self.endpoint: dict[int, int] = {}
        self.runtime: dict[int, int] = {}
        for runtime_id, endpoint_id, _ in lanes:
            self.add(runtime_id, endpoint_id)

    def add(self, runtime_id: int, endpoint_id: int) -> None:
        self.endpoint[endpoint_id] = self.endpoint.get(endpoint_id, 0) + 1
        self.runtime[runtime_id] = self.runtime.get(runtime_id, 0) + 1

    def fits(self, runtime_id: int, endpoint_id: int) -> bool:
        return (
            self.endpoint.get(endpoint_id, 0) < settings.CONSOLE_WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT
            and self.runtime.get(runtime_id, 0) < settings.CONSOLE_WEBHOOK_MAX_IN_FLIGHT_PER_RUNTIME
        )

    def full_endpoints(self) -> list[int]:
        cap = settings.CONSOLE_WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT
        return [e for e, n in self.endpoint.items() if n >= cap]

    def full_runtimes(self) -> list[int]:
        cap = settings.CONSOLE_WEBHOOK_MAX_IN_FLIGHT_PER_RUNTIME
        return [r for r, n in self.runtime.items() if n >= cap]


@dataclass
class Claimed:
    """What a claim took, and what it saw of the rest."""

    lanes: list[Lane]
    # It saw every due delivery (but those another worker was claiming at that moment).
    complete: bool
    # Due deliveries are left waiting for room (held): a lane's end may make some.
    held: bool


def deliveries_claim(
    *,
    worker: str,
    lanes: int,
    new_lane: Callable[[], str],
    only: int | None = None,
    due_by: datetime | None = None,
) -> Claimed:
    """Claim up to `lanes` lanes of due deliveries, in one transaction: due deliveries are
    read in a batch with what sending them needs (oldest first, SKIP LOCKED), their runtimes'
    rows locked, the lanes in flight counted under those locks, and the deliveries that fit
    claimed with one UPDATE per lane. A due delivery over a cap, or beyond the lanes asked
    for, is marked held (it waits, pending, for room). `new_lane` names a lane (unique within
    the worker); `only` restricts it to one delivery, `due_by` to the deliveries due by then
    (a batch run: what was due when it started).

    It never waits for a delivery row another transaction holds (it skips those; it waits
    only for the runtimes' locks, which claims take in id order), so a lane recording its
    outcomes may wait for a claim, never a claim for a lane: they cannot deadlock."""
    if lanes <= 0:
        return Claimed([], complete=False, held=False)
    now = timezone.now()
    lease_ends = time.monotonic() + settings.CONSOLE_WEBHOOK_LEASE_SECONDS
    size = lane_size() if only is None else 1
    limit = lanes * size
    pending = WebhookDelivery.State.PENDING
    due_at = min(now, due_by) if due_by is not None else now
    newly_held = 0
    with transaction.atomic():
        batch = claimable_deliveries(due_at=due_at, limit=limit, only=only)
        complete = len(batch) < limit
        if not complete and only is None:
            # More is due than one batch: deliveries of endpoints and runtimes at their caps
            # (as counted now, without the locks) are held and left out, so that they do not
            # fill the batch ahead of those that have room.
            full = _Room(lanes_in_flight(now))
            endpoints, runtimes = full.full_endpoints(), full.full_runtimes()
            if endpoints or runtimes:
                capped = Q(endpoint_id__in=endpoints) | Q(endpoint__runtime_id__in=runtimes)
                # Told apart on the staff pages: waiting for room, not lost. Those another
                # transaction holds are left alone: a plain UPDATE would wait for them while
                # holding this claim's rows (and the rows it rechecked on the way), which a
                # lane recording its outcomes may be waiting for.
                waiting = (
                    WebhookDelivery.objects.filter(
                        capped, state=pending, held=False, next_attempt_at__lte=due_at
                    )
                    .order_by()
                    .select_for_update(skip_locked=True, of=("self",))
                    .values_list("pk", flat=True)
                )
                newly_held += WebhookDelivery.objects.filter(pk__in=list(waiting)).update(held=True)
                batch = claimable_deliveries(
                    due_at=due_at,
                    limit=limit,
                    left_out_endpoints=endpoints,
                    left_out_runtimes=runtimes,
                )
        if not batch:
            if newly_held:
                outbox.announce(outbox.HELD)
            return Claimed([], complete=complete, held=newly_held > 0)
        runtime_ids = sorted({d.endpoint.runtime_id for d in batch})
        # Claims of one runtime's deliveries take turns on its row, so the caps are counted
        # exactly.
        lock_runtimes(runtime_ids)
        room = _Room(lanes_in_flight(now, runtime_ids))
        opened: dict[int, Lane] = {}
        claimed: list[Lane] = []
        held: list[int] = []
        for delivery in batch:
            endpoint_id, runtime_id = delivery.endpoint_id, delivery.endpoint.runtime_id
            lane = opened.get(endpoint_id)
            if lane is not None and len(lane.deliveries) >= size:
                lane = None
            if lane is None:
                if len(claimed) >= lanes or not room.fits(runtime_id, endpoint_id):
                    held.append(delivery.pk)
                    continue
                name = f"{worker}#{new_lane()}"
                lane = Lane(endpoint_id, runtime_id, name, lease_ends, due_by=due_by)
                room.add(runtime_id, endpoint_id)
                opened[endpoint_id] = lane
                claimed.append(lane)
            lane.deliveries.append(delivery)
        unread = []
        for lane in claimed:
            taken = outbox.claim_many(
                WebhookDelivery,
                [d.pk for d in lane.deliveries],
                lease=_lease(),
                now=now,
                claimed_by=lane.claimed_by,
                held=False,
            )
            if taken == len(lane.deliveries):
                outbox.as_claimed(
                    lane.deliveries, lease=_lease(), now=now, claimed_by=lane.claimed_by, held=False
                )
            else:  # not expected under the row locks; read below what the claim took
                unread.append(lane)
        if held:
            newly_held += WebhookDelivery.objects.filter(
                pk__in=held, state=pending, held=False
            ).update(held=True)
        if newly_held:
            outbox.announce(outbox.HELD)
    left = set(held)
    held_endpoints = {d.endpoint_id for d in batch if d.pk in left}
    for lane in claimed:
        lane.backlog = not complete or lane.endpoint_id in held_endpoints
    for lane in unread:
        lane.deliveries = _read_claimed(lane.claimed_by, [d.pk for d in lane.deliveries])
    return Claimed(
        [lane for lane in claimed if lane.deliveries],
        complete=complete,
        held=bool(held) or newly_held > 0,
    )


def _read_claimed(claimed_by: str, pks: Sequence[int]) -> list[WebhookDelivery]:
    """The deliveries among `pks` that the claim named `claimed_by` took, in that order."""
    rows = WebhookDelivery.objects.select_related("event", "endpoint").in_bulk(list(pks))
    return [rows[pk] for pk in pks if pk in rows and rows[pk].claimed_by == claimed_by]


class Pools:
    """One connection pool per endpoint, for a worker's lifetime."""

    def __init__(self) -> None:
        self._pools: dict[int, Pool] = {}

    def of(self, endpoint_id: int) -> Pool:
        pool = self._pools.get(endpoint_id)
        if pool is None:
            pool = self._pools.setdefault(
                endpoint_id, Pool(keep=settings.CONSOLE_WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT)
            )
        return pool

    def close(self) -> None:
        for pool in self._pools.values():
            pool.close()
        self._pools.clear()


# Record a lane's outcomes at least this often while it is being sent (and at its end).
RECORD_EVERY_SECONDS = 0.2


# A lane whose endpoint has more due deliveries takes them in the transaction that records its
# last ones (it keeps its place under the caps), this many times; then it ends, and the next
# claim shares the room out again, oldest delivery first.
MAX_RENEWALS = 8


def lane_deliver(lane: Lane, pool: Pool | None = None, stopping: Callable[[], bool] = bool) -> str:
    """Send the lane's deliveries in turn, one attempt each, over the pool's connection, and
    record the outcomes in batches. An attempt starts only with its whole deadline left within
    the lease, and not once the worker is stopping: those deliveries are given back."""
    deadline = settings.CONSOLE_WEBHOOK_TIMEOUT_SECONDS
    done: list[outbox.Attempt] = []
    texts: list[str] = []
    recorded_at = time.monotonic()
    rest = list(lane.deliveries)
    renewals = 0
    while rest:
        if stopping() or time.monotonic() + deadline + 1 >= lane.lease_ends:
            break
        delivery = rest.pop(0)
        done.append(_attempt(delivery, pool))
        if (
            not rest
            and renewals < MAX_RENEWALS
            and not stopping()
            and (lane.renew is None or lane.renew())
        ):
            more = _record_and_renew(lane, done, texts)
            done, recorded_at = [], time.monotonic()
            rest, renewals = more, renewals + 1
        elif time.monotonic() - recorded_at >= RECORD_EVERY_SECONDS:
            texts += _record(done, lane)
            done, recorded_at = [], time.monotonic()
    texts += _record(done, lane)
    if rest:
        outbox.release(rest)
        texts.append(f"{len(rest)} given back")
    return "; ".join(texts)


def _record_and_renew(
    lane: Lane, attempts: Sequence[outbox.Attempt], texts: list[str]
) -> list[WebhookDelivery]:
    """Record the lane's outcomes and, in the same transaction, claim the next due deliveries
    of its endpoint for it (the lane stays one lane under the caps)."""
    now = timezone.now()
    lease_ends = time.monotonic() + settings.CONSOLE_WEBHOOK_LEASE_SECONDS
    size = lane_size()
    with transaction.atomic():
        texts += _finished(attempts, lane)
        rows = claimable_deliveries(
            due_at=min(now, lane.due_by) if lane.due_by else now,
            limit=size,
            endpoint_id=lane.endpoint_id,
        )
        pks = [row.pk for row in rows]
        taken = outbox.claim_many(
            WebhookDelivery, pks, lease=_lease(), now=now, claimed_by=lane.claimed_by, held=False
        )
        if taken == len(rows):
            outbox.as_claimed(rows, lease=_lease(), now=now, claimed_by=lane.claimed_by, held=False)
    lane.backlog = len(rows) >= size
    if not rows:
        return []
    lane.lease_ends = lease_ends
    return rows if taken == len(rows) else _read_claimed(lane.claimed_by, pks)


def _attempt(delivery: WebhookDelivery, pool: Pool | None) -> outbox.Attempt:
    endpoint = delivery.endpoint
    if not endpoint.active or endpoint.deleted_at is not None:
        return _outcome(delivery, Outcome(None, "", "the endpoint is inactive"), final=True)
    try:
        outcome = _post(delivery, pool)
    except Exception as exc:  # noqa: BLE001 - recorded on the delivery and retried
        outcome = Outcome(None, "", f"{type(exc).__name__}: {exc}"[:500])
    return _outcome(delivery, outcome)


def _outcome(delivery: WebhookDelivery, outcome: Outcome, *, final: bool = False) -> outbox.Attempt:
    fields: dict[str, Any] = {
        "last_status_code": outcome.status,
        "last_response": outcome.response,
    }
    done = WebhookDelivery.State.SUCCEEDED if outcome.ok else None
    return outbox.Attempt(delivery, done, outcome.error, final, fields)


def _record(attempts: Sequence[outbox.Attempt], lane: Lane | None = None) -> list[str]:
    """Record the outcomes (one UPDATE per kind of outcome, each standing alone)."""
    return _finished(attempts, lane) if attempts else []


def _finished(attempts: Sequence[outbox.Attempt], lane: Lane | None = None) -> list[str]:
    """Record the outcomes, in the caller's transaction if any; what happened, for the log.
    The lane learns the earliest retry they were given."""
    # One time for the batch (recorded at most RECORD_EVERY_SECONDS after it arrived), so that
    # the batch's successes are one UPDATE.
    now = timezone.now()
    for attempt in attempts:
        if attempt.done == WebhookDelivery.State.SUCCEEDED:
            attempt.fields["delivered_at"] = now
    finished = outbox.finish_many(attempts, schedule=_schedule())
    texts = []
    for attempt, result in zip(attempts, finished, strict=True):
        status = attempt.fields.get("last_status_code")
        texts.append(f"{result.text} ({status})" if status else result.text)
        retry = result.next_attempt_at
        if lane is not None and retry is not None:
            lane.retry_at = retry if lane.retry_at is None else min(lane.retry_at, retry)
    return texts


def delivery_attempt(delivery_id: int) -> str:
    """One attempt of one delivery (a job queued before the outbox was the workers' queue).
    Returns what happened, for the job log.

    Whatever goes wrong before or after connecting is recorded as the attempt's error and
    follows the retry schedule: a delivery never stays `sending`.
    """
    lanes = deliveries_claim(
        worker="job", lanes=1, new_lane=lambda: str(delivery_id), only=delivery_id
    ).lanes
    if not lanes:
        held = WebhookDelivery.objects.filter(pk=delivery_id, held=True, state="pending")
        if held.exists():
            return "held: its endpoint or runtime is at its cap of deliveries in flight"
        return "not due"
    return lane_deliver(lanes[0])


def _post(delivery: WebhookDelivery, pool: Pool | None = None) -> Outcome:
    endpoint, event = delivery.endpoint, delivery.event
    # One deadline for the whole attempt, the name's resolution included.
    deadline = Deadline(settings.CONSOLE_WEBHOOK_TIMEOUT_SECONDS)
    try:
        # Checked again at every attempt: what a name resolves to can change.
        dest = rules.check_destination(
            endpoint.url,
            resolve_within(resolve, deadline),
            allow_private=settings.CONSOLE_WEBHOOK_ALLOW_PRIVATE,
        )
    except UnsafeDestination as exc:
        return Outcome(None, "", f"refused: url {exc}")
    body = body_of(event)
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        **signature_headers(endpoint, event, body, timezone.now()),
    }
    # In the trace of the request that caused it, one hop on: the span of this HTTP request.
    details: dict[str, str | int] = {
        "http.request.method": "POST",
        "server.address": dest.host,
        "webhook.id": event.webhook_id,
        "webhook.type": event.type,
        "webhook.endpoint": endpoint.pk,
    }
    with traced("POST webhook", event.traceparent, details, SpanKind.CLIENT) as hop:
        if hop:
            headers["traceparent"] = hop
        outcome = post(dest, headers, body.encode("ascii"), deadline, pool)
        if outcome.status is not None:
            annotate({"http.response.status_code": outcome.status})
        return outcome


def _finish(delivery: WebhookDelivery, outcome: Outcome, *, final: bool = False) -> str:
    """Record one attempt's outcome (as a worker does)."""
    (text,) = _record([_outcome(delivery, outcome, final=final)])
    return text


@dataclass(frozen=True)
class Outlook:
    """What waits in the deliveries' queue."""

    next_due: datetime | None  # the next delivery not waiting for room (None: none pending)
    held: bool  # some wait for room under a cap


def deliveries_outlook() -> Outlook:
    """When the next delivery not waiting for room falls due, and whether any wait for room."""
    found = WebhookDelivery.objects.filter(state=WebhookDelivery.State.PENDING).aggregate(
        due=Min("next_attempt_at", filter=Q(held=False)), held=Count("pk", filter=Q(held=True))
    )
    return Outlook(found["due"], found["held"] > 0)


def deliveries_resume(*, now: datetime | None = None) -> int:
    """Take up deliveries whose worker died mid-attempt (lease run out), and free held ones
    that nothing took up (a backstop: a worker's claim takes them up once there is room)."""
    now = now or timezone.now()
    count = outbox.resume(WebhookDelivery, now=now, schedule=_schedule())
    room = _Room(lanes_in_flight(now))
    stale = WebhookDelivery.objects.filter(
        state=WebhookDelivery.State.PENDING, held=True, next_attempt_at__lt=now - OVERDUE
    ).exclude(
        Q(endpoint_id__in=room.full_endpoints()) | Q(endpoint__runtime_id__in=room.full_runtimes())
    )
    if stale.update(held=False):
        outbox.announce(outbox.DELIVERIES)
    return count
