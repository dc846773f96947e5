"""What the tests that run the console as real server processes share: a free port, the test
database's URL, and the production environment those processes start in."""

from __future__ import annotations

import os
import socket

from django.conf import settings
from django.db import connection


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def database_url() -> str:
    """The URL of the test database, as DATABASE_URL names it to another process."""
    s = connection.settings_dict
    auth = s["USER"] + (f":{s['PASSWORD']}" if s["PASSWORD"] else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


def production_env(**extra: str) -> dict[str, str]:
    """Production settings (DEBUG off) on the test database, served on loopback over HTTP, with
    the test session's receipts key (production settings need one to sign); `extra` on top."""
    return {
        **os.environ,
        "DEBUG": "false",
        "DJANGO_SECRET_KEY": settings.SECRET_KEY,
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
        "DJANGO_SECURE_SSL_REDIRECT": "false",
        "CONSOLE_RECEIPT_SIGNING_KEYS": ",".join(settings.CONSOLE_RECEIPT_SIGNING_KEYS),
        "DATABASE_URL": database_url(),
        **extra,
    }
