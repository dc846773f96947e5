"""`make serve`'s server (`console.serve`): each process listens on a socket of its own, so new
connections spread over the processes; a process that dies is replaced; SIGHUP replaces them
all while the port answers; SIGTERM stops them all; a port already taken is refused in words."""

from __future__ import annotations

import concurrent.futures
import contextlib
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from multiprocessing.connection import Connection
from pathlib import Path

import pytest
import requests

from console import serve
from tests.support.servers import (
    ROOT,
    children,
    database_url,
    free_port,
    production_env,
    static_files_collected,
    wait_until_up,
)

pytestmark = pytest.mark.servers

LISTEN, ESTABLISHED = "0A", "01"


def _servers(pid: int, port: int) -> dict[int, set[str]]:
    """The supervisor's server processes that listen on `port`, each with the inodes of its
    listening sockets there (multiprocessing's helpers hold none; a process starting up has
    bound its socket but listens only once its application has loaded)."""
    listening = _sockets_on(port, LISTEN)
    held = {child: _socket_inodes(child) & listening for child in children(pid)}
    return {child: inodes for child, inodes in held.items() if inodes}


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").glob("*"):
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("socket:["):
                inodes.add(target[len("socket:[") : -1])
    return inodes


def _sockets_on(port: int, state: str) -> set[str]:
    """The inodes of the IPv4 TCP sockets in `state` whose local port is `port`."""
    found = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, st, inode = fields[1], fields[3], fields[9]
        if int(local.split(":")[1], 16) == port and st == state:
            found.add(inode)
    return found


