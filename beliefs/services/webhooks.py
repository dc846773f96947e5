"""Webhook endpoints, the event outbox and delivering it.

An event is written in the transaction of the change that causes it, with one delivery per
subscribed endpoint and one queued job per delivery (the jobs live in the same database), so a
rolled-back change sends nothing and a committed one is delivered even if no worker ran at the
time. Delivery is at least once: a receiver drops duplicates by `webhook-id`. Deliveries follow
the outbox's state machine (services/outbox.py); the transport is beliefs/net.py.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Max, Q
from django.utils import timezone
from django_tasks import task
from standardwebhooks.webhooks import Webhook

from beliefs.domain import webhooks as rules
from beliefs.domain.vocabulary import MAX_LABEL_LENGTH, AuditKind
from beliefs.domain.webhooks import Destination, UnsafeDestination
from beliefs.errors import InvalidInput, NotFound, field_error
from beliefs.models import (
    Runtime,
    TaskInstance,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookEvent,
)
from beliefs.net import Deadline, Outcome, post, resolve_within, to_uri
from beliefs.services import outbox
from beliefs.services.audit import Actor, audit

# After a rotation the old secret keeps signing this long, so receivers can switch over.
PREVIOUS_SECRET_GRACE = timedelta(hours=24)
USER_AGENT = "confirmation-console-webhooks/1"
# How many held deliveries a finishing one looks at to take up the next.
_WAKE_LOOK_AHEAD = 50


# --- endpoints ----------------------------------------------------------------------------------


def resolve(host: str, port: int) -> list[str]:
    """Every address the host resolves to (all are checked, not just the first)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return sorted({str(info[4][0]) for info in infos})


def endpoint_url(url: Any) -> str:
    """The URL as stored: an IRI (non-ASCII host, path or query) becomes the URI it stands for,
    so every later step (the guard, the request line) sees ASCII only."""
    if not isinstance(url, str):
        return url  # the guard says what is wrong with it
    try:
        return to_uri(url.strip())
    except ValueError as exc:
        raise field_error("url", f"is not a valid URL ({exc})") from None


def destination(url: Any, field: str = "url") -> Destination:
    try:
        return rules.check_destination(
            endpoint_url(url), resolve, allow_private=settings.CONSOLE_WEBHOOK_ALLOW_PRIVATE
        )
    except UnsafeDestination as exc:
        raise field_error(field, str(exc)) from None


def parse_event_types(value: Any) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise field_error("event_types", "must be a list of event types")
    unknown = [v for v in value if v not in rules.EVENT_TYPES]
    if unknown:
        raise field_error(
            "event_types",
            f"unknown event type {unknown[0]!r}; one of {', '.join(rules.EVENT_TYPES)}",
        )
    return sorted(set(value))


def live_endpoints(runtime: Runtime) -> Any:
    """The runtime's endpoints that were not deleted (active or not)."""
    return WebhookEndpoint.objects.filter(runtime=runtime, deleted_at__isnull=True)


def endpoint_for_runtime(endpoint_id: Any, runtime: Runtime) -> WebhookEndpoint:
    """The runtime's own endpoint; 404 for anyone else's (existence not leaked) and for a
    deleted one."""
    endpoint = live_endpoints(runtime).filter(pk=endpoint_id).first()
    if endpoint is None:
        raise NotFound("No such webhook endpoint.")
    return endpoint


def _endpoint_audit(kind: AuditKind, endpoint: WebhookEndpoint, actor: Actor, **data: Any) -> None:
    audit(
        kind,
        actor=actor,
        subject=endpoint.url[:MAX_LABEL_LENGTH],
        data={"endpoint": endpoint.pk, "runtime": endpoint.runtime.name, **data},
    )


