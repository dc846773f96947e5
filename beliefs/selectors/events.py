"""What writing a webhook event reads: the instance's next event number and the runtime's
endpoints that take events. Every event of every approval reads both (two events an
approval): fixed SQL (named, with its figure, in the read layer's docstring; their ORM versions
are in `tests/oracles.py`, held equal by `tests/services/test_read_parity.py`)."""

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
    params = [rows.prepare(WebhookEvent, "instance", instance_id)]
    ((last,),) = rows.fetch(_sequence_sql(), params, ((WebhookEvent, "sequence"),))
    return (last or 0) + 1


_ENDPOINT_COLUMNS = rows.concrete(WebhookEndpoint)


@cache
def _endpoints_sql() -> str:
    col = rows.column
    columns = ", ".join(col(m, n) for m, n in _ENDPOINT_COLUMNS)
    return (
        f"SELECT {columns} FROM {rows.table(WebhookEndpoint)}"
        f" WHERE {col(WebhookEndpoint, 'runtime')} = %s"
        f" AND {col(WebhookEndpoint, 'deleted_at')} IS NULL AND {col(WebhookEndpoint, 'active')}"
        f" ORDER BY {col(WebhookEndpoint, 'id')}"
    )


def receiving_endpoints(runtime_id: int) -> list[WebhookEndpoint]:
    """The runtime's endpoints that take events: active and not deleted, by id."""
    found = rows.fetch(_endpoints_sql(), [runtime_id], _ENDPOINT_COLUMNS)
    return [rows.instance_of(WebhookEndpoint, values) for values in found]
