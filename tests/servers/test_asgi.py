"""`console.asgi`: one call on a pooled thread a request, and the long-poll between requests.

Its answers are Django's own ASGI handler's; a waiting request holds neither a thread nor a
database connection, wakes at a change and stops waiting when its client goes away.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import io
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import requests
from asgiref.testing import ApplicationCommunicator
from django.core import signals
from django.core.handlers.asgi import ASGIHandler
from django.db import connection, connections
from django.http import HttpRequest, HttpResponse
from rest_framework.views import APIView

from beliefs.services import changes
from console import asgi
from console.asgi import waiting_key
from console.checks import pool_problem
from tests.support.api import API, Driver
from tests.support.servers import (
    ROOT,
    children,
    free_port,
    production_env,
    static_files_collected,
    wait_until_up,
)

ID = "0b8f0a3e-4c1d-4f57-9a35-2f4f4b0c2d11"


@pytest.mark.parametrize(
    ("path", "prefer", "expected"),
    [
        (f"/instances/{ID}/live/", None, ID),
        (f"/instances/{ID}/live/", "wait=5", ID),
        ("/inbox/rows/", None, changes.ANY),
        (f"/api/v1/instances/{ID}/", "wait=25", ID),
        (f"/api/v1/instances/{ID}/", "respond-async, WAIT=3", ID),
        (f"/api/v1/instances/{ID}/", None, None),
        (f"/api/v1/instances/{ID}/", "handling=lenient", None),
        (f"/api/v1/instances/{ID}/plan/", "wait=25", None),
        (f"/instances/{ID}/", None, None),
        (f"/instances/{ID}/live/extra/", None, None),
        ("/instances/not-a-uuid/live/", None, None),
        ("/healthz", "wait=5", None),
        ("/inbox/", None, None),
    ],
)
def test_which_requests_wait_and_for_what(
    path: str, prefer: str | None, expected: str | None
) -> None:
    assert waiting_key(path, prefer) == expected


def _scope(path: str, headers: list[tuple[bytes, bytes]]) -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"testserver"), *headers],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }


async def _answer(communicator: ApplicationCommunicator, seconds: float = 30) -> dict[str, Any]:
    start = await communicator.receive_output(seconds)
    body = await communicator.receive_output(seconds)
    await communicator.wait(seconds)
    headers = {name.lower(): value for name, value in start["headers"]}
    return {"status": start["status"], "headers": headers, "body": body["body"]}


def _call(app: Any, path: str, headers: list[tuple[bytes, bytes]]) -> dict[str, Any]:  # noqa: ANN401
    async def run() -> dict[str, Any]:
        communicator = ApplicationCommunicator(app, _scope(path, headers))
        await communicator.send_input({"type": "http.request", "body": b""})
        return await _answer(communicator)

    return asyncio.run(run())


def _key(runtime_key: Any) -> list[tuple[bytes, bytes]]:  # noqa: ANN401
    return [(b"authorization", f"Api-Key {runtime_key[1]}".encode())]


@pytest.mark.django_db(transaction=True)
def test_it_answers_as_djangos_own_handler(api: Driver, instance_id: str, runtime_key: Any) -> None:  # noqa: ANN401
    key = _key(runtime_key)
    url = f"{API}/instances/{instance_id}/"
    tag = api.runtime.get(url)["ETag"].encode()
    requests = [
        ("/healthz", []),
        (url, key),
        (url, [*key, (b"if-none-match", tag)]),
        (url, [*key, (b"if-none-match", tag), (b"prefer", b"wait=1")]),
        (url, [*key, (b"prefer", b"wait=1")]),
        # Two Prefer headers: the wait in the second is heard.
        (
            url,
            [
                *key,
                (b"if-none-match", tag),
                (b"prefer", b"handling=lenient"),
                (b"prefer", b"wait=1"),
            ],
        ),
        (url, []),  # no key: refused alike
        ("/", []),  # signed out: sent to sign in alike
        ("/no/such/page/", []),
    ]
    handler, django = asgi.Handler(threads=2), ASGIHandler()
    for path, headers in requests:
        started = time.monotonic()
        ours = _call(handler, path, headers)
        # Django's own handler never waits; ours waits out an unchanged long-poll.
        asked_to_wait = any(n == b"prefer" and v == b"wait=1" for n, v in headers)
        assert (time.monotonic() - started >= 1.0) is (asked_to_wait and ours["status"] == 304)
        theirs = _call(django, path, headers)
        assert ours["status"] == theirs["status"], path
        if ours["headers"].get(b"content-type", b"").startswith(b"text/html"):
            assert ours["body"].count(b"<") == theirs["body"].count(b"<"), path  # (nonces vary)
        else:
            assert ours["body"] == theirs["body"], path
        for name in (b"content-type", b"etag", b"location"):
            assert ours["headers"].get(name) == theirs["headers"].get(name), (path, name)
        # Only the handler that waits says it did (Django's ignores Prefer, as a WSGI server).
        waited = asked_to_wait and ours["status"] in (200, 304)
        assert ours["headers"].get(b"preference-applied") == (b"wait=1" if waited else None)
        assert b"preference-applied" not in theirs["headers"]


@pytest.mark.django_db(transaction=True)
def test_waiting_requests_hold_no_thread_and_wake_at_a_change(
    api: Driver, instance_id: str, runtime_key: Any
) -> None:
    # Two threads answer requests; twenty wait; a plain read is still answered, and a change
    # answers the twenty.
    handler = asgi.Handler(threads=2)
    url = f"{API}/instances/{instance_id}/"
    tag = api.runtime.get(url)["ETag"].encode()
    waiting = [*_key(runtime_key), (b"if-none-match", tag), (b"prefer", b"wait=30")]

    async def run() -> list[dict[str, Any]]:
        waiters = [ApplicationCommunicator(handler, _scope(url, waiting)) for _ in range(20)]
        for communicator in waiters:
            await communicator.send_input({"type": "http.request", "body": b""})
        while changes.waiting() < 20:
            await asyncio.sleep(0.01)
        plain = ApplicationCommunicator(handler, _scope(url, _key(runtime_key)))
        await plain.send_input({"type": "http.request", "body": b""})
        assert (await _answer(plain, 10))["status"] == 200
        assert changes.waiting() == 20

        def answer() -> None:
            prompt = api.prompt(instance_id, "recipient_account")
            assert api.respond(prompt, "confirm").status_code == 200

        await asyncio.to_thread(answer)
        return [await _answer(communicator, 10) for communicator in waiters]

    answers = asyncio.run(run())
    assert [a["status"] for a in answers] == [200] * 20
    assert all(a["headers"][b"preference-applied"] == b"wait=30" for a in answers)
    assert all(a["headers"][b"etag"] != tag for a in answers)
    assert changes.waiting() == 0
    assert len(handler.threads._threads) <= 2


@pytest.mark.django_db(transaction=True)
def test_a_client_that_goes_away_ends_its_wait(
    api: Driver, instance_id: str, runtime_key: Any
) -> None:
    url = f"{API}/instances/{instance_id}/"
    tag = api.runtime.get(url)["ETag"].encode()
    headers = [*_key(runtime_key), (b"if-none-match", tag), (b"prefer", b"wait=30")]

    async def run() -> None:
        communicator = ApplicationCommunicator(asgi.application, _scope(url, headers))
        await communicator.send_input({"type": "http.request", "body": b""})
        while changes.waiting() < 1:
            await asyncio.sleep(0.01)
        await communicator.send_input({"type": "http.disconnect"})
        await communicator.wait(10)  # the application returns, long before its 30 s
        assert await communicator.receive_nothing()

    asyncio.run(run())
    assert changes.waiting() == 0


@pytest.mark.django_db(transaction=True)
def test_a_wait_whose_client_left_while_it_queued_for_a_thread_is_never_answered(
    api: Driver, instance_id: str, runtime_key: Any
) -> None:
    """When the servers fall behind, the waits queued for a thread include many whose clients
    gave up (and asked again): those are dropped, not answered to nobody."""
    url = f"{API}/instances/{instance_id}/"
    tag = api.runtime.get(url)["ETag"].encode()
    headers = [*_key(runtime_key), (b"if-none-match", tag), (b"prefer", b"wait=30")]
    handler = asgi.Handler(1)
    started: list[str] = []

    def on_start(sender: Any, scope: dict[str, Any] | None = None, **kwargs: Any) -> None:  # noqa: ANN401
        started.append(scope["path"] if scope else "")

    busy = threading.Event()

    async def run() -> None:
        handler.threads.submit(busy.wait, 10)  # the one thread is taken
        communicator = ApplicationCommunicator(handler, _scope(url, headers))
        await communicator.send_input({"type": "http.request", "body": b""})
        await communicator.send_input({"type": "http.disconnect"})
        while not communicator.input_queue.empty():  # the handler heard it go
            await asyncio.sleep(0.01)
        busy.set()
        await communicator.wait(10)
        assert await communicator.receive_nothing()

    signals.request_started.connect(on_start)
    try:
        asyncio.run(run())
    finally:
        signals.request_started.disconnect(on_start)
        busy.set()
        handler.threads.shutdown()
    assert started == []
    assert changes.waiting() == 0

    # The same wait, its client staying, is answered (here at once: the instance changed).
    assert (
        api.runtime.post(
            f"{url}cancel/", {"reason": "test"}, content_type="application/json"
        ).status_code
        == 200
    )
    handler = asgi.Handler(1)
    signals.request_started.connect(on_start)
    try:
        answered = _call(handler, url, headers)
    finally:
        signals.request_started.disconnect(on_start)
        handler.threads.submit(connections.close_all).result(10)  # its thread's connection
        handler.threads.shutdown()
    assert answered["status"] == 200
    assert started == [url]


@pytest.mark.servers  # a Python that loads Django afresh, three times
def test_the_pool_is_postgresqls_and_replaces_kept_connections() -> None:
    script = (
        "from django.conf import settings;"
        "d = settings.DATABASES['default'];"
        "print(d['CONN_MAX_AGE'], d.get('OPTIONS', {}).get('pool'), settings.REQUEST_THREADS)"
    )
    # The request threads are 4 a process whatever the pool (more only take turns with the
    # interpreter lock), unless REQUEST_THREADS says otherwise.
    cases = {
        ("postgres://u@127.0.0.1:5432/x", ""): "0 {'min_size': 2, 'max_size': 5, 'timeout': 10} 4",
        ("sqlite:////tmp/pool-test.sqlite3", ""): "60 None 4",
        ("postgres://u@127.0.0.1:5432/x", "3"): "0 {'min_size': 2, 'max_size': 5, 'timeout': 10} 3",
    }
    for (url, threads), expected in cases.items():
        env = {
            "DJANGO_SETTINGS_MODULE": "console.settings",
            "DEBUG": "true",
            "DATABASE_CONN_MAX_AGE": "60",
            "DATABASE_URL": url,
            "DATABASE_POOL": "5",
            "PATH": "/usr/bin:/bin",
            **({"REQUEST_THREADS": threads} if threads else {}),
        }
        out = subprocess.run(
            [sys.executable, "-c", f"import django; django.setup(); {script}"],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert out.stdout.strip().splitlines()[-1:] == [expected], out.stderr


@pytest.mark.parametrize(
    ("max_size", "threads", "warned"),
    [(None, 4, False), (4, 4, False), (12, 4, False), (3, 4, True), (4, 8, True)],
)
def test_a_pool_smaller_than_the_request_threads_is_warned_of(
    max_size: int | None, threads: int, warned: bool
) -> None:
    pool = None if max_size is None else {"min_size": 2, "max_size": max_size, "timeout": 10}
    problem = pool_problem(pool, threads)
    if not warned:
        assert problem is None
    else:
        assert problem is not None
        assert f"DATABASE_POOL is {max_size}" in problem and f"the {threads} threads" in problem


@pytest.mark.servers  # manage.py check, run twice
def test_manage_py_check_warns_of_a_pool_smaller_than_the_request_threads() -> None:
    def check(pool: str) -> subprocess.CompletedProcess[str]:
        env = {
            "DJANGO_SETTINGS_MODULE": "console.settings",
            "DEBUG": "true",
            "DATABASE_URL": "postgres://u@127.0.0.1:5432/x",
            "DATABASE_POOL": pool,
            "PATH": "/usr/bin:/bin",
        }
        return subprocess.run(
            [sys.executable, "manage.py", "check"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )

    small, enough = check("2"), check("4")
    assert small.returncode == 0 and "console.W001" in small.stderr, small.stderr
    assert "DATABASE_POOL is 2" in small.stderr
    assert enough.returncode == 0 and "console.W001" not in enough.stderr + enough.stdout


def _files_open(pid: int) -> set[str]:
    """The files the process and its children have open."""
    found, pids = set(), [pid]
    while pids:
        current = pids.pop()
        pids += children(current)
        for fd in Path(f"/proc/{current}/fd").glob("*"):
            with contextlib.suppress(OSError):
                found.add(os.readlink(fd))
    return found


@pytest.mark.servers
@pytest.mark.django_db(transaction=True)
def test_make_serve_keeps_its_sqlite_connections_between_requests() -> None:
    """On SQLite, opening a connection (and reading the schema into it) cost more than the
    authenticated read itself: `make serve`, run as the Makefile runs it, keeps a connection on
    each of its request threads, still open once the requests are answered."""
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's kept connections; PostgreSQL's pool has its own test above")
    database = str(Path(connection.settings_dict["NAME"]).resolve())
    port = free_port()
    # The recipe alone (`-n`: printed, not run), with this test's own virtualenv taken as
    # installed (`-o`), so that nothing but the server is run.
    recipe = subprocess.run(
        ["make", "-s", "-n", f"VENV={sys.prefix}", "-o", f"{sys.prefix}/.installed", "serve",
         f"PORT={port}", "WEB_CONCURRENCY=1"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "console.serve" in recipe and "pip" not in recipe, recipe
    env = production_env()  # on the test database
    with static_files_collected(env):
        server = subprocess.Popen(
            ["bash", "-c", recipe], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            base = f"http://127.0.0.1:{port}"
            wait_until_up(base)
            for _ in range(3):  # each reads the database (`database_answers`)
                assert requests.get(f"{base}/healthz", timeout=10).status_code == 200
            assert database in _files_open(server.pid)
        finally:
            server.terminate()
            _, errors = server.communicate(timeout=30)
    assert b"Traceback" not in errors, errors.decode()[-3000:]


def test_it_answers_the_servers_start_and_end() -> None:
    async def run() -> list[str]:
        communicator = ApplicationCommunicator(asgi.Handler(threads=1), {"type": "lifespan"})
        said = []
        for event in ("startup", "shutdown"):
            await communicator.send_input({"type": f"lifespan.{event}"})
            said.append((await communicator.receive_output(10))["type"])
        await communicator.wait(10)  # it returned after the shutdown
        return said

    assert asyncio.run(run()) == ["lifespan.startup.complete", "lifespan.shutdown.complete"]


def _reachable(root: object, depth: int) -> list[object]:
    """What `root` references, and what those reference, `depth` levels down (modules, types
    and functions not followed: they reach everything)."""
    seen, found, level = {id(root)}, [], [root]
    for _ in range(depth):
        following = []
        for item in level:
            for referent in gc.get_referents(item):
                if id(referent) in seen or isinstance(referent, type | type(os) | type(_scope)):
                    continue
                seen.add(id(referent))
                found.append(referent)
                following.append(referent)
        level = following
    return found


@pytest.mark.django_db(transaction=True)
def test_a_waiting_request_holds_its_answer_but_not_its_request(
    api: Driver, instance_id: str, runtime_key: Any
) -> None:
    url = f"{API}/instances/{instance_id}/"
    tag = api.runtime.get(url)["ETag"]
    scope = _scope(
        url, [*_key(runtime_key), (b"if-none-match", tag.encode()), (b"prefer", b"wait=30")]
    )
    scope[changes.SERVER_WAITS] = True  # as the handler's wait marks it
    held = asgi.Handler(threads=1)._answer_here(scope, io.BytesIO(b""))
    wait = changes.unchanged(held)
    assert wait is not None and wait.seconds == 30
    assert type(held) is HttpResponse
    assert (held.status_code, held["ETag"], held["Preference-Applied"]) == (304, tag, "wait=30")
    assert held.content == b""
    # Neither the request nor the view that answered it is kept while the request waits.
    kept = _reachable(held, 6)
    assert not [o for o in kept if isinstance(o, HttpRequest | APIView)]
