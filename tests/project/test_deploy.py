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
from django.core import checks
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from console.checks import base_url_problem, check_base_url, webauthn_problems

ROOT = Path(__file__).resolve().parents[2]
PRODUCTION = {
    "DEBUG": "false",
    "DJANGO_SECRET_KEY": "a-long-random-production-secret-" + "x" * 40,
    "DJANGO_ALLOWED_HOSTS": "console.example.org",
    "CONSOLE_BASE_URL": "https://console.example.org",
    "CONSOLE_WEBAUTHN_RP_ID": "console.example.org",
    "CONSOLE_WEBAUTHN_ORIGINS": "https://console.example.org",
}


def manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {
        k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DEBUG", "CONSOLE_"))
    }
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


@pytest.mark.servers
def test_it_passes_check_deploy_under_production_settings(signing_key: dict[str, str]) -> None:
    result = manage("check", "--deploy", "--fail-level", "WARNING", env=PRODUCTION | signing_key)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.servers
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


@pytest.mark.servers
def test_check_deploy_fails_without_the_passkeys_relying_party(signing_key: dict[str, str]) -> None:
    for unset in ("CONSOLE_WEBAUTHN_RP_ID", "CONSOLE_WEBAUTHN_ORIGINS"):
        env = {k: v for k, v in (PRODUCTION | signing_key).items() if k != unset}
        result = manage("check", "--deploy", env=env)
        assert result.returncode != 0, result.stdout + result.stderr
        assert "console.E002" in result.stderr and f"{unset} is not set" in result.stderr
        # It says what to set, and how.
        assert "Set CONSOLE_WEBAUTHN_RP_ID to the console's domain name" in result.stderr


@pytest.mark.parametrize(
    ("rp_id", "origins", "problem"),
    [
        ("", [], "CONSOLE_WEBAUTHN_RP_ID is not set"),
        ("", ["https://console.example.org"], "CONSOLE_WEBAUTHN_RP_ID is not set"),
        ("console.example.org", [], "CONSOLE_WEBAUTHN_ORIGINS is not set"),
        ("127.0.0.1", ["https://127.0.0.1"], "is an IP address"),
        ("[::1]", ["https://[::1]"], "is an IP address"),
        ("console.example.org", ["http://console.example.org"], "not an https origin"),
        ("console.example.org", ["console.example.org"], "not an https origin"),
        ("console.example.org", ["https://"], "not an https origin"),
        ("console.example.org", ["https://console.example.org:99999"], "not an https origin"),
        ("console.example.org", ["https://elsewhere.example.com"], "or a subdomain of it"),
        ("console.example.org", ["https://evilconsole.example.org"], "or a subdomain of it"),
        ("example.org", ["https://console.example.org:8443"], None),
        ("console.example.org", ["https://console.example.org"], None),
        ("localhost", ["http://localhost:8000", "https://localhost"], None),
    ],
)
def test_passkeys_need_a_domain_and_the_https_origins_on_it(
    rp_id: str, origins: list[str], problem: str | None
) -> None:
    found = webauthn_problems(rp_id, origins)
    if problem is None:
        assert found == []
    else:
        assert len(found) == 1 and problem in found[0], found


@pytest.mark.servers
def test_check_deploy_fails_without_a_public_https_base_url() -> None:
    unset = {k: v for k, v in PRODUCTION.items() if k != "CONSOLE_BASE_URL"}
    for env in (unset, {**PRODUCTION, "CONSOLE_BASE_URL": "http://10.1.2.3:8000"}):
        result = manage("check", "--deploy", env=env)
        assert result.returncode != 0, result.stdout + result.stderr
        assert "console.E001" in result.stderr
        assert "CONSOLE_BASE_URL" in result.stderr


@pytest.mark.servers
def test_development_checks_pass_with_the_local_base_url() -> None:
    # What `make run` relies on: DEBUG on, CONSOLE_BASE_URL left at http://127.0.0.1:8000.
    result = manage("check", "--fail-level", "WARNING", env={"DEBUG": "true"})
    assert result.returncode == 0, result.stdout + result.stderr
    assert settings_under({"DEBUG": "true"})["CONSOLE_BASE_URL"] == "http://127.0.0.1:8000"


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://127.0.0.1:8000", "must be an https URL"),
        ("http://console.example.org", "must be an https URL"),
        ("console.example.org", "must be an https URL"),
        ("", "must be an https URL"),
        ("https://", "has no host"),
        ("https://console.example.org:99999", "is not a URL"),
        ("https://127.0.0.1", "loopback, private or reserved"),
        ("https://[::1]:8443", "loopback, private or reserved"),
        ("https://10.0.0.5", "loopback, private or reserved"),
        ("https://172.16.3.4", "loopback, private or reserved"),
        ("https://192.168.1.2:8443", "loopback, private or reserved"),
        ("https://169.254.169.254", "loopback, private or reserved"),
        ("https://100.64.0.1", "loopback, private or reserved"),
        ("https://0.0.0.0", "loopback, private or reserved"),
        ("https://[fd00::1]", "loopback, private or reserved"),
        ("https://[::ffff:127.0.0.1]", "loopback, private or reserved"),
        ("https://localhost", "local host"),
        ("https://LOCALHOST.", "local host"),
        ("https://app.localhost", "local host"),
        ("https://printer.local", "local host"),
        ("https://db.internal", "local host"),
        ("https://console", "local host"),
        ("https://alice:secret@console.example.org", "user name or password"),
        ("https://console.example.org/?next=x", "query or a fragment"),
        ("https://console.example.org/#top", "query or a fragment"),
        ("https://console.example.org", None),
        ("https://console.example.org:8443/console", None),
        ("https://93.184.216.34", None),
        ("https://[2606:2800:220:1:248:1893:25c8:1946]", None),
    ],
)
def test_it_accepts_only_a_public_https_base_url(url: str, problem: str | None) -> None:
    found = base_url_problem(url)
    assert (found is None) == (problem is None), found
    if problem is not None:
        assert found is not None and problem in found
        with override_settings(CONSOLE_BASE_URL=url):
            (error,) = check_base_url()
        assert error.id == "console.E001" and error.level == checks.ERROR
        assert repr(url) in error.msg


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
    # Development and the tests close each request's connection (see the settings).
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
