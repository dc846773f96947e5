"""Whether the database answers: the health check's one read."""

from __future__ import annotations

from django.db import connection


def database_answers() -> None:
    """The smallest round trip to the database; raises the database's error when it fails."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
