from django.apps import AppConfig
from django.db.backends.signals import connection_created


def _sqlite_real_parameter_limit(sender: object, connection: object, **kwargs: object) -> None:
    """Let bulk writes use the parameter limit this SQLite really has.

    Django assumes 999 parameters a statement (the limit of SQLite builds before 3.32), which
    splits a plan's prompts into one INSERT per 40 or so; Python 3.11 reports the real limit.
    """
    if getattr(connection, "vendor", "") != "sqlite":
        return
    import sqlite3

    limit = connection.connection.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)  # type: ignore[attr-defined]
    connection.features.max_query_params = limit  # type: ignore[attr-defined]


class BeliefsConfig(AppConfig):
    name = "beliefs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.core import checks

        from beliefs.signing import check_signing_keys

        connection_created.connect(_sqlite_real_parameter_limit)
        # "startup": console.serve runs it too, before it listens (console/checks.py).
        checks.register(check_signing_keys, checks.Tags.security, "startup", deploy=True)
