"""Create (or refresh) the PostgreSQL role the application connects as: it owns nothing.

Run it as the database owner after `migrate`. The role can read and write the application's
rows, and only insert and read the audit log; it owns no table, so it cannot alter one (no
`ALTER TABLE ... DISABLE TRIGGER`, no DROP), is no superuser (no `session_replication_role =
replica`, which would skip the audit log's triggers), and cannot create roles, databases or
schema objects. Migrations keep running as the owner.
"""

from __future__ import annotations

import os
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection, transaction
from psycopg import sql

AUDIT_TABLE = "beliefs_auditevent"


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("role", help="the role's name, e.g. console_app")
        parser.add_argument(
            "--password-env",
            default="CONSOLE_APP_DB_PASSWORD",
            help="environment variable holding the role's password (default %(default)s)",
        )

    def handle(self, *args: Any, role: str, password_env: str, **options: Any) -> None:
        if connection.vendor != "postgresql":
            raise CommandError("create_app_role is for PostgreSQL (DATABASE_URL=postgres://...).")
        password = os.environ.get(password_env) or None
        statements = app_role_statements(role, password, connection.settings_dict["NAME"])
        with transaction.atomic(), connection.cursor() as cursor:
            for statement in statements:
                cursor.execute(statement)
        self.stdout.write(f"Role {role} can now connect; it owns nothing.")


def app_role_statements(role: str, password: str | None, database: str) -> list[sql.Composed]:
    """The SQL, idempotent: create the role if missing, then grant exactly what the app needs."""
    name = sql.Identifier(role)
    attributes = sql.SQL(
        "NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS NOINHERIT LOGIN"
    )
    statements = [
        sql.SQL(
            "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = {literal}) "
            "THEN CREATE ROLE {name}; END IF; END $$"
        ).format(literal=sql.Literal(role), name=name),
        sql.SQL("ALTER ROLE {name} {attributes}").format(name=name, attributes=attributes),
    ]
    if password:
        statements.append(
            sql.SQL("ALTER ROLE {name} PASSWORD {password}").format(
                name=name, password=sql.Literal(password)
            )
        )
    statements += [
        sql.SQL("GRANT CONNECT ON DATABASE {db} TO {name}").format(
            db=sql.Identifier(database), name=name
        ),
        sql.SQL("REVOKE CREATE ON SCHEMA public FROM {name}").format(name=name),
        sql.SQL("GRANT USAGE ON SCHEMA public TO {name}").format(name=name),
        sql.SQL(
            "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {name}"
        ).format(name=name),
        # The audit log is append-only: its triggers refuse changes, and the role may not even
        # ask (no UPDATE, DELETE or TRUNCATE).
        sql.SQL("REVOKE UPDATE, DELETE, TRUNCATE ON {audit} FROM {name}").format(
            audit=sql.Identifier(AUDIT_TABLE), name=name
        ),
        sql.SQL("GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {name}").format(
            name=name
        ),
        # Tables that later migrations create (run as the owner, who runs this command).
        sql.SQL(
            "ALTER DEFAULT PRIVILEGES IN SCHEMA public "
            "GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {name}"
        ).format(name=name),
        sql.SQL(
            "ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO {name}"
        ).format(name=name),
    ]
    return statements
