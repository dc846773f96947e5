"""Webhook endpoints, the event outbox and delivering it.

An event is written in the transaction of the change that causes it, with one delivery per
subscribed endpoint and one queued job per delivery (the jobs live in the same database), so a
rolled-back change sends nothing and a committed one is delivered even if no worker ran at the
time. Delivery is at least once: a receiver drops duplicates by `webhook-id`.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Max
from django.utils import timezone
from django_tasks import task
from standardwebhooks.webhooks import Webhook

from beliefs.domain import webhooks as rules
from beliefs.domain.vocabulary import MAX_LABEL_LENGTH
from beliefs.domain.webhooks import Destination, UnsafeDestination
from beliefs.errors import NotFound, field_error
from beliefs.models import (
    Runtime,
    TaskInstance,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookEvent,
)
from beliefs.services.audit import Actor, audit

# After a rotation the old secret keeps signing this long, so receivers can switch over.
PREVIOUS_SECRET_GRACE = timedelta(hours=24)
# A worker that claimed a delivery and died leaves it to be taken up again after this.
DELIVERY_LEASE = timedelta(minutes=2)
USER_AGENT = "confirmation-console-webhooks/1"


# --- endpoints ----------------------------------------------------------------------------------


def resolve(host: str, port: int) -> list[str]:
    """Every address the host resolves to (all are checked, not just the first)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return sorted({str(info[4][0]) for info in infos})