def _description(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise field_error("description", "must be a string")
    if len(value) > MAX_LABEL_LENGTH:
        raise field_error("description", f"must be at most {MAX_LABEL_LENGTH} characters")
    return value


@transaction.atomic
def endpoint_create(
    *,
    runtime: Runtime,
    url: Any,
    event_types: Any = None,
    description: Any = "",
    active: Any = True,
    actor: Actor,
) -> tuple[WebhookEndpoint, str]:
    """Register an endpoint; returns it and its secret, which is shown this once. A runtime
    has at most CONSOLE_WEBHOOK_MAX_ENDPOINTS (deleted ones do not count)."""
    destination(url)
    if not isinstance(active, bool):
        raise field_error("active", "must be true or false")
    # The runtime's row is locked so that two registrations at once cannot both pass the cap.
    Runtime.objects.select_for_update(no_key=True).filter(pk=runtime.pk).first()
    limit = settings.CONSOLE_WEBHOOK_MAX_ENDPOINTS
    if live_endpoints(runtime).count() >= limit:
        raise InvalidInput(
            f"A runtime can have at most {limit} webhook endpoints; delete one first.",
            code="too_many_endpoints",
            extra={"limit": limit},
        )
    secret = rules.new_secret()
    endpoint = WebhookEndpoint.objects.create(
        runtime=runtime,
        url=endpoint_url(url),
        secret=secret,
        event_types=parse_event_types(event_types),
        description=_description(description),
        active=active,
    )
    _endpoint_audit(
        AuditKind.WEBHOOK_ENDPOINT_CREATED, endpoint, actor, event_types=endpoint.event_types
    )
    return endpoint, secret


@transaction.atomic
def endpoint_delete(*, endpoint: WebhookEndpoint, actor: Actor) -> None:
    """Deactivate it for good: it receives nothing more, leaves the runtime's list, and its
    deliveries stay readable as history. Deliveries still pending fail at their next attempt
    ("the endpoint is inactive")."""
    now = timezone.now()
    done = WebhookEndpoint.objects.filter(pk=endpoint.pk, deleted_at__isnull=True).update(
        active=False, deleted_at=now, updated_at=now
    )
    if done:
        endpoint.active, endpoint.deleted_at = False, now
        _endpoint_audit(AuditKind.WEBHOOK_ENDPOINT_DELETED, endpoint, actor)


@transaction.atomic
def endpoint_rotate_secret(
    *, endpoint: WebhookEndpoint, actor: Actor
) -> tuple[WebhookEndpoint, str]:
    """A new secret, shown this once; the old one also signs for PREVIOUS_SECRET_GRACE."""
    endpoint = WebhookEndpoint.objects.select_for_update().get(pk=endpoint.pk)
    secret = rules.new_secret()
    endpoint.previous_secret = endpoint.secret
    endpoint.previous_secret_until = timezone.now() + PREVIOUS_SECRET_GRACE
    endpoint.secret = secret
    endpoint.save(
        update_fields=["secret", "previous_secret", "previous_secret_until", "updated_at"]
    )
    _endpoint_audit(
        AuditKind.WEBHOOK_ENDPOINT_SECRET_ROTATED,
        endpoint,
        actor,
        previous_secret_until=endpoint.previous_secret_until.isoformat(),
    )
    return endpoint, secret


def endpoint_payload(endpoint: WebhookEndpoint, secret: str | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": endpoint.pk,
        "url": endpoint.url,
        "event_types": endpoint.event_types,
        "active": endpoint.active,
        "description": endpoint.description,
        "created_at": endpoint.created_at.isoformat(),
        "previous_secret_until": (
            endpoint.previous_secret_until.isoformat() if endpoint.previous_secret_until else None
        ),
    }
    if secret is not None:
        data["secret"] = secret
    return data


# --- the outbox ---------------------------------------------------------------------------------


@task()
def deliver_webhook(delivery_id: int) -> str:
    """The worker's job: it names a delivery; the attempt and its rules are below."""
    return delivery_attempt(delivery_id)


def _enqueue(delivery_id: int, run_after: datetime | None = None) -> None:
    job = deliver_webhook.using(run_after=run_after) if run_after else deliver_webhook
    job.enqueue(delivery_id)


def endpoint_problem(endpoint: WebhookEndpoint) -> str:
    """What is wrong with a stored endpoint (a row the services did not write: the admin, a
    migration, a hand edit), or "". Cheap and offline: it runs in the runtime's request."""
    types = endpoint.event_types
    if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
        return f"event_types is not a list of event types: {json.dumps(types)[:100]}"
    unknown = [t for t in types if t not in rules.EVENT_TYPES and t != rules.WEBHOOK_TEST]
    if unknown:
        return f"event_types has an unknown event type: {unknown[0][:100]!r}"
    url = endpoint.url
    if not isinstance(url, str) or not url.isascii() or any(ord(c) < 33 for c in url):
        return "url is not an ASCII URL without spaces (register it again)"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError as exc:
        return f"url is not a valid URL ({exc})"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "url is not an http(s) URL with a host"
    return ""


def _flag(endpoint: WebhookEndpoint, problem: str) -> None:
    if endpoint.problem != problem:
        WebhookEndpoint.objects.filter(pk=endpoint.pk).update(problem=problem[:500])
        endpoint.problem = problem


def _subscribed(endpoint: WebhookEndpoint, type: str) -> bool:
    """Whether it gets this event; an endpoint with a bad row is skipped and flagged for staff
    (its `problem`), never an error for the request that caused the event."""
    problem = endpoint_problem(endpoint)
    _flag(endpoint, problem)
    if problem:
        return False
    return not endpoint.event_types or type in endpoint.event_types


def emit_event(
    *,
    type: str,
    runtime: Runtime | None,
    data: Mapping[str, Any],
    instance: TaskInstance | None = None,
    only_endpoint: WebhookEndpoint | None = None,
) -> WebhookEvent:
    """Write one event and its deliveries in the caller's transaction.

    An instance's events are numbered 1, 2, … (`data.sequence`); the caller holds the instance's
    lock, so two events of one instance cannot take the same number (a unique constraint backs
    that up).
    """
    now = timezone.now()
    sequence = None
    if instance is not None:
        last = WebhookEvent.objects.filter(instance=instance).aggregate(m=Max("sequence"))["m"]
        sequence = (last or 0) + 1
    body_data = dict(data)
    if instance is not None:
        body_data["sequence"] = sequence
    webhook_id = rules.new_webhook_id()
    event = WebhookEvent.objects.create(
        webhook_id=webhook_id,
        type=type,
        runtime=runtime,
        instance=instance,
        sequence=sequence,
        payload={"type": type, "timestamp": now.isoformat(), "data": body_data},
    )
    if only_endpoint is not None:
        endpoints: Sequence[WebhookEndpoint] = [only_endpoint]
    elif runtime is not None:
        endpoints = [e for e in live_endpoints(runtime).filter(active=True) if _subscribed(e, type)]
    else:
        endpoints = []
    for endpoint in endpoints:
        delivery = WebhookDelivery.objects.create(
            event=event, endpoint=endpoint, next_attempt_at=now
        )
        _enqueue(delivery.pk)
    return event


@transaction.atomic
def send_test_event(*, endpoint: WebhookEndpoint, actor: Actor) -> WebhookEvent:
    """A `webhook.test` event to this one endpoint, whatever it subscribed to."""
    if endpoint.deleted_at is not None:
        raise NotFound("No such webhook endpoint.")
    problem = endpoint_problem(endpoint)
    _flag(endpoint, problem)
    if problem:
        raise InvalidInput(f"This endpoint cannot receive events: {problem}")
    event = emit_event(
        type=rules.WEBHOOK_TEST,
        runtime=endpoint.runtime,
        data={"endpoint_id": endpoint.pk, "message": "A test event from the confirmation console."},
        only_endpoint=endpoint,
    )
    _endpoint_audit(AuditKind.WEBHOOK_TEST_SENT, endpoint, actor, webhook_id=event.webhook_id)
    return event


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
    _enqueue(delivery.pk)
    audit(
        AuditKind.WEBHOOK_REDELIVERED,
        actor=actor,
        subject=delivery.event.type,
        data={"delivery": delivery.pk, "webhook_id": delivery.event.webhook_id},
    )
    return True


# --- delivering ---------------------------------------------------------------------------------


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


def _in_flight(runtime_id: int, now: datetime) -> dict[int, int]:
    """Deliveries of the runtime being sent (lease still running), per endpoint."""
    rows = (
        WebhookDelivery.objects.filter(
            endpoint__runtime_id=runtime_id,
            state=WebhookDelivery.State.SENDING,
            lease_until__gte=now,
        )
        .values("endpoint_id")
        .annotate(n=Count("id"))
    )
    return {row["endpoint_id"]: row["n"] for row in rows}


def _has_room(busy: dict[int, int], endpoint_id: int) -> bool:
    return (
        sum(busy.values()) < settings.CONSOLE_WEBHOOK_MAX_IN_FLIGHT_PER_RUNTIME
        and busy.get(endpoint_id, 0) < settings.CONSOLE_WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT
    )


def _lock_runtime(runtime_id: int) -> None:
    """Claims and finishes of one runtime's deliveries take turns on its row, so the caps are
    counted exactly and a delivery put on hold is always seen by the finish that frees room.
    No key update: the runtime's requests inserting rows that refer to it are not held up."""
    Runtime.objects.select_for_update(no_key=True).filter(pk=runtime_id).first()


def _wake(runtime_id: int, now: datetime) -> None:
    """Queue held deliveries, oldest first, for the room there is now."""
    busy = _in_flight(runtime_id, now)
    held = WebhookDelivery.objects.filter(
        endpoint__runtime_id=runtime_id, state=WebhookDelivery.State.PENDING, held=True
    ).order_by("next_attempt_at", "id")
    for pk, endpoint_id in held.values_list("pk", "endpoint_id")[:_WAKE_LOOK_AHEAD]:
        if not _has_room(busy, endpoint_id):
            continue
        if WebhookDelivery.objects.filter(pk=pk, held=True).update(held=False):
            _enqueue(pk)
            busy[endpoint_id] = busy.get(endpoint_id, 0) + 1  # it will take that room


def _claim(delivery_id: int) -> WebhookDelivery | str:
    """The delivery, claimed for one attempt; or why not (not due, or held over a cap)."""
    now = timezone.now()
    row = (
        WebhookDelivery.objects.filter(
            pk=delivery_id, state=WebhookDelivery.State.PENDING, next_attempt_at__lte=now
        )
        .values("endpoint_id", "endpoint__runtime_id")
        .first()
    )
    if row is None:
        return "not due"
    runtime_id = row["endpoint__runtime_id"]
    with transaction.atomic():
        _lock_runtime(runtime_id)
        if not _has_room(_in_flight(runtime_id, now), row["endpoint_id"]):
            # Waits, pending, for a delivery of its endpoint or runtime to finish (_wake).
            WebhookDelivery.objects.filter(
                pk=delivery_id, state=WebhookDelivery.State.PENDING
            ).update(held=True)
            return "held: its endpoint or runtime is at its cap of deliveries in flight"
        if not outbox.claim(WebhookDelivery, delivery_id, lease=_lease(), now=now):
            return "not due"
        WebhookDelivery.objects.filter(pk=delivery_id).update(held=False)
    return WebhookDelivery.objects.select_related("event", "endpoint").get(pk=delivery_id)


def delivery_attempt(delivery_id: int) -> str:
    """One attempt of one delivery (a worker's job). Returns what happened, for the job log.

    Whatever goes wrong before or after connecting is recorded as the attempt's error and
    follows the retry schedule: a delivery never stays `sending`.
    """
    delivery = _claim(delivery_id)
    if isinstance(delivery, str):
        return delivery
    endpoint = delivery.endpoint
    if not endpoint.active or endpoint.deleted_at is not None:
        return _finish(delivery, Outcome(None, "", "the endpoint is inactive"), final=True)
    try:
        outcome = _post(delivery)
    except Exception as exc:  # noqa: BLE001 - recorded on the delivery and retried
        outcome = Outcome(None, "", f"{type(exc).__name__}: {exc}"[:500])
    return _finish(delivery, outcome)


def _post(delivery: WebhookDelivery) -> Outcome:
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
    return post(dest, headers, body.encode("ascii"), deadline)


def _finish(delivery: WebhookDelivery, outcome: Outcome, *, final: bool = False) -> str:
    now = timezone.now()
    with transaction.atomic():
        runtime_id = delivery.endpoint.runtime_id
        _lock_runtime(runtime_id)
        fields: dict[str, Any] = {
            "last_status_code": outcome.status,
            "last_response": outcome.response,
        }
        if outcome.ok:
            fields["delivered_at"] = now
        finished = outbox.finish(
            delivery,
            done=WebhookDelivery.State.SUCCEEDED if outcome.ok else None,
            error=outcome.error,
            schedule=_schedule(),
            enqueue=_enqueue,
            final=final,
            **fields,
        )
        _wake(runtime_id, now)
    return f"{finished.text} ({outcome.status})" if outcome.status else finished.text


def deliveries_resume(*, now: datetime | None = None) -> int:
    """Take up deliveries whose worker died mid-attempt (lease run out), pending ones whose job
    is long overdue, and held ones nothing woke (a backstop: a finish wakes them)."""
    now = now or timezone.now()
    count = outbox.resume(
        WebhookDelivery,
        now=now,
        schedule=_schedule(),
        enqueue=_enqueue,
        job_path=deliver_webhook.module_path,
        overdue_filter=Q(held=False),
    )
    stale = (
        WebhookDelivery.objects.filter(
            state=WebhookDelivery.State.PENDING,
            held=True,
            next_attempt_at__lt=now - outbox.OVERDUE,
        )
        .values_list("endpoint__runtime_id", flat=True)
        .distinct()
    )
    for runtime_id in list(stale):
        with transaction.atomic():
            _lock_runtime(runtime_id)
            _wake(runtime_id, now)
    return count
