"""PostgreSQL's own statements, which Django has no API for. None of them reads the
application's data: they wake listeners (NOTIFY, LISTEN), serialise one person's emails (an
advisory lock), fix a read's snapshot (the transaction's isolation) and create the role the
application connects as. They live beside the hand-written reads so that every statement this
product writes by hand is in one package. On SQLite each is a no-op or refused, as said."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import connection, connections, transaction
from psycopg import sql

if TYPE_CHECKING:
    import psycopg


def notify(channel: str, payload: str) -> None:
    """NOTIFY `channel` with `payload` when the caller's transaction commits (PostgreSQL sends
    notifications at commit, and drops them at a rollback); nothing on SQLite."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_notify(%s, %s)", [channel, payload])


def listening_params() -> dict[str, Any]:
    """The keyword arguments of `psycopg.connect` for a connection of its own that listens: as
    Django connects (host, credentials, sslmode and the other OPTIONS), less what only Django's
    own cursors use."""
    params = connections["default"].get_connection_params()
    for name in ("cursor_factory", "context", "prepare_threshold"):
        params.pop(name, None)
    return params


def _listen_statement(channel: str) -> sql.Composed:
    return sql.SQL("LISTEN {}").format(sql.Identifier(channel))


def listen(conn: psycopg.Connection[Any], channel: str) -> None:
    """LISTEN on `channel` on `conn`, a connection in autocommit of `listening_params`."""
    conn.execute(_listen_statement(channel))


async def alisten(conn: psycopg.AsyncConnection[Any], channel: str) -> None:
    """`listen` on an asyncio connection."""
    await conn.execute(_listen_statement(channel))


def lock_until_commit(space: int, key: int) -> None:
    """Take the transaction-scoped advisory lock (`space`, `key`), released at commit or
    rollback; nothing on SQLite, which serialises writers."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [space, key])


def read_only_snapshot() -> None:
    """Make the transaction just begun read one snapshot and write nothing (repeatable read,
    read only). Call it first in the transaction; PostgreSQL only."""
    with connection.cursor() as cursor:
        cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")


AUDIT_TABLE = "beliefs_auditevent"


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


def create_app_role(role: str, password: str | None) -> None:
    """Run `app_role_statements` in one transaction on the default database."""
    statements = app_role_statements(role, password, connection.settings_dict["NAME"])
    with transaction.atomic(), connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)
