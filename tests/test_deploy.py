"""Production settings: `check --deploy` is clean, and missing secrets fail loudly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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


def test_it_passes_check_deploy_under_production_settings() -> None:
    result = manage("check", "--deploy", "--fail-level", "WARNING", env=PRODUCTION)
    assert result.returncode == 0, result.stdout + result.stderr


def test_it_refuses_to_start_in_production_without_a_secret_key() -> None:
    env = {k: v for k, v in PRODUCTION.items() if k != "DJANGO_SECRET_KEY"}
    result = manage("check", env=env)
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY must be set" in result.stderr


def test_it_refuses_to_start_in_production_without_allowed_hosts() -> None:
    env = {k: v for k, v in PRODUCTION.items() if k != "DJANGO_ALLOWED_HOSTS"}
    result = manage("check", env=env)
    assert result.returncode != 0
    assert "DJANGO_ALLOWED_HOSTS must be set" in result.stderr


def _connection_settings(env: dict[str, str]) -> str:
    code = "from django.db import connection as c; print(c.settings_dict['CONN_MAX_AGE'], c.settings_dict['CONN_HEALTH_CHECKS'])"  # noqa: E501
    result = manage("shell", "--no-imports", "-c", code, env=env)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_production_reuses_database_connections_with_health_checks() -> None:
    assert _connection_settings(PRODUCTION) == "60 True"
    assert _connection_settings({**PRODUCTION, "DATABASE_CONN_MAX_AGE": "0"}) == "0 True"
    # runserver's thread per request would leave a connection behind per request.
    assert _connection_settings({"DEBUG": "true"}) == "0 True"
