"""A real OpenID Connect provider on loopback for the single sign-on tests: panva's
oidc-provider, started with node from tests/oidc_provider/ (server.mjs), its accounts read from
a JSON file at every sign-in (`LoopbackProvider.accounts`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

PROVIDER_DIR = Path(__file__).resolve().parents[1] / "oidc_provider"
CLIENT_ID = "console"
CLIENT_SECRET = "loopback-client-secret-0123456789"


@dataclass
class LoopbackProvider:
    issuer: str
    accounts_file: Path

    def accounts(self, accounts: dict[str, dict[str, Any]]) -> None:
        """Who the provider knows from now on: {sub: {preferred_username, email, groups}}."""
        self.accounts_file.write_text(json.dumps(accounts))


def _missing(reason: str) -> None:
    # In CI (`.ci/run` sets CONSOLE_CI; most CI services set CI) a provider that cannot start
    # is a failure, never a skip.
    if os.environ.get("CONSOLE_CI") or os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


@contextmanager
def loopback_provider(directory: Path, redirect_uri: str) -> Iterator[LoopbackProvider]:
    """Starts the provider with one client whose redirect URI is `redirect_uri`, waits for its
    discovery document to answer, and stops it afterwards."""
    node = shutil.which("node")
    if node is None:
        _missing("single sign-on tests need Node.js 20+ (`node`) for the loopback provider")
    if not (PROVIDER_DIR / "node_modules" / "oidc-provider").is_dir():
        _missing(
            "tests/oidc_provider/node_modules is missing: run `npm ci` there (`make test` does)"
        )
    accounts_file = directory / "accounts.json"
    accounts_file.write_text("{}")
    log = (directory / "provider.log").open("w")
    process = subprocess.Popen(
        [
            str(node),
            "server.mjs",
            "--accounts",
            str(accounts_file),
            "--redirect-uri",
            redirect_uri,
            "--client-id",
            CLIENT_ID,
            "--client-secret",
            CLIENT_SECRET,
        ],
        cwd=PROVIDER_DIR,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()  # "" if it exited
        if not first:
            process.wait(timeout=10)
            log.flush()
            raise AssertionError(
                f"the provider exited ({process.returncode}): "
                + (directory / "provider.log").read_text()
            )
        issuer = json.loads(first)["issuer"]
        _wait_for_discovery(issuer, process)
        yield LoopbackProvider(issuer=issuer, accounts_file=accounts_file)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def _wait_for_discovery(issuer: str, process: subprocess.Popen[str], within: float = 30) -> None:
    url = f"{issuer}/.well-known/openid-configuration"
    deadline = time.monotonic() + within
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if json.load(response).get("issuer") == issuer:
                    return
        except (urllib.error.URLError, ConnectionError, ValueError):
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"the provider's discovery never answered at {url}")
        time.sleep(0.05)  # the interval between polls of a condition, not a fixed wait
