"""W3C Trace Context: a traceparent sent by a runtime is continued through its calls and into
the webhooks they cause (one hop on: the same trace, a new parent id), and into JSON logs."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from django.test import Client

from beliefs import tracing
from beliefs.models import WebhookEvent
from console.tracing import JsonFormatter
from demo.receiver import Receiver
from tests.conftest import JsonClient
from tests.support.api import Driver
from tests.support.outbound import API, all_delivered, work_until

pytestmark = pytest.mark.django_db

AGENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
TRACE = AGENT.split("-")[1]


def test_a_plan_s_webhook_continues_the_runtime_s_trace(
    endpoint: tuple[dict[str, Any], Receiver], api: Driver, transfer: str
) -> None:
    _, receiver = endpoint
    instance_id = api.open(
        transfer, beliefs=[{"slot": "recipient_account", "value": "DE89", "source": "tool"}]
    )
    planned = api.runtime.post_json(f"{API}/instances/{instance_id}/plan/", HTTP_TRACEPARENT=AGENT)
    assert planned.status_code == 200
    (event,) = WebhookEvent.objects.filter(instance_id=instance_id)
    assert event.type == "instance.awaiting_user"
    assert event.traceparent.split("-")[1] == TRACE
    assert event.traceparent != AGENT  # the console's own hop
    work_until(all_delivered)
    (delivered,) = [r for r in receiver.received if r.event is not None]
    sent = tracing.parse(delivered.headers["traceparent"])
    assert sent is not None and sent.split("-")[1] == TRACE
    assert sent.split("-")[2] not in {AGENT.split("-")[2], event.traceparent.split("-")[2]}


@pytest.mark.parametrize(
    "header",
    [
        None,
        "garbage",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  # an all-zero trace id
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  # an all-zero parent
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  # another version
    ],
)
def test_a_missing_or_invalid_traceparent_starts_a_trace_of_its_own(
    api: Driver, transfer: str, header: str | None
) -> None:
    instance_id = api.open(
        transfer, beliefs=[{"slot": "recipient_account", "value": "DE89", "source": "tool"}]
    )
    extra = {"HTTP_TRACEPARENT": header} if header is not None else {}
    assert api.runtime.post_json(f"{API}/instances/{instance_id}/plan/", **extra).status_code == 200
    event = WebhookEvent.objects.filter(instance_id=instance_id).first()
    if event is not None:  # (no endpoint: events are still written for each runtime)
        assert tracing.parse(event.traceparent) is not None
        assert TRACE not in event.traceparent


def test_json_log_lines_carry_the_trace_id() -> None:
    formatter = JsonFormatter()
    record = logging.LogRecord("beliefs.x", logging.WARNING, __file__, 1, "held %s", ("on",), None)
    with tracing.continued(AGENT):
        line = json.loads(formatter.format(record))
    assert line["trace_id"] == TRACE
    assert (line["level"], line["logger"], line["message"]) == ("WARNING", "beliefs.x", "held on")
    assert "trace_id" not in json.loads(formatter.format(record))


def test_a_request_without_a_trace_gets_one(client: Client) -> None:
    # Any view runs inside the request's trace: the health check's log lines would carry it.
    assert client.get("/healthz").status_code == 200
    assert tracing.current() is None  # and nothing leaks out of the request


def test_the_runtime_api_accepts_the_header(runtime: JsonClient) -> None:
    assert runtime.get(f"{API}/task-classes/", HTTP_TRACEPARENT=AGENT).status_code == 200
