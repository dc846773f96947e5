"""`console.asgi`: requests that may wait go to Django's async handler, every other request to
the one-hop handler; either answers any request alike (the choice decides only its cost)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import Any

import pytest
from asgiref.testing import ApplicationCommunicator

from console import asgi
from tests.api.conftest import API

ID = "0b8f0a3e-4c1d-4f57-9a35-2f4f4b0c2d11"


@pytest.mark.parametrize(
    ("path", "prefer", "expected"),
    [
        (f"/instances/{ID}/live/", None, True),
        (f"/instances/{ID}/live/", b"wait=5", True),
        ("/inbox/rows/", None, True),
        (f"/api/v1/instances/{ID}/", b"wait=25", True),
        (f"/api/v1/instances/{ID}/", b"respond-async, WAIT=3", True),
        (f"/api/v1/instances/{ID}/", None, False),
        (f"/api/v1/instances/{ID}/", b"handling=lenient", False),
        (f"/api/v1/instances/{ID}/plan/", b"wait=25", False),
        (f"/instances/{ID}/", None, False),
        (f"/instances/{ID}/live/extra/", None, False),
        ("/healthz", b"wait=5", False),
        ("/inbox/", None, False),
    ],
)
def test_which_requests_go_to_the_waiting_handler(
    path: str, prefer: bytes | None, expected: bool
) -> None:
    headers = [(b"host", b"testserver")] + ([(b"prefer", prefer)] if prefer else [])
    assert asgi.waits({"type": "http", "path": path, "headers": headers}) is expected


def test_the_one_hop_handler_enters_its_middleware_chain_once() -> None:
    # The chain was built synchronous (no middleware adapted to async inside it) and is entered
    # through one crossing to the request's thread.
    from asgiref.sync import SyncToAsync

    chain = asgi.one_hop_handler._middleware_chain
    assert isinstance(chain, SyncToAsync)
    assert not asyncio.iscoroutinefunction(chain.func)
    assert asyncio.iscoroutinefunction(asgi.waiting_handler._middleware_chain)


def _call(
    app: Any, path: str, headers: list[tuple[bytes, bytes]]
) -> tuple[int, dict[bytes, bytes]]:  # noqa: ANN401
    scope = {
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

    async def run() -> tuple[int, dict[bytes, bytes]]:
        communicator = ApplicationCommunicator(app, scope)
        await communicator.send_input({"type": "http.request", "body": b""})
        start = await communicator.receive_output(30)
        await communicator.receive_output(30)  # the body
        await communicator.wait(30)
        return start["status"], dict(start["headers"])

    return asyncio.run(run())


@pytest.mark.django_db(transaction=True)
def test_both_handlers_answer_alike(api: Any, instance_id: str, runtime_key: Any) -> None:  # noqa: ANN401
    key = [(b"authorization", f"Api-Key {runtime_key[1]}".encode())]
    url = f"{API}/instances/{instance_id}/"
    tag = api.runtime.get(url)["ETag"].encode()
    requests = [
        ("/healthz", []),
        (url, key),
        (url, [*key, (b"if-none-match", tag)]),
        (url, [*key, (b"if-none-match", tag), (b"prefer", b"wait=1")]),
        (url, []),  # no key: refused alike
        ("/inbox/", []),  # signed out: sent to sign in alike
    ]
    for path, headers in requests:
        answers = [_call(handler, path, headers) for handler in asgi.handlers()]
        (one_hop_status, one_hop), (waiting_status, waiting) = answers
        assert one_hop_status == waiting_status, path
        for name in (b"content-type", b"etag", b"preference-applied", b"location"):
            assert one_hop.get(name) == waiting.get(name), (path, name)


def test_the_pool_is_postgresqls_and_replaces_kept_connections() -> None:
    script = (
        "from django.conf import settings;"
        "d = settings.DATABASES['default'];"
        "print(d['CONN_MAX_AGE'], d.get('OPTIONS', {}).get('pool'))"
    )
    cases = {
        "postgres://u@127.0.0.1:5432/x": "0 {'min_size': 2, 'max_size': 5, 'timeout': 10}",
        "sqlite:////tmp/pool-test.sqlite3": "60 None",
    }
    for url, expected in cases.items():
        env = {
            "DJANGO_SETTINGS_MODULE": "console.settings",
            "DEBUG": "true",
            "DATABASE_CONN_MAX_AGE": "60",
            "DATABASE_URL": url,
            "DATABASE_POOL": "5",
            "PATH": "/usr/bin:/bin",
        }
        out = subprocess.run(
            [sys.executable, "-c", f"import django; django.setup(); {script}"],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert out.stdout.strip().splitlines()[-1:] == [expected], out.stderr
