"""What a developer sees when a command starts: no lockout banner from django-axes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.servers
def test_a_command_does_not_print_the_axes_banner() -> None:
    env = {**os.environ, "DEBUG": "true", "DJANGO_SETTINGS_MODULE": "console.settings"}
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "AXES: BEGIN" not in result.stdout + result.stderr
    assert "no issues" in result.stdout
