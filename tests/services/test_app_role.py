"""The application's PostgreSQL role owns nothing: connected as it, nobody can switch the audit
log's triggers off or around them, while the application's own reads and writes still work."""

from __future__ import annotations

import os
from collections.abc import Iterator

import psycopg
import pytest
from django.core.management import call_command
from django.db import connection

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="roles and grants are PostgreSQL's"
    ),
    # The grants must be committed for another connection to see them.
    pytest.mark.django_db(transaction=True),
]

ROLE = f"console_app_test_{os.getpid()}"  # roles are cluster-wide: one per test run


@pytest.fixture
def app(db: None) -> Iterator[psycopg.Connection]:
    call_command("create_app_role", ROLE, verbosity=0)
    settings = connection.settings_dict
    conn = psycopg.connect(
        host=settings["HOST"] or "127.0.0.1",
        port=settings["PORT"] or 5432,
        dbname=settings["NAME"],
        user=ROLE,
        autocommit=True,
    )
    try:
        yield conn
    finally:
        conn.close()
        with connection.cursor() as cursor:
            cursor.execute(f"DROP OWNED BY {ROLE}")
            cursor.execute(f"DROP ROLE {ROLE}")


def _refused(conn: psycopg.Connection, statement: str) -> str:
    with pytest.raises(psycopg.Error) as excinfo:
        conn.execute(statement)
    return excinfo.value.sqlstate or ""


def test_it_cannot_disable_or_bypass_the_audit_triggers(app: psycopg.Connection) -> None:
    app.execute(
        "INSERT INTO beliefs_auditevent (kind, actor, actor_key_name, subject, data, created_at) "
        "VALUES ('test.written', 'system', '', '', '{}', now())"
    )
    # Not the owner: no ALTER TABLE, so no DISABLE TRIGGER (42501 insufficient_privilege).
    assert _refused(app, "ALTER TABLE beliefs_auditevent DISABLE TRIGGER USER") == "42501"
    assert _refused(app, "ALTER TABLE beliefs_auditevent DISABLE TRIGGER ALL") == "42501"
    assert _refused(app, "DROP TRIGGER beliefs_auditevent_no_update_delete ON beliefs_auditevent")
    # Not a superuser: replica mode, which skips ordinary triggers, is out of reach.
    assert _refused(app, "SET session_replication_role = replica") == "42501"
    # And the log stays append-only, whichever way the role asks.
    assert _refused(app, "UPDATE beliefs_auditevent SET kind = 'x'") == "42501"
    assert _refused(app, "DELETE FROM beliefs_auditevent") == "42501"
    assert _refused(app, "TRUNCATE beliefs_auditevent") == "42501"
    assert _refused(app, "CREATE TABLE sneaky (id int)") == "42501"
    count = app.execute(
        "SELECT count(*) FROM beliefs_auditevent WHERE kind = 'test.written'"
    ).fetchone()
    assert count == (1,)


def test_it_reads_and_writes_the_applications_rows(app: psycopg.Connection) -> None:
    app.execute(
        "INSERT INTO beliefs_taskclass (key, name, created_at, updated_at) "
        "VALUES ('role.check', 'Role check', now(), now())"
    )
    app.execute("UPDATE beliefs_taskclass SET name = 'Renamed' WHERE key = 'role.check'")
    assert app.execute("SELECT name FROM beliefs_taskclass").fetchall() == [("Renamed",)]
    app.execute("DELETE FROM beliefs_taskclass WHERE key = 'role.check'")
