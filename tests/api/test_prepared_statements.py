"""On PostgreSQL a statement a kept connection runs again and again is prepared there once:
the server plans the instance read's queries once, not on every poll."""

from __future__ import annotations

import pytest
from django.db import connection

from tests.support.api import API, Driver

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="prepared statements are PostgreSQL's"
    ),
]


def _prepared() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return {statement for (statement,) in cursor.fetchall()}


def _prompts_read_prepared() -> bool:
    return any('FROM "beliefs_prompt"' in s and "belief_instance" in s for s in _prepared())


def test_a_polled_read_is_planned_once_per_connection(api: Driver, instance_id: str) -> None:
    url = f"{API}/instances/{instance_id}/"
    first = api.runtime.get(url).json()
    assert api.runtime.get(url).status_code == 200
    assert not _prompts_read_prepared()  # a statement run twice is planned each time
    for _ in range(6):
        assert api.runtime.get(url).status_code == 200
    assert _prompts_read_prepared()
    assert any('FROM "beliefs_runtimeapikey"' in s for s in _prepared())
    # And a prepared read answers as the first one did.
    again = api.runtime.get(url).json()
    assert again == first and again["id"] == instance_id and again["prompts"]
