"""GET /instances/{id}/ with `Prefer: wait=N`: the answer comes when the instance changes.

Through the live server (uvicorn and `console.asgi` in the test process, the handler that waits
in production), on SQLite and PostgreSQL. The same view across two server processes is
`test_longpoll_servers.py`.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import transaction

from beliefs.api.longpoll import preferred_wait
from beliefs.models import TaskInstance
from beliefs.services import changes
from beliefs.services.lifecycle import lock_instance
from console import asgi
from tests.conftest import runtime_key_of
from tests.support.api import API, Driver
from tests.support.live_server import Served


def _until(condition: Callable[[], bool], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("wait=25", 25),
        ("WAIT = 7", 7),
        ('wait="3"', 3),
        ("respond-async, wait=10", 10),
        ("wait=5; foo=bar", 5),
        ("wait=0", 0),
        ("wait=60", 60),
        ("wait=61", 60),
        ("wait=999999999", 60),
        (None, None),
        ("", None),
        ("wait", None),
        ("wait=", None),
        ("wait=-1", None),
        ("wait=1.5", None),
        ("wait=abc", None),
        ("wait=9999999999", None),
        ("handling=lenient", None),
        ("waiting=5", None),
    ],
)
def test_the_wait_it_reads_from_prefer(header: str | None, seconds: int | None) -> None:
    assert preferred_wait(header) == seconds


@pytest.mark.django_db
def test_without_prefer_it_is_the_plain_read(api: Driver, instance_id: str) -> None:
    url = f"{API}/instances/{instance_id}/"
    first = api.runtime.get(url)
    assert first.status_code == 200 and "Preference-Applied" not in first
    again = api.runtime.get(url, HTTP_IF_NONE_MATCH=first["ETag"])
    assert again.status_code == 304 and "Preference-Applied" not in again


@pytest.mark.django_db
def test_a_server_that_does_not_wait_ignores_prefer(api: Driver, instance_id: str) -> None:
    # Django's test client repeats no answer, as a WSGI server would not: the answer is the plain
    # read, without a Preference-Applied that would keep a client asking again at once.
    url = f"{API}/instances/{instance_id}/"
    tag = api.runtime.get(url)["ETag"]
    started = time.monotonic()
    response = api.runtime.get(url, HTTP_IF_NONE_MATCH=tag, HTTP_PREFER="wait=30")
    assert time.monotonic() - started < 10.0
    assert response.status_code == 304 and "Preference-Applied" not in response


def test_with_nothing_changed_it_answers_304_after_the_wait(
    api: Driver, instance_id: str, served: Callable[..., Served], runtime_key: Any
) -> None:
    url = f"{API}/instances/{instance_id}/"
    tag = api.runtime.get(url)["ETag"]
    started = time.monotonic()
    response = served(key=runtime_key[1]).get(url, HTTP_IF_NONE_MATCH=tag, HTTP_PREFER="wait=1")
    took = time.monotonic() - started
    assert response.status_code == 304
    assert response.content == b""
    assert response["ETag"] == tag
    assert response["Preference-Applied"] == "wait=1"
    assert 1.0 <= took < 10.0
    assert changes.waiting() == 0


def test_a_changed_instance_answers_at_once_with_the_wait_capped_at_60(
    instance_id: str, served: Callable[..., Served], runtime_key: Any
) -> None:
    url = f"{API}/instances/{instance_id}/"
    runtime = served(key=runtime_key[1])
    started = time.monotonic()
    response = runtime.get(url, HTTP_IF_NONE_MATCH='"stale"', HTTP_PREFER="wait=600")
    assert time.monotonic() - started < 10.0  # not 60 s
    assert response.status_code == 200
    assert response.json()["id"] == instance_id
    assert response["Preference-Applied"] == "wait=60"


@pytest.mark.parametrize("prefer", ["wait=abc", "wait=-1", "wait=1.5", "respond-async"])
def test_an_invalid_prefer_is_ignored(
    api: Driver, instance_id: str, prefer: str, served: Callable[..., Served], runtime_key: Any
) -> None:
    url = f"{API}/instances/{instance_id}/"
    tag = api.runtime.get(url)["ETag"]
    started = time.monotonic()
    response = served(key=runtime_key[1]).get(url, HTTP_IF_NONE_MATCH=tag, HTTP_PREFER=prefer)
    assert time.monotonic() - started < 10.0  # it did not wait
    assert response.status_code == 304
    assert "Preference-Applied" not in response


def test_another_runtime_and_a_stranger_get_404_at_once(
    api: Driver, instance_id: str, served: Callable[..., Served], mallory: User
) -> None:
    url = f"{API}/instances/{instance_id}/"
    tag = api.runtime.get(url)["ETag"]
    other = served(key=runtime_key_of("other-runtime")[1])
    for client, status in ((other, 404), (served(mallory), 404), (served(), 401)):
        started = time.monotonic()
        response = client.get(url, HTTP_IF_NONE_MATCH=tag, HTTP_PREFER="wait=30")
        assert time.monotonic() - started < 10.0
        assert response.status_code == status, response.content
        assert "Preference-Applied" not in response
        assert response.json()["error"]


def test_a_change_wakes_the_waiter_within_a_fraction_of_a_second(
    api: Driver,
    instance_id: str,
    runtime_key: Any,
    served: Callable[..., Served],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # No polling: only the change's notification can end the wait before its 30 s.
    monkeypatch.setattr(asgi, "POLL_SECONDS", 30.0)
    url = f"{API}/instances/{instance_id}/"
    tag = api.runtime.get(url)["ETag"]
    answers: list[Any] = []
    client = served(key=runtime_key[1])

    def wait() -> None:
        answers.append(client.get(url, HTTP_IF_NONE_MATCH=tag, HTTP_PREFER="wait=30"))

    waiter = threading.Thread(target=wait)
    waiter.start()
    try:
        _until(lambda: changes.waiting() == 1)
        prompt = api.prompt(instance_id, "recipient_account")
        assert api.respond(prompt, "confirm").status_code == 200
        changed_at = time.monotonic()
        _until(lambda: bool(answers), 30.0)
        woke_after = time.monotonic() - changed_at
    finally:
        waiter.join(60)
    (response,) = answers
    assert response.status_code == 200
    (answered,) = [p for p in response.json()["prompts"] if p["id"] == prompt["id"]]
    assert answered["state"] != "open"
    assert response["ETag"] != tag
    assert response["Preference-Applied"] == "wait=30"
    assert woke_after < 1.0


class _Boom(Exception):
    pass


@pytest.mark.django_db
def test_a_change_is_announced_on_commit_and_a_rolled_back_one_never(
    api: Driver, instance_id: str, django_capture_on_commit_callbacks: Any
) -> None:
    instance = TaskInstance.objects.get(pk=instance_id)
    with django_capture_on_commit_callbacks() as announced, transaction.atomic():
        lock_instance(instance)
    assert len(announced) == 1
    with (
        django_capture_on_commit_callbacks() as announced,
        pytest.raises(_Boom),
        transaction.atomic(),
    ):
        lock_instance(instance)
        raise _Boom
    assert announced == []


def test_a_wake_from_another_thread_resolves_only_that_instances_waiters() -> None:
    async def scenario() -> tuple[bool, bool]:
        mine, other = changes.watch("mine"), changes.watch("other")
        try:
            threading.Thread(target=changes.wake, args=("mine",)).start()
            await asyncio.wait_for(mine, 10)
            await asyncio.sleep(0)
            return mine.done(), other.done()
        finally:
            changes.unwatch("mine", mine)
            changes.unwatch("other", other)

    assert asyncio.run(scenario()) == (True, False)
    assert changes.waiting() == 0


def test_end_waits_answers_a_wait_begun_before_it_and_not_one_begun_after(
    api: Driver,
    instance_id: str,
    runtime_key: Any,
    served: Callable[..., Served],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(asgi, "POLL_SECONDS", 30.0)
    url = f"{API}/instances/{instance_id}/"
    tag = api.runtime.get(url)["ETag"]
    answers: list[tuple[float, Any]] = []
    client = served(key=runtime_key[1])

    def wait() -> None:
        started = time.monotonic()
        response = client.get(url, HTTP_IF_NONE_MATCH=tag, HTTP_PREFER="wait=30")
        answers.append((time.monotonic() - started, response))

    first = threading.Thread(target=wait)
    first.start()
    try:
        _until(lambda: changes.waiting() == 1)
        changes.end_waits()
        _until(lambda: bool(answers), 30.0)
    finally:
        first.join(60)
    ((took, response),) = answers
    assert response.status_code == 304 and took < 10.0
    # A wait begun afterwards is a wait like any other: it ends at its time, not at once.
    started = time.monotonic()
    late = client.get(url, HTTP_IF_NONE_MATCH=tag, HTTP_PREFER="wait=1")
    assert late.status_code == 304 and time.monotonic() - started >= 1.0
