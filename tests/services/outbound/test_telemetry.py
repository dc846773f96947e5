"""OpenTelemetry on: the request that an agent's `traceparent` names, its database statements
and the webhook it causes are spans of one trace (recorded by an in-memory exporter)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.db import connection
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from beliefs import tracing
from beliefs.models import WebhookEvent
from console import telemetry
from demo.receiver import Receiver
from tests.support.api import Driver
from tests.support.outbound import API, all_delivered, work_until

AGENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
TRACE, AGENT_SPAN = int(AGENT.split("-")[1], 16), int(AGENT.split("-")[2], 16)


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """Tracing on for the test (before any request: Django's part takes effect for the test
    client's handler, which loads the middleware at its first request)."""
    exporter = InMemorySpanExporter()
    telemetry.instrument(telemetry.provider_with(SimpleSpanProcessor(exporter)))
    try:
        yield exporter
    finally:
        telemetry.uninstrument()


def _hex(number: int, width: int) -> str:
    return f"{number:0{width}x}"


def _named(spans: tuple[ReadableSpan, ...], name: str) -> list[ReadableSpan]:
    return [span for span in spans if span.name == name]


@pytest.mark.django_db
def test_a_plan_and_the_webhook_it_causes_are_spans_of_the_agent_s_trace(
    spans: InMemorySpanExporter,
    endpoint: tuple[dict[str, Any], Receiver],
    api: Driver,
    transfer: str,
) -> None:
    _, receiver = endpoint
    instance_id = api.open(
        transfer, beliefs=[{"slot": "recipient_account", "value": "DE89", "source": "tool"}]
    )
    spans.clear()
    planned = api.runtime.post_json(f"{API}/instances/{instance_id}/plan/", HTTP_TRACEPARENT=AGENT)
    assert planned.status_code == 200

    # The request's span continues the agent's trace, its parent the agent's span.
    (server,) = [s for s in spans.get_finished_spans() if s.kind == SpanKind.SERVER]
    assert server.context is not None and server.parent is not None
    assert (server.context.trace_id, server.parent.span_id) == (TRACE, AGENT_SPAN)
    assert server.attributes is not None and server.attributes.get("http.route", "").endswith(
        "plan/"
    )
    # The event it caused names that span as the webhook's parent.
    (event,) = WebhookEvent.objects.filter(instance_id=instance_id)
    assert event.traceparent == f"00-{_hex(TRACE, 32)}-{_hex(server.context.span_id, 16)}-01"

    spans.clear()
    work_until(all_delivered)
    (post,) = _named(spans.get_finished_spans(), "POST webhook")
    assert post.kind == SpanKind.CLIENT and post.context is not None and post.parent is not None
    assert (post.context.trace_id, post.parent.span_id) == (TRACE, server.context.span_id)
    assert post.attributes is not None
    assert post.attributes["webhook.type"] == "instance.awaiting_user"
    assert post.attributes["http.response.status_code"] == 204  # (the receiver's answer)
    # The receiver is told the delivery's span: its own spans join the same trace.
    (delivered,) = [r for r in receiver.received if r.event is not None]
    assert delivered.headers["traceparent"] == (
        f"00-{_hex(TRACE, 32)}-{_hex(post.context.span_id, 16)}-01"
    )


@pytest.mark.django_db
def test_requests_served_over_asgi_are_traced_too(
    spans: InMemorySpanExporter,
    async_client: Any,  # noqa: ANN401
) -> None:
    # `make serve` serves over ASGI: a request there continues the caller's trace as well.
    response = async_to_sync(async_client.get)("/accounts/login/", headers={"traceparent": AGENT})
    assert response.status_code == 200
    (server,) = [s for s in spans.get_finished_spans() if s.kind == SpanKind.SERVER]
    assert server.context is not None and server.parent is not None
    assert (server.context.trace_id, server.parent.span_id) == (TRACE, AGENT_SPAN)


@pytest.mark.django_db
def test_health_checks_and_scrapes_are_not_traced(spans: InMemorySpanExporter, client: Any) -> None:  # noqa: ANN401
    assert client.get("/healthz").status_code == 200
    assert client.get("/api/v1/task-classes/").status_code in {401, 403}
    kinds = [(span.kind, span.name) for span in spans.get_finished_spans()]
    assert [kind for kind, _ in kinds if kind == SpanKind.SERVER] == [SpanKind.SERVER]
    assert all("healthz" not in name for _, name in kinds)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="psycopg's statements: PostgreSQL")
@pytest.mark.django_db(transaction=True)
def test_database_statements_are_spans_of_the_request_s_trace(
    spans: InMemorySpanExporter, api: Driver, transfer: str
) -> None:
    connection.close()  # the next connection is opened instrumented
    instance_id = api.open(transfer, beliefs=[])
    spans.clear()
    assert (
        api.runtime.get(f"{API}/instances/{instance_id}/", HTTP_TRACEPARENT=AGENT).status_code
        == 200
    )
    statements = [s for s in spans.get_finished_spans() if s.kind == SpanKind.CLIENT]
    assert statements, "no database statement was traced"
    assert {s.context.trace_id for s in statements if s.context} == {TRACE}
    assert all(s.attributes and s.attributes.get("db.system") == "postgresql" for s in statements)
    connection.close()  # (the tests after this one get a connection of their own, untraced)


def test_off_unless_an_endpoint_is_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    assert not telemetry.enabled_by_environment()
    assert telemetry.configure_from_environment() is None
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    assert telemetry.enabled_by_environment()
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    assert not telemetry.enabled_by_environment()


def test_off_a_delivery_is_still_the_next_hop_of_the_agent_s_trace() -> None:
    with tracing.span("POST webhook", AGENT) as hop:
        assert hop is not None and tracing.current() == hop
    assert hop.split("-")[1] == AGENT.split("-")[1] and hop.split("-")[2] != AGENT.split("-")[2]
    with tracing.span("POST webhook", None) as none:
        assert none is None
