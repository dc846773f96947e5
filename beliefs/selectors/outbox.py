"""The reads of a worker's claim of webhook deliveries, as fixed SQL.

A worker claims deliveries for every event a person's answer causes: at a trickle (events
arriving one at a time, tens a second) building the claim's queries through the ORM cost the
worker several times what sending the webhook did. Each read here has its straightforward ORM
version of the same name and signature in `tests/oracles.py`, and
`tests/services/test_read_parity.py` holds the two equal.

They run inside the claiming transaction: `claimable_deliveries` locks the rows it reads
(PostgreSQL: FOR UPDATE … SKIP LOCKED, so two workers never read the same delivery; SQLite
serialises writers), `lock_runtimes` takes the runtimes' row locks, and `lanes_in_flight`
counts under them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from functools import cache
from typing import Required, TypedDict, Unpack

from beliefs.models import Runtime, WebhookDelivery, WebhookEndpoint, WebhookEvent
from beliefs.selectors import rows

_DELIVERY = rows.concrete(WebhookDelivery)
_EVENT = rows.concrete(WebhookEvent)
_ENDPOINT = rows.concrete(WebhookEndpoint)


@cache
def _claimable_sql(
    vendor: str, only: bool, endpoint: bool, left_out_endpoints: int, left_out_runtimes: int
) -> str:
    d, e, p = WebhookDelivery, WebhookEvent, WebhookEndpoint
    columns = [rows.column(m, n) for m, n in (*_DELIVERY, *_EVENT, *_ENDPOINT)]
    where = [f"{rows.column(d, 'state')} = %s", f"{rows.column(d, 'next_attempt_at')} <= %s"]
    if only:
        where.append(f"{rows.column(d, 'id')} = %s")
    if endpoint:
        where.append(f"{rows.column(d, 'endpoint')} = %s")
    left_out = []
    if left_out_endpoints:
        left_out.append(
            f"{rows.column(d, 'endpoint')} IN ({rows.placeholders(left_out_endpoints)})"
        )
    if left_out_runtimes:
        left_out.append(f"{rows.column(p, 'runtime')} IN ({rows.placeholders(left_out_runtimes)})")
    if left_out:
        where.append(f"NOT ({' OR '.join(left_out)})")
    sql = (
        f"SELECT {', '.join(columns)} FROM {rows.table(d)}"
        f" INNER JOIN {rows.table(e)} ON {rows.column(e, 'id')} = {rows.column(d, 'event')}"
        f" INNER JOIN {rows.table(p)} ON {rows.column(p, 'id')} = {rows.column(d, 'endpoint')}"
        f" WHERE {' AND '.join(where)}"
        f" ORDER BY {rows.column(d, 'next_attempt_at')} ASC, {rows.column(d, 'id')} ASC"
        " LIMIT %s"
    )
    if vendor == "postgresql":
        sql += f" FOR UPDATE OF {rows.table(d)} SKIP LOCKED"
    return sql


class Claimable(TypedDict, total=False):
    """What a claim asks `claimable_deliveries` for, as keywords (its ORM version in
    `tests/oracles.py` takes the same): the pending deliveries due by `due_at`, at most
    `limit`; only the one `only` names (if given), only those of the endpoint `endpoint_id` (if
    given), and none of the endpoints and runtimes left out."""

    due_at: Required[datetime]
    limit: Required[int]
    only: int | None
    endpoint_id: int | None
    left_out_endpoints: Sequence[int]
    left_out_runtimes: Sequence[int]


def claimable_deliveries(**ask: Unpack[Claimable]) -> list[WebhookDelivery]:
    """The deliveries `ask` names, oldest first, each with its event and endpoint. Locked as
    they are read (call it in the claiming transaction); those another worker is taking right
    now are skipped (PostgreSQL)."""
    only, endpoint_id = ask.get("only"), ask.get("endpoint_id")
    left_out_endpoints = ask.get("left_out_endpoints", ())
    left_out_runtimes = ask.get("left_out_runtimes", ())
    sql = _claimable_sql(
        rows.vendor(),
        only is not None,
        endpoint_id is not None,
        len(left_out_endpoints),
        len(left_out_runtimes),
    )
    params: list[object] = [
        WebhookDelivery.State.PENDING,
        rows.prepare(WebhookDelivery, "next_attempt_at", ask["due_at"]),
    ]
    if only is not None:
        params.append(only)
    if endpoint_id is not None:
        params.append(endpoint_id)
    params += [*left_out_endpoints, *left_out_runtimes, ask["limit"]]
    deliveries = []
    for values in rows.fetch(sql, params, _DELIVERY + _EVENT + _ENDPOINT):
        delivery, event, endpoint = rows.models_of(
            values, (WebhookDelivery, WebhookEvent, WebhookEndpoint)
        )
        WebhookDelivery.event.field.set_cached_value(delivery, event)
        WebhookDelivery.endpoint.field.set_cached_value(delivery, endpoint)
        deliveries.append(delivery)
    return deliveries


@cache
def _lanes_sql(runtimes: int | None) -> str:
    d, p = WebhookDelivery, WebhookEndpoint
    sql = (
        f"SELECT DISTINCT {rows.column(p, 'runtime')}, {rows.column(d, 'endpoint')},"
        f" {rows.column(d, 'claimed_by')} FROM {rows.table(d)}"
        f" INNER JOIN {rows.table(p)} ON {rows.column(p, 'id')} = {rows.column(d, 'endpoint')}"
        f" WHERE {rows.column(d, 'state')} = %s AND {rows.column(d, 'lease_until')} >= %s"
    )
    if runtimes is not None:
        sql += f" AND {rows.column(p, 'runtime')} IN ({rows.placeholders(runtimes)})"
    return sql


def lanes_in_flight(
    now: datetime, runtime_ids: Sequence[int] | None = None
) -> list[tuple[int, int, str]]:
    """The lanes being sent (their lease still running at `now`), of these runtimes or all:
    (runtime, endpoint, claimed_by), each once, in no order."""
    if runtime_ids is not None and not runtime_ids:
        return []
    sql = _lanes_sql(None if runtime_ids is None else len(runtime_ids))
    params: list[object] = [
        WebhookDelivery.State.SENDING,
        rows.prepare(WebhookDelivery, "lease_until", now),
        *(runtime_ids or ()),
    ]
    fields = ((WebhookEndpoint, "runtime_id"), (WebhookDelivery, "endpoint_id"))
    return [
        (runtime, endpoint, claimed_by)
        for runtime, endpoint, claimed_by in rows.fetch(
            sql, params, (*fields, (WebhookDelivery, "claimed_by"))
        )
    ]


@cache
def _lock_sql(vendor: str, runtimes: int) -> str:
    sql = (
        f"SELECT {rows.column(Runtime, 'id')} FROM {rows.table(Runtime)}"
        f" WHERE {rows.column(Runtime, 'id')} IN ({rows.placeholders(runtimes)})"
        f" ORDER BY {rows.column(Runtime, 'id')} ASC"
    )
    return sql + " FOR NO KEY UPDATE" if vendor == "postgresql" else sql


def lock_runtimes(runtime_ids: Sequence[int]) -> list[int]:
    """Lock the runtimes' rows (PostgreSQL; SQLite serialises writers), in id order, so that
    two claims cannot wait for each other; no key update, so that the runtime's requests
    inserting rows that refer to it are not held up. The ids of those that exist."""
    if not runtime_ids:
        return []
    sql = _lock_sql(rows.vendor(), len(runtime_ids))
    found = rows.fetch(sql, sorted(runtime_ids), ((Runtime, "id"),))
    return [runtime_id for (runtime_id,) in found]
