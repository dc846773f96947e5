"""The long-poll under uvicorn, across server processes: a runtime waiting on one process is
woken by a change made through another, by PostgreSQL's NOTIFY (under ASGI on PostgreSQL no
waiter polls, so only the notification can end its wait early).

Two real uvicorn processes, on ports of their own, both serving the test database.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests
from django.conf import settings
from django.db import connection
from rest_framework_api_key.models import APIKey

from beliefs.services.audit import Actor
from tests.builders import classify, register_task_class
from tests.support.servers import long_poll, uvicorn_servers

pytestmark = [
    pytest.mark.servers,
    pytest.mark.postgres,
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="needs PostgreSQL: its NOTIFY is what reaches another server process",
    ),
    pytest.mark.django_db(transaction=True),
]


def _until(condition: Callable[[], bool], seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@pytest.fixture
def servers(db: None) -> Iterator[list[str]]:
    """Two uvicorn processes (one event loop each) on the test database."""
    with uvicorn_servers(2, LOG_LEVEL="WARNING") as bases:
        yield bases


@pytest.fixture
def opened(
    servers: list[str], runtime_key: tuple[APIKey, str], alice: Any
) -> tuple[str, dict[str, str]]:
    """A planned instance, opened through the first server: its URL and the runtime's headers."""
    task_class = register_task_class(
        key="payments.transfer",
        slots=[{"key": "recipient_account"}],
        decisions=[{"key": "send", "slots": ["recipient_account"]}],
        actor=Actor(key=runtime_key[0]),
    )
    classify(task_class, decisions={"send": "irreversible"})
    headers = {"Authorization": f"Api-Key {runtime_key[1]}"}
    response = requests.post(
        f"{servers[0]}/api/v1/instances/",
        json={
            "task_class": "payments.transfer",
            "principal": "alice",
            "beliefs": [{"slot": "recipient_account", "value": "DE89", "source": "tool"}],
        },
        headers=headers,
        timeout=30,
    )
    assert response.status_code == 201, response.text
    path = f"/api/v1/instances/{response.json()['id']}/"
    assert requests.post(f"{servers[0]}{path}plan/", headers=headers, timeout=30).ok
    return path, headers


def test_a_waiter_on_one_process_wakes_at_a_change_through_another(
    servers: list[str], opened: tuple[str, dict[str, str]]
) -> None:
    path, headers = opened
    waiting_on, changing_on = servers
    tag = requests.get(f"{waiting_on}{path}", headers=headers, timeout=30).headers["ETag"]
    # A first, short long-poll: the process's LISTEN connection is up before the real wait.
    warm = requests.get(
        f"{waiting_on}{path}",
        headers={**headers, "If-None-Match": tag, "Prefer": "wait=1"},
        timeout=30,
    )
    assert warm.status_code == 304 and warm.headers["Preference-Applied"] == "wait=1"

    started = time.monotonic()
    waiter, answers = long_poll(f"{waiting_on}{path}", headers, tag)
    try:
        # The waiter's process has taken its request in: a later request to it was answered.
        assert requests.get(f"{waiting_on}/healthz", timeout=30).status_code == 200
        assert not answers, "answered before anything changed"
        cancelled = requests.post(
            f"{changing_on}{path}cancel/", json={}, headers=headers, timeout=30
        )
        assert cancelled.status_code == 200, cancelled.text
        changed_at = time.monotonic()
        _until(lambda: bool(answers))
    finally:
        waiter.join(60)
    ((response, answered_at),) = answers
    assert response.status_code == 200
    assert response.json()["status"] == "cancelled"
    assert response.headers["Preference-Applied"] == "wait=30"
    assert response.headers["ETag"] != tag
    assert answered_at - changed_at < 1.0
    assert answered_at - started < 25.0  # woken, not timed out


def test_pages_and_the_api_answer_as_ever_under_uvicorn(
    servers: list[str], opened: tuple[str, dict[str, str]]
) -> None:
    path, headers = opened
    base = servers[0]
    page = requests.get(f"{base}/accounts/login/", timeout=30)
    assert page.status_code == 200 and "text/html" in page.headers["Content-Type"]
    assert "no-store" in page.headers["Cache-Control"]
    assert "Content-Security-Policy" in page.headers
    assert requests.get(f"{base}/", timeout=30, allow_redirects=False).status_code == 302
    plain = requests.get(f"{base}{path}", headers=headers, timeout=30)
    assert plain.status_code == 200 and "Preference-Applied" not in plain.headers
    same = requests.get(
        f"{base}{path}", headers={**headers, "If-None-Match": plain.headers["ETag"]}
    )
    assert same.status_code == 304
    stranger = requests.get(f"{base}{path}", headers={"Authorization": "Api-Key nope"}, timeout=30)
    assert stranger.status_code in (401, 403) and stranger.json()["error"]
    too_large = requests.post(
        f"{base}/api/v1/instances/", data=b"x" * (settings.API_MAX_BODY_BYTES + 1), headers=headers
    )
    assert too_large.status_code == 413 and too_large.json()["error"] == "too_large"
