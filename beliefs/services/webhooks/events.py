"""Webhook events: one is written in the caller's transaction with a delivery for each
endpoint subscribed to it, and the workers are told (`outbox.announce`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.db import transaction
from django.utils import timezone

from beliefs.domain import webhooks as rules
from beliefs.domain.vocabulary import AuditKind
from beliefs.errors import InvalidInput, NotFound
from beliefs.models import TaskInstance, WebhookDelivery, WebhookEndpoint, WebhookEvent
from beliefs.selectors.events import event_reads
from beliefs.services import outbox
from beliefs.services.audit import Actor
from beliefs.services.webhooks.endpoints import endpoint_audit, endpoint_problem
from beliefs.tracing import current as current_trace


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
    runtime_id: int | None,
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
    # The instance's next number and the runtime's endpoints, in one read.
    sequence, receiving = event_reads(
        None if instance is None else instance.pk,
        runtime_id if only_endpoint is None else None,
    )
    body_data = dict(data)
    if instance is not None:
        body_data["sequence"] = sequence
    webhook_id = rules.new_webhook_id()
    event = WebhookEvent.objects.create(
        webhook_id=webhook_id,
        type=type,
        runtime_id=runtime_id,
        instance=instance,
        sequence=sequence,
        payload={"type": type, "timestamp": now.isoformat(), "data": body_data},
        traceparent=current_trace() or "",
    )
    if only_endpoint is not None:
        endpoints: Sequence[WebhookEndpoint] = [only_endpoint]
    else:
        endpoints = [e for e in receiving if _subscribed(e, type)]
    if endpoints:
        WebhookDelivery.objects.bulk_create(
            WebhookDelivery(event=event, endpoint=endpoint, next_attempt_at=now)
            for endpoint in endpoints
        )
        outbox.announce()
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
        runtime_id=endpoint.runtime_id,
        data={"endpoint_id": endpoint.pk, "message": "A test event from the confirmation console."},
        only_endpoint=endpoint,
    )
    endpoint_audit(AuditKind.WEBHOOK_TEST_SENT, endpoint, actor, webhook_id=event.webhook_id)
    return event
