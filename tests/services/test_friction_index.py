"""An irreversible confirm reads its person's latest change of friction off an index of the
friction events by person, never by walking the audit log: in a log of a runtime's events (no
person), analysed as a database does, SQLite's planner walked all of it newest first."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.db import connection

from beliefs.domain.vocabulary import AuditKind
from beliefs.models import AuditEvent
from beliefs.selectors import attention

LOG = 3_000


def _plan(principal_id: int) -> str:
    params = attention._confirmations_params(principal_id, 20)
    explain = "EXPLAIN QUERY PLAN " if connection.vendor == "sqlite" else "EXPLAIN "
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":  # a few thousand rows: a scan would be cheaper
            cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(explain + attention._confirmations_sql(), params)
        return "\n".join(" ".join(str(part) for part in row) for row in cursor.fetchall())


@pytest.mark.django_db(transaction=False)
def test_a_persons_friction_is_read_off_its_index_not_the_whole_log(alice: User) -> None:
    AuditEvent.objects.bulk_create(
        AuditEvent(kind=AuditKind.BELIEF_RECORDED, actor="runtime:agent", data={})
        for _ in range(LOG)
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")

    plan = _plan(alice.pk)

    assert "audit_friction_by_person" in plan, plan
    assert "audit_newest_first" not in plan, plan