def _until(what: str, check: object, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"still not {what} after {seconds} s"
        time.sleep(0.1)


@contextlib.contextmanager
def _serve(port: int, workers: int) -> Iterator[subprocess.Popen[bytes]]:
    env = production_env()  # on the test database
    with static_files_collected(env):
        server = subprocess.Popen(
            [sys.executable, "-m", "console.serve", "--port", str(port), "--workers",
             str(workers), "--log-level", "warning"],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            wait_until_up(f"http://127.0.0.1:{port}")
            _until(
                f"{workers} processes listening",
                lambda: len(_servers(server.pid, port)) == workers,
            )
            yield server
        finally:
            if server.poll() is None:
                server.terminate()
            server.communicate(timeout=60)


def _open_connections(port: int, count: int) -> list[socket.socket]:
    """`count` kept-alive connections, all opened at once, each having had one answer."""
    sockets = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(count)]
    for sock in sockets:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    for sock in sockets:
        assert sock.recv(4096).startswith(b"HTTP/1.1 200"), "no answer on a connection"
    return sockets


@pytest.mark.django_db(transaction=True)
def test_each_process_has_its_own_socket_and_connections_spread_over_them() -> None:
    port = free_port()
    with _serve(port, workers=2) as server:
        own = _servers(server.pid, port)
        processes = list(own)
        # One listening socket each, not one shared (`uvicorn --workers` shares one).
        assert all(len(sockets) == 1 for sockets in own.values()), own
        assert len(set.union(*own.values())) == 2, own

        # 32 connections opened at once by one client: each process takes some (the kernel
        # hashes each connection to a socket; all on one would happen once in 2**31 runs).
        connections = _open_connections(port, 32)
        try:
            established = _sockets_on(port, ESTABLISHED)
            held = Counter({pid: len(_socket_inodes(pid) & established) for pid in processes})
            assert sum(held.values()) == 32, held
            assert all(held[pid] > 0 for pid in processes), held
        finally:
            for sock in connections:
                sock.close()

        # A process that dies is replaced, and the port is served throughout.
        killed = processes[0]
        os.kill(killed, signal.SIGKILL)
        _until(
            "replaced",
            lambda: (
                killed not in _servers(server.pid, port) and len(_servers(server.pid, port)) == 2
            ),
        )
        for _ in range(8):
            assert requests.get(f"http://127.0.0.1:{port}/healthz", timeout=10).status_code == 200

        # SIGTERM stops every process and the supervisor exits cleanly.
        survivors = list(_servers(server.pid, port))
        server.terminate()
        _, errors = server.communicate(timeout=60)
    assert server.returncode == 0, errors.decode()[-3000:]
    assert b"Traceback" not in errors, errors.decode()[-3000:]
    assert not any(Path(f"/proc/{pid}").exists() for pid in survivors)


@pytest.mark.django_db(transaction=True)
def test_sighup_replaces_every_process_while_the_port_answers() -> None:
    port = free_port()
    with _serve(port, workers=2) as server:
        before = set(_servers(server.pid, port))
        answers: list[int] = []
        done = threading.Event()

        def ask() -> None:
            # One connection per request, as new clients come during a deploy. A connection
            # queued at an old socket as it closes is reset by the kernel (unless
            # net.ipv4.tcp_migrate_req is on), so a request is tried again once, as a proxy
            # tries the next upstream connection.
            while not done.is_set():
                for attempt in (1, 2):
                    try:
                        answer = requests.get(f"http://127.0.0.1:{port}/healthz", timeout=10)
                    except requests.ConnectionError:
                        if attempt == 2:
                            raise
                    else:
                        answers.append(answer.status_code)
                        break

        asker = concurrent.futures.ThreadPoolExecutor(1).submit(ask)
        try:
            _until("asked", lambda: len(answers) > 0)
            os.kill(server.pid, signal.SIGHUP)
            _until(
                "replaced by new processes",
                lambda: (
                    len(_servers(server.pid, port)) == 2
                    and not before & set(_servers(server.pid, port))
                ),
            )
            _until("the old processes gone", lambda: not any(_alive(pid) for pid in before))
            asked_during = len(answers)
        finally:
            done.set()
        asker.result(timeout=30)
        assert server.poll() is None, "the supervisor ended on SIGHUP"
        assert asked_during > 1 and set(answers) == {200}, Counter(answers)
        assert requests.get(f"http://127.0.0.1:{port}/healthz", timeout=10).status_code == 200


def _listens(tell: Connection) -> None:
    tell.send_bytes(b"listening")
    tell.close()
    time.sleep(600)


def _cannot_start(tell: Connection) -> None:
    sys.exit(3)


@pytest.mark.parametrize("starts", ["yes", "no"])
def test_a_reload_stops_an_old_process_only_once_its_replacement_listens(starts: str) -> None:
    fork = multiprocessing.get_context("fork")  # small stand-ins for the server processes
    targets = iter([_listens, _listens, _listens if starts == "yes" else _cannot_start, _listens])

    def start() -> serve.Child:
        return serve.start_child(fork.Process, next(targets), ())

    supervisor = serve.Supervisor(2, start)
    old = [start(), start()]
    supervisor.children = list(old)
    try:
        supervisor.reload()
        if starts == "yes":
            assert not set(supervisor.children) & set(old)
            assert all(child.process.is_alive() for child in supervisor.children)
            assert supervisor.retiring == [child.process for child in old]
            for child in old:
                child.process.join(timeout=30)
                assert child.process.exitcode == -signal.SIGTERM
        else:
            # The first replacement ended before it listened: both old processes serve on.
            assert supervisor.children == old
            assert all(child.process.is_alive() for child in old)
            assert supervisor.retiring == []
    finally:
        for process in supervisor.processes():
            process.kill()
            process.join()


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie has ended: it only waits for its parent to read its
    status)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except OSError:
        return False


def test_a_port_already_taken_is_refused_in_words() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "console.serve", "--port", str(port)],
            cwd=ROOT, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert done.returncode == 1
    assert f"Cannot serve on 127.0.0.1:{port}: Address already in use" in done.stderr
    assert "Traceback" not in done.stderr


