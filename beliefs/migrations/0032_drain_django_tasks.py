"""django-tasks leaves: its queue is drained and its table dropped.

The outbox tables and `manage.py worker` are the console's only queue now. The jobs django-tasks
still held could only be the console's own three legacy kinds, and each named an outbox row
(a webhook delivery, an email, or a notification's email) that the outbox sends by itself at its
time, so nothing needs moving: the jobs are simply let go. A job of any other kind would be work
that nothing could run any more, so the migration stops and says so instead of losing it.

The table is read with plain SQL, and only if it is there: the django-tasks apps are no longer
installed, so this migration cannot depend on theirs (a fresh database never had the table).
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

TABLE = "django_tasks_database_dbtaskresult"
APP_LABEL = "django_tasks_database"
# The console's own tasks, each naming an outbox row the outbox sends by itself.
LEGACY_TASKS = frozenset(
    {
        "beliefs.services.webhooks.deliver_webhook",
        "beliefs.services.notify.deliver_email",
        "beliefs.services.notify.send_email",
    }
)
UNFINISHED = ("READY", "RUNNING")


def drain(apps: Any, schema_editor: Any) -> None:
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        if TABLE not in connection.introspection.table_names(cursor):
            return
        cursor.execute(
            f"SELECT DISTINCT task_path FROM {TABLE} WHERE status IN (%s, %s)",  # noqa: S608
            list(UNFINISHED),
        )
        other = sorted({path for (path,) in cursor.fetchall()} - LEGACY_TASKS)
        if other:
            raise RuntimeError(
                f"django-tasks still holds unfinished jobs of {', '.join(other)}, which nothing "
                "runs after this release: let the previous release's worker finish them, then "
                "migrate again."
            )
        cursor.execute(f"DROP TABLE {TABLE}")
        # So that installing django-tasks again would create its table afresh.
        cursor.execute("DELETE FROM django_migrations WHERE app = %s", [APP_LABEL])


class Migration(migrations.Migration):
    dependencies = [("beliefs", "0031_task_class_subject_key")]

    operations = [migrations.RunPython(drain, migrations.RunPython.noop)]
