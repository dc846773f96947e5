"""An irreversible confirm reads its person's latest change of friction off an index of the
friction events by person, never by walking the audit log: in a log of a runtime's events (no
person), analysed as a database does, SQLite's planner walked all of it newest first."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection

from beliefs.domain.vocabulary import AuditKind
from beliefs.models import AuditEvent
from beliefs.selectors import attention

LOG = 3_000


def _plan(sql: str, params: list[Any]) -> str:
    """The database's plan of the statement, as its lines."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":  # a few thousand rows: a scan would be cheaper
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute(f"EXPLAIN {sql}", params)
        else:
            cursor.execute(f"EXPLAIN QUERY PLAN {sql}", params)
        return "\n".join(str(row) for row in cursor.fetchall())


@pytest.mark.django_db(transaction=False)
def test_a_persons_friction_is_read_off_its_index_not_the_whole_log(alice: User) -> None:
    AuditEvent.objects.bulk_create(
        AuditEvent(kind=AuditKind.BELIEF_RECORDED, actor="runtime:agent", data={})
        for _ in range(LOG)
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")

    # With a confirm's own read (the person's confirmations and their latest change of
    # friction), and alone (a person with no confirmation yet).
    confirmations = attention._confirmations_sql(with_friction=True)
    confirmed = ["CONFIRM", "irreversible", "answered", 20]
    for sql, params in (
        (confirmations, [alice.pk, alice.pk, *confirmed]),
        (attention._latest_friction_sql(), [alice.pk]),
    ):
        plan = _plan(sql, params)
        assert "audit_friction_by_person" in plan, plan
        assert "audit_newest_first" not in plan, plan
