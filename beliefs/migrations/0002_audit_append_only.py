"""The audit log is append-only, enforced by the database itself."""

from django.db import migrations

SQLITE_UP = [
    """
    CREATE TRIGGER beliefs_auditevent_no_update BEFORE UPDATE ON beliefs_auditevent
    BEGIN SELECT RAISE(ABORT, 'beliefs_auditevent is append-only'); END;
    """,
    """
    CREATE TRIGGER beliefs_auditevent_no_delete BEFORE DELETE ON beliefs_auditevent
    BEGIN SELECT RAISE(ABORT, 'beliefs_auditevent is append-only'); END;
    """,
]
SQLITE_DOWN = [
    "DROP TRIGGER IF EXISTS beliefs_auditevent_no_update;",
    "DROP TRIGGER IF EXISTS beliefs_auditevent_no_delete;",
]

POSTGRES_UP = [
    """
    CREATE OR REPLACE FUNCTION beliefs_auditevent_append_only() RETURNS trigger AS $$
    BEGIN
        RAISE EXCEPTION 'beliefs_auditevent is append-only' USING ERRCODE = 'restrict_violation';
    END;
    $$ LANGUAGE plpgsql;
    """,
    """
    CREATE TRIGGER beliefs_auditevent_no_update_delete
    BEFORE UPDATE OR DELETE ON beliefs_auditevent
    FOR EACH ROW EXECUTE FUNCTION beliefs_auditevent_append_only();
    """,
    """
    CREATE TRIGGER beliefs_auditevent_no_truncate
    BEFORE TRUNCATE ON beliefs_auditevent
    FOR EACH STATEMENT EXECUTE FUNCTION beliefs_auditevent_append_only();
    """,
]
POSTGRES_DOWN = [
    "DROP TRIGGER IF EXISTS beliefs_auditevent_no_truncate ON beliefs_auditevent;",
    "DROP TRIGGER IF EXISTS beliefs_auditevent_no_update_delete ON beliefs_auditevent;",
    "DROP FUNCTION IF EXISTS beliefs_auditevent_append_only();",
]


def _run(statements_by_vendor):
    def run(apps, schema_editor):
        for statement in statements_by_vendor.get(schema_editor.connection.vendor, []):
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("beliefs", "0001_initial")]

    operations = [
        migrations.RunPython(
            _run({"sqlite": SQLITE_UP, "postgresql": POSTGRES_UP}),
            _run({"sqlite": SQLITE_DOWN, "postgresql": POSTGRES_DOWN}),
        ),
    ]
