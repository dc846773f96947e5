"""Whether the database answers (the health check's one read), and whether its schema is the
code's (the readiness check)."""

from __future__ import annotations

from django.db import connection
from django.db.migrations.executor import MigrationExecutor


def database_answers() -> None:
    """The smallest round trip to the database; raises the database's error when it fails."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()


# Once every migration was applied, it stays so for this process's code: not read again.
_migrated = False


def pending_migrations() -> list[str]:
    """The migrations the code has and the database has not applied, as `app.name`; empty
    when the schema is the code's. Read from the database until it is, then remembered."""
    global _migrated
    if _migrated:
        return []
    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    pending = [f"{migration.app_label}.{migration.name}" for migration, _ in plan]
    _migrated = not pending
    return pending
