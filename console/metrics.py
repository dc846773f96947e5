"""GET /metrics in the Prometheus text format, for the platform team's scraper.

Allowed with `Authorization: Bearer <CONSOLE_METRICS_TOKEN>`, or from an address in
CONSOLE_METRICS_NETWORKS (default loopback only); anyone else gets 404, as for no such page.

What each process counts as it serves (requests by view and status, time from a prompt to its
answer, waiters held) is summed over `make serve`'s processes: `console.serve` gives them one
PROMETHEUS_MULTIPROC_DIR. What stands in the database (open prompts by route, instances by
status, the outbox's pending items and the age of the oldest, webhook deliveries by outcome) is
read at each scrape, so every process answers the same.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
from collections.abc import Callable, Iterator
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest, multiprocess
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from beliefs.observed import ANSWER_SECONDS, REQUESTS, WAITERS
from beliefs.selectors.metrics import standing


class DatabaseCollector(Collector):
    """What stands in the database, read at each scrape."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        now = standing()
        prompts = GaugeMetricFamily(
            "console_open_prompts", "Open prompts, by route", labels=["route"]
        )
        for route, count in sorted(now.open_prompts.items()):
            prompts.add_metric([route], count)
        yield prompts
        instances = GaugeMetricFamily(
            "console_instances", "Task instances, by status", labels=["status"]
        )
        for status, count in sorted(now.instances.items()):
            instances.add_metric([status], count)
        yield instances
        pending = GaugeMetricFamily(
            "console_outbox_pending", "Outbox items waiting to be sent", labels=["kind"]
        )
        oldest = GaugeMetricFamily(
            "console_outbox_oldest_pending_seconds",
            "Age of the oldest outbox item waiting to be sent (0: none)",
            labels=["kind"],
        )
        moment = timezone.now()
        for kind in sorted(now.outbox_pending):
            pending.add_metric([kind], now.outbox_pending[kind])
            since = now.outbox_oldest[kind]
            oldest.add_metric([kind], (moment - since).total_seconds() if since else 0.0)
        yield pending
        yield oldest
        deliveries = GaugeMetricFamily(
            "console_webhook_deliveries", "Webhook deliveries, by outcome", labels=["outcome"]
        )
        for outcome, count in sorted(now.deliveries.items()):
            deliveries.add_metric([outcome], count)
        yield deliveries


def registry() -> CollectorRegistry:
    """The process's own metrics (or, under `console.serve`, every process's) and the
    database's."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        combined = CollectorRegistry()
        multiprocess.MultiProcessCollector(combined)
    else:
        combined = CollectorRegistry()
        for collector in (REQUESTS, ANSWER_SECONDS, WAITERS):
            combined.register(collector)
    combined.register(DatabaseCollector())
    return combined


def allowed(request: HttpRequest) -> bool:
    token = settings.CONSOLE_METRICS_TOKEN
    given = request.headers.get("Authorization", "")
    if token and hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
        return True
    try:
        address = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    return any(address in network for network in settings.CONSOLE_METRICS_NETWORKS)


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    if not allowed(request):
        raise Http404
    response = HttpResponse(generate_latest(registry()), content_type=CONTENT_TYPE_LATEST)
    response["Cache-Control"] = "no-store"
    return response


def _view_name(request: HttpRequest) -> str:
    match = getattr(request, "resolver_match", None)
    return (match.view_name or "unnamed") if match is not None else "unmatched"


def _count(request: HttpRequest, response: HttpResponse) -> None:
    REQUESTS.labels(_view_name(request), request.method or "", str(response.status_code)).inc()


class RequestMetricsMiddleware:
    """Counts every answer by view, method and status (sync and async)."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if self.is_async:
            return self._acall(request)
        response = self.get_response(request)
        _count(request, response)
        return response

    async def _acall(self, request: HttpRequest) -> HttpResponse:
        response = await self.get_response(request)
        _count(request, response)
        return response
