"""Production settings: `check --deploy` is clean, and missing secrets fail loudly."""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from django.core.exceptions import ImproperlyConfigured

ROOT = Path(__file__).resolve().parents[1]
PRODUCTION = {
    "DEBUG": "false",
    "DJANGO_SECRET_KEY": "a-long-random-production-secret-" + "x" * 40,
    "DJANGO_ALLOWED_HOSTS": "console.example.org",
}


def manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DEBUG"))}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def signing_key(tmp_path: Path) -> dict[str, str]:
    """Production's receipts signing key, as `manage.py receipt_key` makes it."""
    path = tmp_path / "receipt.pem"
    made = manage("receipt_key", str(path), env={})
    assert made.returncode == 0, made.stderr
    return {"CONSOLE_RECEIPT_SIGNING_KEYS": str(path)}


def test_it_passes_check_deploy_under_production_settings(signing_key: dict[str, str]) -> None:
    result = manage("check", "--deploy", "--fail-level", "WARNING", env=PRODUCTION | signing_key)
    assert result.returncode == 0, result.stdout + result.stderr


def test_check_deploy_fails_without_a_receipts_signing_key(tmp_path: Path) -> None:
    result = manage("check", "--deploy", env=PRODUCTION)
    assert result.returncode != 0
    assert "beliefs.E101" in result.stderr
    unreadable = tmp_path / "nothing.pem"
    unreadable.write_text("not a key")
    broken = manage(
        "check", "--deploy", env=PRODUCTION | {"CONSOLE_RECEIPT_SIGNING_KEYS": str(unreadable)}
    )
    assert broken.returncode != 0 and "beliefs.E102" in broken.stderr


def settings_under(env: dict[str, str]) -> dict[str, Any]:
    """The settings module's values when the process environment is `env` (plus what is not
    Django's), evaluated afresh in this process: only `check --deploy` needs a new process."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DEBUG"))}
    with mock.patch.dict(os.environ, {**base, **env}, clear=True):
        return runpy.run_path(str(ROOT / "console" / "settings.py"))


def test_it_refuses_to_start_in_production_without_a_secret_key() -> None:
    env = {k: v for k, v in PRODUCTION.items() if k != "DJANGO_SECRET_KEY"}
    with pytest.raises(ImproperlyConfigured, match="DJANGO_SECRET_KEY must be set"):
        settings_under(env)


def test_it_refuses_to_start_in_production_without_allowed_hosts() -> None:
    env = {k: v for k, v in PRODUCTION.items() if k != "DJANGO_ALLOWED_HOSTS"}
    with pytest.raises(ImproperlyConfigured, match="DJANGO_ALLOWED_HOSTS must be set"):
        settings_under(env)


def _connection_settings(env: dict[str, str]) -> tuple[int, bool]:
    database = settings_under(env)["DATABASES"]["default"]
    return database["CONN_MAX_AGE"], database["CONN_HEALTH_CHECKS"]


def test_production_reuses_database_connections_with_health_checks() -> None:
    assert _connection_settings(PRODUCTION) == (60, True)
    assert _connection_settings({**PRODUCTION, "DATABASE_CONN_MAX_AGE": "0"}) == (0, True)
    # runserver's thread per request would leave a connection behind per request.
    assert _connection_settings({"DEBUG": "true"}) == (0, True)


def _options(env: dict[str, str]) -> dict[str, Any]:
    return settings_under(env)["DATABASES"]["default"].get("OPTIONS", {})


def test_postgresql_prepares_repeated_statements_unless_told_not_to() -> None:
    postgres = {**PRODUCTION, "DATABASE_URL": "postgres://app@db.example.org:5432/console"}
    prepared = {"server_side_binding": True, "prepare_threshold": 5}
    assert _options(postgres) == prepared
    assert _options({**postgres, "DEBUG": "true"}) == prepared
    assert _options({**postgres, "DATABASE_PREPARED_STATEMENTS": "false"}) == {}
    # SQLite has no prepared statements to ask for; its options are its own.
    sqlite = _options({**PRODUCTION, "DATABASE_URL": "sqlite:////tmp/console.sqlite3"})
    assert "prepare_threshold" not in sqlite and sqlite["transaction_mode"] == "IMMEDIATE"
