"""What writing a webhook event reads: the instance's next event number and the runtime's
endpoints that take events."""

from __future__ import annotations

from typing import Any

from django.db.models import Max

from beliefs.models import WebhookEndpoint, WebhookEvent


def next_event_sequence(instance_id: Any) -> int:
    """The number of the instance's next event: 1, 2, … (the caller holds its lock)."""
    last = WebhookEvent.objects.filter(instance_id=instance_id).aggregate(m=Max("sequence"))["m"]
    return (last or 0) + 1


def receiving_endpoints(runtime_id: int) -> list[WebhookEndpoint]:
    """The runtime's endpoints that take events: active and not deleted, by id."""
    return list(
        WebhookEndpoint.objects.filter(
            runtime_id=runtime_id, deleted_at__isnull=True, active=True
        ).order_by("id")
    )
