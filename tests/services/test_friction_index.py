"""An irreversible confirm reads its person's latest change of friction off an index of the
friction events by person, never by walking the audit log: in a log of a runtime's events (no
person), analysed as a database does, SQLite's planner walked all of it newest first."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.db.models import QuerySet

from beliefs.domain.vocabulary import AuditKind
from beliefs.models import AuditEvent
from beliefs.selectors import attention

LOG = 3_000


def _plan(query: QuerySet[Any, Any]) -> str:
    if connection.vendor == "postgresql":  # a few thousand rows: a scan would be cheaper
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_seqscan = off")
    return query.explain()


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
    for query in (
        attention._with_friction(alice.pk, 20),
        attention._latest_friction_change(alice.pk),
    ):
        plan = _plan(query)
        assert "audit_friction_by_person" in plan, plan
        assert "audit_newest_first" not in plan, plan
