"""What writing a webhook event reads, in fixed SQL: the instance's next event number and the
runtime's endpoints that take events. Every change of an instance's status writes an event, a
person's every answer that readies one among them; through the ORM these two reads cost several
times the database's time (`reference.next_event_sequence` and `reference.receiving_endpoints`
are the same through the ORM, held equal by `tests/test_read_parity.py`)."""

from __future__ import annotations

from functools import cache
from typing import Any

from beliefs.models import WebhookEndpoint, WebhookEvent
from beliefs.selectors import rows


@cache
def _sequence_sql() -> str:
    col = rows.column
    return (
        f"SELECT MAX({col(WebhookEvent, 'sequence')}) FROM {rows.table(WebhookEvent)}"
        f" WHERE {col(WebhookEvent, 'instance')} = %s"
    )


def next_event_sequence(instance_id: Any) -> int:
    """The number of the instance's next event: 1, 2, … (the caller holds its lock)."""
    found = rows.fetch(
        _sequence_sql(),
        [rows.prepare(WebhookEvent, "instance", instance_id)],
        ((WebhookEvent, "sequence"),),
    )
    return (found[0][0] or 0) + 1


@cache
def _endpoints_sql() -> str:
    col = rows.column
    return (
        f"SELECT {', '.join(col(m, n) for m, n in rows.concrete(WebhookEndpoint))}"
        f" FROM {rows.table(WebhookEndpoint)}"
        f" WHERE {col(WebhookEndpoint, 'runtime')} = %s"
        f" AND {col(WebhookEndpoint, 'deleted_at')} IS NULL AND {col(WebhookEndpoint, 'active')}"
        f" ORDER BY {col(WebhookEndpoint, 'id')}"
    )


def receiving_endpoints(runtime_id: int) -> list[WebhookEndpoint]:
    """The runtime's endpoints that take events: active and not deleted, by id."""
    found = rows.fetch(_endpoints_sql(), [runtime_id], rows.concrete(WebhookEndpoint))
    return [rows.instance_of(WebhookEndpoint, values) for values in found]
