"""The sign-in lockout under every server the docs name (`make serve`'s console.serve,
`make run`'s console.serve --reload, gunicorn), each a real process: a client that writes its own
X-Forwarded-For is still known by its socket's address (CONSOLE_TRUSTED_PROXIES is 0), so
changing the header on every try does not get it past the lockout."""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
from collections.abc import Iterator

import pytest
import requests
from django.contrib.auth.models import User

from tests.conftest import PASSWORD
from tests.support.servers import (
    ROOT,
    free_port,
    gunicorn_server,
    production_env,
    static_files_collected,
    wait_until_up,
)

pytestmark = pytest.mark.servers

TRIES = 40


@contextlib.contextmanager
def _process(command: list[str], port: int, env: dict[str, str]) -> Iterator[str]:
    server = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(base, process=server)
        yield base
    finally:
        server.terminate()
        _, errors = server.communicate(timeout=60)
        assert b"Traceback" not in errors, errors.decode()[-3000:]


@contextlib.contextmanager
def _server(name: str) -> Iterator[str]:
    env = production_env(CONSOLE_TRUSTED_PROXIES="0", LOG_LEVEL="WARNING")
    with static_files_collected(env):
        if name == "gunicorn":
            with gunicorn_server(env, workers=2) as base:
                yield base
            return
        port = free_port()
        if name == "make-serve":
            command = [sys.executable, "-m", "console.serve", "--port", str(port),
                       "--workers", "2", "--log-level", "warning"]  # fmt: skip
        else:  # make-run: one process under uvicorn's reloader
            command = [sys.executable, "-m", "console.serve", "--reload", "--host", "127.0.0.1",
                       "--port", str(port), "--log-level", "warning"]  # fmt: skip
        with _process(command, port, env) as base:
            yield base


def _sign_in(base: str, password: str, forwarded_for: str) -> requests.Response:
    """One sign-in as alice, the form fetched first for its CSRF token. The cookies are sent
    by hand: production marks them Secure, and this is plain HTTP on loopback."""
    form = requests.get(f"{base}/accounts/login/", timeout=30)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)
    assert token is not None, form.text[:2000]
    return requests.post(
        f"{base}/accounts/login/",
        data={
            "username": "alice",
            "password": password,
            "csrfmiddlewaretoken": token.group(1),
        },
        headers={
            "Cookie": f"csrftoken={form.cookies['csrftoken']}",
            "X-Forwarded-For": forwarded_for,
        },
        allow_redirects=False,
        timeout=30,
    )


@pytest.mark.parametrize("server", ["make-serve", "make-run", "gunicorn"])
@pytest.mark.django_db(transaction=True)
def test_a_forged_x_forwarded_for_does_not_get_past_the_lockout(
    server: str,
    alice: User,
    settings,  # noqa: ANN001
) -> None:
    limit = settings.AXES_FAILURE_LIMIT
    with _server(server) as base:
        statuses = [
            _sign_in(base, "wrong", forwarded_for=f"198.51.100.{n + 1}").status_code
            for n in range(TRIES)
        ]
        # The tries before the limit are wrong passwords (the form again); the one that reaches
        # it and every later one find the account locked from this address, whatever address
        # the header names.
        assert statuses[: limit - 1] == [200] * (limit - 1), statuses
        assert statuses[limit - 1 :] == [429] * (TRIES - limit + 1), statuses
        locked = _sign_in(base, PASSWORD, forwarded_for="203.0.113.250")
        assert locked.status_code == 429
        assert "Account locked" in locked.text