def _serve_refused(env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], int]:
    """`console.serve` on a free port under `env`: its outcome, and the port, which it must
    not have listened on (nothing of it is left there, nor did it say it serves)."""
    port = free_port()
    done = subprocess.run(
        [sys.executable, "-m", "console.serve", "--port", str(port), "--workers", "1"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    return done, port


@pytest.mark.parametrize(
    ("unset", "says"),
    [
        ({"CONSOLE_RECEIPT_SIGNING_KEYS": ""}, ["beliefs.E101", "python manage.py receipt_key"]),
        ({"CONSOLE_RECEIPT_SIGNING_KEYS": "/nonexistent/receipt.pem"}, ["beliefs.E102"]),
        ({"CONSOLE_WEBAUTHN_RP_ID": ""}, ["console.E002", "CONSOLE_WEBAUTHN_RP_ID is not set"]),
        ({"CONSOLE_WEBAUTHN_ORIGINS": ""}, ["console.E002", "CONSOLE_WEBAUTHN_ORIGINS is not"]),
        ({"CONSOLE_WEBAUTHN_RP_ID": "127.0.0.1"}, ["console.E002", "is an IP address"]),
    ],
)
@pytest.mark.django_db(transaction=True)
def test_it_does_not_listen_with_debug_off_and_a_setting_missing(
    unset: dict[str, str], says: list[str]
) -> None:
    done, port = _serve_refused(production_env(**unset))
    assert done.returncode == 1, done.stderr
    assert "Not serving: the production settings are incomplete." in done.stderr
    assert all(words in done.stderr for words in says), done.stderr
    assert "Serving on" not in done.stderr and "Traceback" not in done.stderr
    with socket.socket() as sock:  # the port was never taken
        sock.bind(("127.0.0.1", port))


@pytest.mark.django_db(transaction=True)
def test_with_debug_on_it_needs_no_production_keys() -> None:
    # Development: a generated receipts key and the request's own host stand in. It gets as
    # far as binding its port (here taken, so it stops there, having passed the checks).
    env = production_env(DEBUG="true", CONSOLE_RECEIPT_SIGNING_KEYS="", CONSOLE_WEBAUTHN_RP_ID="")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "console.serve", "--port", str(port)],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert done.returncode == 1
    assert "Not serving" not in done.stderr
    assert f"Cannot serve on 127.0.0.1:{port}: Address already in use" in done.stderr


def test_a_settings_module_that_refuses_to_load_is_said_in_words() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "CONSOLE_"))}
    done = subprocess.run(
        [sys.executable, "-m", "console.serve", "--port", str(free_port())],
        cwd=ROOT, env={**env, "DEBUG": "false"}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1
    assert "DJANGO_SECRET_KEY must be set" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.django_db(transaction=True)
def test_make_runs_server_is_the_same_handler_and_serves_the_apps_static_files(
    runtime_key: tuple[object, str], api: object, instance_id: str
) -> None:
    """`make run` (`console.serve --reload`, DEBUG on): a long-poll waits and says so, as under
    `make serve`, and the static files come from the apps' directories (nothing collected)."""
    port = free_port()
    env = {**os.environ, "DEBUG": "true", "DATABASE_URL": database_url()}
    env.pop("STATIC_ROOT", None)
    command = [sys.executable, "-m", "console.serve", "--reload", "--host", "127.0.0.1",
               "--port", str(port), "--log-level", "warning"]  # fmt: skip
    server = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(base, process=server)
        url = f"{base}/api/v1/instances/{instance_id}/"
        key = {"Authorization": f"Api-Key {runtime_key[1]}"}
        tag = requests.get(url, headers=key, timeout=30).headers["ETag"]
        started = time.monotonic()
        waited = requests.get(
            url, headers={**key, "If-None-Match": tag, "Prefer": "wait=1"}, timeout=30
        )
        assert waited.status_code == 304 and waited.headers["Preference-Applied"] == "wait=1"
        assert time.monotonic() - started >= 1.0
        script = requests.get(f"{base}/static/console/live.js", timeout=30)
        assert script.status_code == 200 and "live-poll" in script.text
    finally:
        server.terminate()
        _, errors = server.communicate(timeout=60)
    assert b"Traceback" not in errors, errors.decode()[-3000:]
