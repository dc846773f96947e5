"""/metrics: the Prometheus text format, for loopback or a token, with what the console counts
and what stands in its database."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from django.test import Client, override_settings
from prometheus_client.parser import text_string_to_metric_families

from beliefs.services import changes
from tests.support.api import API, Driver

pytestmark = pytest.mark.django_db


def _scrape(client: Client | None = None, **extra: Any) -> dict[tuple[str, tuple[Any, ...]], float]:
    response = (client or Client()).get("/metrics", **extra)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=")
    samples = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def test_it_counts_requests_by_view_and_status() -> None:
    key = (
        "console_http_requests_total",
        (("method", "GET"), ("status", "200"), ("view", "healthz")),
    )
    before = _scrape().get(key, 0.0)
    Client().get("/healthz")
    Client().get("/healthz")
    assert _scrape()[key] == before + 2
    missing = (
        "console_http_requests_total",
        (("method", "GET"), ("status", "404"), ("view", "unmatched")),
    )
    Client().get("/no-such-page")
    assert _scrape()[missing] >= 1


def test_it_reads_what_stands_in_the_database(api: Driver, instance_id: str) -> None:
    samples = _scrape()
    assert samples[("console_open_prompts", (("route", "CONFIRM"),))] == 1
    assert samples[("console_instances", (("status", "awaiting_user"),))] == 1
    assert samples[("console_outbox_pending", (("kind", "webhook"),))] == 0
    assert samples[("console_outbox_oldest_pending_seconds", (("kind", "email"),))] >= 0


def test_the_time_to_an_answer_is_observed_once_it_holds(
    api: Driver, instance_id: str, django_capture_on_commit_callbacks: Any
) -> None:
    count = ("console_prompt_answer_seconds_count", ())
    before = _scrape().get(count, 0.0)
    prompt = api.prompt(instance_id, "recipient_account")
    with django_capture_on_commit_callbacks(execute=True):
        assert api.respond(prompt, "confirm").status_code == 200
    assert _scrape()[count] == before + 1


def test_it_counts_the_waiters_held() -> None:
    gauge = ("console_waiters", ())
    before = _scrape().get(gauge, 0.0)
    loop = asyncio.new_event_loop()
    try:

        async def watch() -> asyncio.Future[None]:
            return changes.watch("instance-x")

        future = loop.run_until_complete(watch())
        assert _scrape()[gauge] == before + 1
        changes.unwatch("instance-x", future)
        changes.unwatch("instance-x", future)  # twice: counted down once
        assert _scrape()[gauge] == before
    finally:
        loop.close()


@pytest.mark.parametrize("address", ["10.0.0.7", "203.0.113.9"])
def test_anyone_else_gets_404_unless_they_send_the_token(address: str) -> None:
    assert Client(REMOTE_ADDR=address).get("/metrics").status_code == 404
    with override_settings(CONSOLE_METRICS_TOKEN="s3cret-token"):
        wrong = Client(REMOTE_ADDR=address).get("/metrics", HTTP_AUTHORIZATION="Bearer nope")
        assert wrong.status_code == 404
        right = Client(REMOTE_ADDR=address).get(
            "/metrics", HTTP_AUTHORIZATION="Bearer s3cret-token"
        )
        assert right.status_code == 200


def test_an_empty_token_never_matches() -> None:
    with override_settings(CONSOLE_METRICS_TOKEN=""):
        refused = Client(REMOTE_ADDR="10.0.0.7").get("/metrics", HTTP_AUTHORIZATION="Bearer ")
        assert refused.status_code == 404


def test_the_api_is_unaffected(api: Driver, instance_id: str) -> None:
    assert api.runtime.get(f"{API}/instances/{instance_id}/").status_code == 200


def test_the_docs_alerts_and_dashboard_name_only_metrics_it_serves(
    api: Driver, instance_id: str
) -> None:
    import re
    from pathlib import Path

    served = {name for name, _ in _scrape()}
    served |= {f"{n.removesuffix('_count')}_bucket" for n in served if n.endswith("_count")}
    docs = Path(__file__).resolve().parents[2] / "docs"
    named = set()
    for path in (docs / "monitoring" / "alerts.yml", docs / "monitoring" / "dashboard.json"):
        named |= set(re.findall(r"\bconsole_[a-z_]+", path.read_text()))
    assert named and named <= served, named - served
