"""Management commands a runtime operator uses."""

from __future__ import annotations

import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from beliefs.models import AuditEvent, RuntimeAPIKey
from tests.conftest import JsonClient

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


def test_it_prints_the_new_runtime_key_alone_and_the_key_works() -> None:
    out = StringIO()
    call_command("runtime_key", "agent-prod", stdout=out)
    key = out.getvalue()
    assert key.endswith("\n") and key.count("\n") == 1  # the key alone, for $(...) in a shell
    key = key.strip()
    assert RuntimeAPIKey.objects.get_from_key(key).name == "agent-prod"
    client = JsonClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {key}")
    assert client.get("/api/v1/task-classes/nope/").status_code == 404  # authenticated, no such
    assert AuditEvent.objects.filter(kind="runtime_key.created", subject="agent-prod").exists()


@pytest.mark.servers
def test_it_needs_a_name_for_a_runtime_key() -> None:
    result = subprocess.run(
        [sys.executable, "manage.py", "runtime_key"],
        cwd=ROOT,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "name" in result.stderr
