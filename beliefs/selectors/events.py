"""What writing a webhook event reads: the instance's next event number and the runtime's
endpoints that take events. Every event of every approval reads both (two events an
approval), in one statement (`event_reads`): fixed SQL (named, with its figure, in the read
layer's docstring; the ORM versions of its two parts, `next_event_sequence` and
`receiving_endpoints`, are in `tests/oracles.py`, held equal by
`tests/services/test_read_parity.py`)."""

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


_ENDPOINT_COLUMNS = rows.concrete(WebhookEndpoint)


@cache
def _event_reads_sql() -> str:
    """The next number's query as a column beside each endpoint's row, from a row of its own
    (left joined: the number is read when the runtime has no endpoint too)."""
    col = rows.column
    columns = ", ".join(col(m, n) for m, n in _ENDPOINT_COLUMNS)
    return (
        f"SELECT ({_sequence_sql()}), {columns}"
        f' FROM (SELECT 1 AS "one") AS "one" LEFT JOIN {rows.table(WebhookEndpoint)}'
        f" ON {col(WebhookEndpoint, 'runtime')} = %s"
        f" AND {col(WebhookEndpoint, 'deleted_at')} IS NULL AND {col(WebhookEndpoint, 'active')}"
        f" ORDER BY {col(WebhookEndpoint, 'id')}"
    )


def event_reads(
    instance_id: Any | None, runtime_id: int | None
) -> tuple[int | None, list[WebhookEndpoint]]:
    """The number of the instance's next event, 1, 2, … (None without an instance; the caller
    holds its lock), and the runtime's endpoints that take events, active and not deleted, by
    id (none without a runtime): one query, none when neither is given."""
    if instance_id is None and runtime_id is None:
        return None, []
    params = [
        None if instance_id is None else rows.prepare(WebhookEvent, "instance", instance_id),
        runtime_id,
    ]
    found = rows.fetch(_event_reads_sql(), params, ((WebhookEvent, "sequence"), *_ENDPOINT_COLUMNS))
    sequence = None if instance_id is None else (found[0][0] or 0) + 1
    endpoints = [
        rows.instance_of(WebhookEndpoint, values[1:]) for values in found if values[1] is not None
    ]
    return sequence, endpoints
