"""What the tests that run the console as real server processes share: a port held for them,
the test database's URL, and the production environment those processes start in."""

from __future__ import annotations

import atexit
import contextlib
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import requests
from django.conf import settings
from django.db import connection

if TYPE_CHECKING:
    from django.contrib.auth.models import User

ROOT = Path(__file__).resolve().parents[2]


def children(pid: int) -> list[int]:
    """The processes `pid` started (its threads' children, from /proc), including ended ones
    that it has not yet reaped (zombies, which hold no files)."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            found += [int(child) for child in (task / "children").read_text().split()]
    return found


def free_port() -> int:
    """A port free now, for a command that takes only a number (`make serve`'s PORT). Another
    socket may take it before the command binds it: where a server takes a descriptor, use
    `held_port`."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def held_port() -> Iterator[tuple[int, int]]:
    """(port, descriptor) of a socket bound to a free loopback port and not listening, held
    until the block ends, for a server process to serve on (`pass_fds`; uvicorn `--fd`,
    gunicorn `--bind fd://`). Nothing can take the port between its choice and the server's
    start (an outgoing connection's local port could, under load); until the server listens,
    a connection is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1]), sock.fileno()


def database_url() -> str:
    """The URL of the test database, as DATABASE_URL names it to another process."""
    s = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{Path(s['NAME']).resolve()}"
    auth = s["USER"] + (f":{s['PASSWORD']}" if s["PASSWORD"] else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


def production_env(**extra: str) -> dict[str, str]:
    """Production settings (DEBUG off) on the test database, served on loopback over HTTP, with
    the test session's receipts key (production settings need one to sign) and a relying party
    for passkeys; `extra` on top."""
    return {
        **os.environ,
        "DEBUG": "false",
        "DJANGO_SECRET_KEY": settings.SECRET_KEY,
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
        "DJANGO_SECURE_SSL_REDIRECT": "false",
        "CONSOLE_RECEIPT_SIGNING_KEYS": ",".join(settings.CONSOLE_RECEIPT_SIGNING_KEYS),
        # The passkeys' relying party, which production requires (console.serve checks it).
        "CONSOLE_WEBAUTHN_RP_ID": "localhost",
        "CONSOLE_WEBAUTHN_ORIGINS": "http://localhost",
        "DATABASE_URL": database_url(),
        **extra,
    }


_collected: dict[int, Path] = {}


@contextlib.contextmanager
def static_files_collected(env: dict[str, str]) -> Iterator[None]:
    """Production settings serve static files by their manifest, which a fresh clone lacks:
    `env` names a directory of this test process's own (`STATIC_ROOT`), collected into once.
    Not the checkout's `staticfiles/`: the test client of another test process (xdist) scans
    that one as it starts, and would find files disappearing under it."""
    root = _collected.get(os.getpid())
    if root is None:
        root = Path(tempfile.mkdtemp(prefix="console-static-"))
        subprocess.run(
            [sys.executable, "manage.py", "collectstatic", "--noinput", "--verbosity", "0"],
            cwd=ROOT,
            env={**env, "STATIC_ROOT": str(root)},
            check=True,
        )
        _collected[os.getpid()] = root
        atexit.register(shutil.rmtree, root, True)
    env["STATIC_ROOT"] = str(root)
    yield


@contextlib.contextmanager
def uvicorn_servers(count: int = 2, **extra: str) -> Iterator[list[str]]:
    """`count` uvicorn processes on the test database as `make serve` runs them (production
    settings, a connection pool per process), each on a free port; their base URLs once every
    one answers /healthz. None may print a traceback before it stops."""
    env = production_env(DATABASE_POOL="4", **extra)
    processes, bases = [], []
    try:
        with static_files_collected(env), contextlib.ExitStack() as ports:
            for _ in range(count):
                port, fd = ports.enter_context(held_port())
                command = [sys.executable, "-m", "uvicorn", "console.asgi:application",
                           "--fd", str(fd), "--log-level", "warning"]  # fmt: skip
                processes.append(
                    subprocess.Popen(
                        command,
                        cwd=ROOT,
                        env=env,
                        pass_fds=[fd],
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.PIPE,
                    )  # fmt: skip
                )
                bases.append(f"http://127.0.0.1:{port}")
            for base in bases:
                wait_until_up(base)
        yield bases
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            _, errors = process.communicate(timeout=30)
            assert b"Traceback" not in errors, errors.decode()[-3000:]


@contextlib.contextmanager
def gunicorn_server(
    env: dict[str, str], workers: int, *, errors_expected: bool = False
) -> Iterator[str]:
    """gunicorn with `workers` processes of 4 threads each, on a held port; its base URL once it
    answers /healthz. Kept-alive connections last 120 s, longer than any pause between one
    client's requests, so the server never closes one just as the client reuses it (a reset,
    not an answer). It may print no traceback before it stops, unless `errors_expected` (a test
    that cuts its database connections)."""
    with held_port() as (port, fd):
        process = subprocess.Popen(
            [str(Path(sys.executable).with_name("gunicorn")), "console.wsgi",
             "--bind", f"fd://{fd}", "--workers", str(workers), "--worker-class", "gthread",
             "--threads", "4", "--timeout", "120", "--keep-alive", "120"],
            cwd=ROOT,
            env=env,
            pass_fds=[fd],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL if errors_expected else subprocess.PIPE,
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(base, process=process)
        yield base
    finally:
        process.terminate()
        _, errors = process.communicate(timeout=30)
        assert b"Traceback" not in (errors or b""), errors.decode()[-3000:]


def wait_until_up(
    base: str, seconds: float = 60.0, process: subprocess.Popen[bytes] | None = None
) -> None:
    """Until `base` answers /healthz; fails after `seconds`, or at once if `process` (its
    server) has stopped."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            if requests.get(f"{base}/healthz", timeout=5).status_code == 200:
                return
        except requests.RequestException:
            pass  # still starting
        assert process is None or process.poll() is None, f"{base}'s server stopped"
        assert time.monotonic() < deadline, f"{base} did not answer /healthz"
        time.sleep(0.02)


def session_headers(user: User) -> dict[str, str]:
    """A signed-in person's cookies and CSRF header, as a browser sends them to a server of the
    test database."""
    from django.test import Client

    client = Client()
    client.force_login(user)
    token = secrets.token_hex(16)  # a CSRF secret of 32 characters
    session = client.cookies["sessionid"].value
    return {"Cookie": f"sessionid={session}; csrftoken={token}", "X-CSRFToken": token}


def long_poll(
    url: str, headers: dict[str, str], tag: str, seconds: int = 30
) -> tuple[threading.Thread, list[tuple[requests.Response, float]]]:
    """A runtime's long-poll of `url` from the ETag `tag` (`Prefer: wait=seconds`), started in a
    thread of its own: the thread, and the list it appends its answer to, with the time
    (`time.monotonic()`) the answer came."""
    answers: list[tuple[requests.Response, float]] = []

    def wait() -> None:
        response = requests.get(
            url,
            headers={**headers, "If-None-Match": tag, "Prefer": f"wait={seconds}"},
            timeout=seconds + 30,
        )
        answers.append((response, time.monotonic()))

    waiter = threading.Thread(target=wait)
    waiter.start()
    return waiter, answers
