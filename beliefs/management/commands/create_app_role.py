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
from django.db import connection

from beliefs.selectors.postgres import create_app_role


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
        create_app_role(role, password)
        self.stdout.write(f"Role {role} can now connect; it owns nothing.")
