"""The runtimes page: each runtime with its keys, endpoints and recent deliveries, in a fixed
number of queries."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from functools import cache

from django.db import connection
from django.db.models import Prefetch

from beliefs.models import (
    Runtime,
    RuntimeAPIKey,
    TaskClass,
    TaskClassShare,
    WebhookDelivery,
    WebhookEndpoint,
)
from beliefs.selectors import rows

RECENT_DELIVERIES = 200


@dataclass
class RuntimeOverview:
    runtime: Runtime
    keys: list[RuntimeAPIKey]
    endpoints: list[WebhookEndpoint]
    deliveries: list[WebhookDelivery] = field(default_factory=list)
    # The classes it owns, each with whom it is shared; and the other runtimes' classes it was
    # shared with.
    owned: list[TaskClass] = field(default_factory=list)
    shared_with_it: list[TaskClassShare] = field(default_factory=list)


def runtimes_overview(per_runtime: int = 10) -> list[RuntimeOverview]:
    runtimes = Runtime.objects.prefetch_related(
        Prefetch("keys", queryset=RuntimeAPIKey.objects.order_by("-created")),
        Prefetch("webhook_endpoints", queryset=WebhookEndpoint.objects.order_by("id")),
        Prefetch(
            "task_classes",
            queryset=TaskClass.objects.order_by("key").prefetch_related(
                Prefetch(
                    "shares",
                    queryset=TaskClassShare.objects.select_related("runtime").order_by(
                        "runtime__name"
                    ),
                )
            ),
        ),
        Prefetch(
            "shared_classes",
            queryset=TaskClassShare.objects.select_related("task_class__owner").order_by(
                "task_class__key"
            ),
        ),
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
            owned=list(r.task_classes.all()),
            shared_with_it=list(r.shared_classes.all()),
        )
        for r in runtimes
    ]


_KEY_FIELDS = tuple((RuntimeAPIKey, f.attname) for f in RuntimeAPIKey._meta.concrete_fields)
_RUNTIME_FIELDS = tuple((Runtime, f.attname) for f in Runtime._meta.concrete_fields)


@cache
def _usable_key_sql() -> str:
    names = [rows.column(m, n) for m, n in _KEY_FIELDS] + [
        rows.column(m, n) for m, n in _RUNTIME_FIELDS
    ]
    return (
        f"SELECT {', '.join(names)} FROM {rows.table(RuntimeAPIKey)}"
        f" INNER JOIN {rows.table(Runtime)}"
        f" ON {rows.column(Runtime, 'id')} = {rows.column(RuntimeAPIKey, 'runtime')}"
        f" WHERE {rows.column(RuntimeAPIKey, 'prefix')} = %s"
        f" AND NOT {rows.column(RuntimeAPIKey, 'revoked')}"
    )


def usable_runtime_key(prefix: str) -> RuntimeAPIKey | None:
    """The unrevoked key with this prefix, its runtime loaded with it (one query): what
    `RuntimeAPIKey.objects.get_usable_keys().get(prefix=...)` returns, read with fixed SQL
    because every runtime request asks it (`tests.oracles.usable_runtime_key` is the ORM's)."""
    found = rows.fetch(_usable_key_sql(), [prefix], _KEY_FIELDS + _RUNTIME_FIELDS)
    if not found:
        return None
    (row,) = found
    split = len(_KEY_FIELDS)
    key = RuntimeAPIKey.from_db(connection.alias, [n for _, n in _KEY_FIELDS], row[:split])
    runtime = Runtime.from_db(connection.alias, [n for _, n in _RUNTIME_FIELDS], row[split:])
    RuntimeAPIKey.runtime.field.set_cached_value(key, runtime)
    return key