def destination(url: Any, field: str = "url") -> Destination:
    try:
        return rules.check_destination(
            url, resolve, allow_private=settings.CONSOLE_WEBHOOK_ALLOW_PRIVATE
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


def endpoint_for_runtime(endpoint_id: Any, runtime: Runtime) -> WebhookEndpoint:
    """The runtime's own endpoint; 404 for anyone else's (existence not leaked)."""
    endpoint = WebhookEndpoint.objects.filter(pk=endpoint_id, runtime=runtime).first()
    if endpoint is None:
        raise NotFound("No such webhook endpoint.")
    return endpoint


def _endpoint_audit(kind: str, endpoint: WebhookEndpoint, actor: Actor, **data: Any) -> None:
    audit(
        kind,
        actor=actor,
        subject=endpoint.url[:200],
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
    """Register an endpoint; returns it and its secret, which is shown this once."""
    destination(url)
    if not isinstance(active, bool):
        raise field_error("active", "must be true or false")
    secret = rules.new_secret()
    endpoint = WebhookEndpoint.objects.create(
        runtime=runtime,
        url=url.strip(),
        secret=secret,
        event_types=parse_event_types(event_types),
        description=_description(description),
        active=active,
    )
    _endpoint_audit("webhook_endpoint.created", endpoint, actor, event_types=endpoint.event_types)
    return endpoint, secret


@transaction.atomic
def endpoint_delete(*, endpoint: WebhookEndpoint, actor: Actor) -> None:
    _endpoint_audit("webhook_endpoint.deleted", endpoint, actor)
    endpoint.delete()


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
        "webhook_endpoint.secret_rotated",
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


def _enqueue(delivery: WebhookDelivery, run_after: datetime | None = None) -> None:
    job = deliver_webhook.using(run_after=run_after) if run_after else deliver_webhook
    job.enqueue(delivery.pk)


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
        endpoints = [
            e
            for e in WebhookEndpoint.objects.filter(runtime=runtime, active=True)
            if not e.event_types or type in e.event_types
        ]
    else:
        endpoints = []
    for endpoint in endpoints:
        _enqueue(
            WebhookDelivery.objects.create(event=event, endpoint=endpoint, next_attempt_at=now)
        )
    return event


@transaction.atomic
def send_test_event(*, endpoint: WebhookEndpoint, actor: Actor) -> WebhookEvent:
    """A `webhook.test` event to this one endpoint, whatever it subscribed to."""
    event = emit_event(
        type=rules.WEBHOOK_TEST,
        runtime=endpoint.runtime,
        data={"endpoint_id": endpoint.pk, "message": "A test event from the confirmation console."},
        only_endpoint=endpoint,
    )
    _endpoint_audit("webhook.test_sent", endpoint, actor, webhook_id=event.webhook_id)
    return event


@transaction.atomic
def delivery_redeliver(*, delivery: WebhookDelivery, actor: Actor) -> bool:
    """Send a delivery again with the same webhook-id, its retry schedule started afresh.
    A delivery being sent right now is left alone (False)."""
    now = timezone.now()
    updated = (
        WebhookDelivery.objects.filter(pk=delivery.pk)
        .exclude(state=WebhookDelivery.State.SENDING)
        .update(state=WebhookDelivery.State.PENDING, attempts=0, next_attempt_at=now)
    )
    if not updated:
        return False
    _enqueue(delivery)
    audit(
        "webhook.redelivered",
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


@dataclass(frozen=True)
class Outcome:
    status: int | None
    response: str
    error: str

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


class _PinnedHTTPConnection(http.client.HTTPConnection):
    """Connects to the address that was checked, never to a fresh DNS answer."""

    def __init__(self, host: str, port: int, address: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self._address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((self._address, self.port), self.timeout)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, host: str, port: int, address: str, timeout: float) -> None:
        self._tls = ssl.create_default_context()
        super().__init__(host, port, timeout=timeout, context=self._tls)
        self._address = address

    def connect(self) -> None:
        sock = socket.create_connection((self._address, self.port), self.timeout)
        # The certificate is checked against the host name, not the address.
        self.sock = self._tls.wrap_socket(sock, server_hostname=self.host)


def post(dest: Destination, headers: Mapping[str, str], body: bytes, timeout: float) -> Outcome:
    """POST once. Redirects are not followed (a 3xx is a failed attempt); at most
    RESPONSE_KEEP_BYTES of the answer are read."""
    error = ""
    for address in dest.addresses:
        cls = _PinnedHTTPSConnection if dest.scheme == "https" else _PinnedHTTPConnection
        connection = cls(dest.host, dest.port, address, timeout)
        try:
            connection.request("POST", dest.target, body=body, headers=dict(headers))
            response = connection.getresponse()
            kept = response.read(rules.RESPONSE_KEEP_BYTES)
            return Outcome(response.status, kept.decode("utf-8", errors="replace"), "")
        except (OSError, http.client.HTTPException) as exc:
            error = f"{type(exc).__name__}: {exc}"[:500]
        finally:
            connection.close()
    return Outcome(None, "", error or "no address to connect to")


def _schedule() -> Sequence[float]:
    return settings.CONSOLE_WEBHOOK_RETRY_SECONDS or rules.RETRY_SECONDS


def delivery_attempt(delivery_id: int) -> str:
    """One attempt of one delivery (a worker's job). Returns what happened, for the job log.

    The claim is one conditional UPDATE: of two workers holding jobs for the same delivery, one
    claims it, the other finds it no longer pending and does nothing.
    """
    now = timezone.now()
    claimed = WebhookDelivery.objects.filter(
        pk=delivery_id, state=WebhookDelivery.State.PENDING, next_attempt_at__lte=now
    ).update(
        state=WebhookDelivery.State.SENDING,
        lease_until=now + DELIVERY_LEASE,
        attempts=F("attempts") + 1,
        last_attempt_at=now,
    )
    if not claimed:
        return "not due"
    delivery = WebhookDelivery.objects.select_related("event", "endpoint").get(pk=delivery_id)
    endpoint, event = delivery.endpoint, delivery.event
    if not endpoint.active:
        return _finish(delivery, Outcome(None, "", "the endpoint is inactive"), final=True)
    try:
        # Checked again at every attempt: what a name resolves to can change.
        dest = rules.check_destination(
            endpoint.url, resolve, allow_private=settings.CONSOLE_WEBHOOK_ALLOW_PRIVATE
        )
    except UnsafeDestination as exc:
        return _finish(delivery, Outcome(None, "", f"refused: url {exc}"))
    body = body_of(event)
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        **signature_headers(endpoint, event, body, timezone.now()),
    }
    outcome = post(dest, headers, body.encode("ascii"), settings.CONSOLE_WEBHOOK_TIMEOUT_SECONDS)
    return _finish(delivery, outcome)


@transaction.atomic
def _finish(delivery: WebhookDelivery, outcome: Outcome, *, final: bool = False) -> str:
    now = timezone.now()
    fields: dict[str, Any] = {
        "lease_until": None,
        "last_status_code": outcome.status,
        "last_response": outcome.response,
        "last_error": outcome.error,
    }
    delay = None if final or outcome.ok else rules.retry_delay(delivery.attempts, _schedule())
    if outcome.ok:
        fields.update(state=WebhookDelivery.State.SUCCEEDED, delivered_at=now)
        result = f"delivered ({outcome.status})"
    elif delay is None:
        fields.update(state=WebhookDelivery.State.FAILED)
        result = f"failed for good after {delivery.attempts} attempts"
    else:
        fields.update(
            state=WebhookDelivery.State.PENDING, next_attempt_at=now + timedelta(seconds=delay)
        )
        result = f"attempt {delivery.attempts} failed; retry in {delay:g} s"
    updated = WebhookDelivery.objects.filter(
        pk=delivery.pk, state=WebhookDelivery.State.SENDING
    ).update(**fields)
    if updated and delay is not None and not outcome.ok:
        _enqueue(delivery, run_after=fields["next_attempt_at"])
    return result


def deliveries_resume(*, now: datetime | None = None) -> int:
    """Take up deliveries whose worker died mid-attempt, and pending ones whose job is long
    overdue (a pruned or lost job). A duplicate job is harmless: the claim admits one."""
    now = now or timezone.now()
    count = 0
    stalled = WebhookDelivery.objects.filter(
        state=WebhookDelivery.State.SENDING, lease_until__lt=now
    )
    for delivery in stalled:
        with transaction.atomic():
            if (
                WebhookDelivery.objects.filter(
                    pk=delivery.pk, state=WebhookDelivery.State.SENDING, lease_until__lt=now
                ).update(state=WebhookDelivery.State.PENDING, lease_until=None)
                == 1
            ):
                _enqueue(delivery)
                count += 1
    overdue = WebhookDelivery.objects.filter(
        state=WebhookDelivery.State.PENDING, next_attempt_at__lt=now - timedelta(minutes=10)
    )
    for delivery in overdue:
        _enqueue(delivery)
        count += 1
    return count
