"""The runtimes page: each runtime with its keys, endpoints and recent deliveries, in a fixed
number of queries."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from django.db.models import Prefetch

from beliefs.models import Runtime, RuntimeAPIKey, WebhookDelivery, WebhookEndpoint

RECENT_DELIVERIES = 200


@dataclass
class RuntimeOverview:
    runtime: Runtime
    keys: list[RuntimeAPIKey]
    endpoints: list[WebhookEndpoint]
    deliveries: list[WebhookDelivery] = field(default_factory=list)


def runtimes_overview(per_runtime: int = 10) -> list[RuntimeOverview]:
    runtimes = Runtime.objects.prefetch_related(
        Prefetch("keys", queryset=RuntimeAPIKey.objects.order_by("-created")),
        Prefetch("webhook_endpoints", queryset=WebhookEndpoint.objects.order_by("id")),
    ).order_by("name")
    recent: dict[int, list[WebhookDelivery]] = defaultdict(list)
    for delivery in WebhookDelivery.objects.select_related("event", "endpoint").order_by(
        "-created_at", "-id"
    )[:RECENT_DELIVERIES]:
        bucket = recent[delivery.endpoint.runtime_id]
        if len(bucket) < per_runtime:
            bucket.append(delivery)
    return [
        RuntimeOverview(
            runtime=r,
            keys=list(r.keys.all()),
            endpoints=list(r.webhook_endpoints.all()),
            deliveries=recent.get(r.pk, []),
        )
        for r in runtimes
    ]
