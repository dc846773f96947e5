"""A database out of reach (a restart, a cut connection, `pg_terminate_backend`) answers 503
with Retry-After, never a 500: the API with its JSON error, a page with the styled error page,
whether the error surfaces in a view or in the session read before one. The real thing, on
PostgreSQL through gunicorn, is tests/servers/test_connection_loss_http.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.contrib.sessions.backends.db import SessionStore
from django.db import InterfaceError, OperationalError
from django.test import Client

from beliefs import selectors
from beliefs.models import Prompt
from beliefs.services import responses, retry
from tests.conftest import JsonClient
from tests.support.api import API, Driver

pytestmark = pytest.mark.django_db

# What psycopg says, as Django raises it.
LOST: list[Callable[[], Exception]] = [
    lambda: OperationalError("terminating connection due to administrator command"),
    lambda: OperationalError("server closed the connection unexpectedly"),
    lambda: InterfaceError("connection already closed"),
]


def _failing(make: Callable[[], Exception]) -> Callable[..., Any]:
    def fail(*args: Any, **kwargs: Any) -> Any:
        raise make()

    return fail


def _is_unavailable_json(response: Any) -> None:
    assert response.status_code == 503, response.content
    assert response["Retry-After"] == "2"
    body = response.json()
    assert body["error"] == "database_unavailable"
    assert "Try again in a moment" in body["detail"]
    assert body["fields"] == {}


def _is_unavailable_page(response: Any) -> None:
    assert response.status_code == 503, response.content
    assert response["Retry-After"] == "2"
    assert response["Content-Type"].startswith("text/html")
    html = response.content.decode()
    assert "<h1>Try again in a moment</h1>" in html
    assert "could not be reached" in html
    assert 'href="/static/console/console.css"' in html or "console.css" in html  # styled


@pytest.mark.parametrize("make", LOST)
def test_an_api_read_answers_503_json(
    api: Driver, instance_id: str, monkeypatch: pytest.MonkeyPatch, make: Callable[[], Exception]
) -> None:
    monkeypatch.setattr(selectors, "instance_read", _failing(make))
    _is_unavailable_json(api.runtime.get(f"{API}/instances/{instance_id}/"))


def test_the_runtime_key_check_answers_503_json(
    api: Driver, instance_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from beliefs.api import auth

    monkeypatch.setattr(auth, "usable_runtime_key", _failing(LOST[0]))
    _is_unavailable_json(api.runtime.get(f"{API}/instances/{instance_id}/"))


@pytest.mark.parametrize("make", LOST)
def test_an_api_answer_answers_503_json_and_records_nothing(
    api: Driver, instance_id: str, monkeypatch: pytest.MonkeyPatch, make: Callable[[], Exception]
) -> None:
    monkeypatch.setattr(responses, "_respond", _failing(make))
    prompt = Prompt.objects.get(instance_id=instance_id, slot__key="recipient_account")
    answered = api.person.post_json(
        f"{API}/prompts/{prompt.pk}/respond/", {"action": "confirm", "version": prompt.version}
    )
    _is_unavailable_json(answered)
    assert not prompt.responses.exists()


def test_an_api_write_of_a_runtime_answers_503_json(
    api: Driver, transfer: str, alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    from beliefs.api import views

    # Where the API's view finds the service.
    monkeypatch.setattr(views, "instance_open", _failing(LOST[0]))
    opened = api.runtime.post_json(f"{API}/instances/", {"task_class": transfer, "principal": "x"})
    _is_unavailable_json(opened)


@pytest.mark.parametrize("make", LOST)
def test_a_page_answers_503_with_the_error_page(
    instance_id: str,
    alice: User,
    signed_in: Callable[[User], Client],
    monkeypatch: pytest.MonkeyPatch,
    make: Callable[[], Exception],
) -> None:
    monkeypatch.setattr(selectors, "instance_page", _failing(make))
    _is_unavailable_page(signed_in(alice).get(f"/instances/{instance_id}/"))


def test_a_page_answer_posted_answers_503(
    instance_id: str,
    alice: User,
    signed_in: Callable[[User], Client],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(responses, "_respond", _failing(LOST[0]))
    prompt = Prompt.objects.get(instance_id=instance_id, slot__key="recipient_account")
    posted = signed_in(alice).post(
        f"/instances/{instance_id}/prompts/{prompt.pk}/respond/",
        {"action": "confirm", "version": prompt.version},
    )
    _is_unavailable_page(posted)
    assert not prompt.responses.exists()


@pytest.mark.parametrize("make", LOST)
def test_the_session_read_before_the_view_answers_503_too(
    alice: User, monkeypatch: pytest.MonkeyPatch, make: Callable[[], Exception]
) -> None:
    browser = Client(raise_request_exception=False)  # as a server would: no test re-raise
    browser.force_login(alice)
    monkeypatch.setattr(SessionStore, "_get_session_from_db", _failing(make))
    _is_unavailable_page(browser.get("/"))


def test_the_session_read_of_an_api_call_answers_503_json(
    instance_id: str, alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    person = JsonClient(raise_request_exception=False)  # the sign-in check reads it first
    person.force_login(alice)
    monkeypatch.setattr(SessionStore, "_get_session_from_db", _failing(LOST[1]))
    _is_unavailable_json(person.get(f"{API}/instances/{instance_id}/"))


def test_healthz_answers_503_json(monkeypatch: pytest.MonkeyPatch) -> None:
    from django.db.backends.utils import CursorWrapper

    monkeypatch.setattr(CursorWrapper, "execute", _failing(LOST[1]))
    _is_unavailable_json(Client().get("/healthz"))


def test_any_other_error_is_still_a_500(
    instance_id: str,
    alice: User,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    browser = Client(raise_request_exception=False)
    browser.force_login(alice)
    monkeypatch.setattr(selectors, "instance_page", _failing(lambda: RuntimeError("bug")))
    page = browser.get(f"/instances/{instance_id}/")
    assert page.status_code == 500
    assert "Retry-After" not in page


def test_a_race_the_retries_lost_is_still_busy_with_retry_after_1(
    api: Driver, instance_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    class SerializationFailure(Exception):
        sqlstate = "40001"

    def race(*args: Any, **kwargs: Any) -> None:
        try:
            raise SerializationFailure
        except SerializationFailure as cause:
            raise OperationalError("could not serialize access") from cause

    monkeypatch.setattr(selectors, "instance_read", race)
    read = api.runtime.get(f"{API}/instances/{instance_id}/")
    assert (read.status_code, read.json()["error"], read["Retry-After"]) == (503, "busy", "1")


# --- the dead connection is closed, so the process's next request reconnects -----------------


class FakeConnection:
    def __init__(self, in_atomic_block: bool) -> None:
        self.in_atomic_block = in_atomic_block
        self.checked = False

    def close_if_unusable_or_obsolete(self) -> None:
        self.checked = True


class FakeConnections:
    def __init__(self, *conns: FakeConnection) -> None:
        self.conns = conns

    def all(self, initialized_only: bool = False) -> tuple[FakeConnection, ...]:
        assert initialized_only  # a connection never opened needs no closing
        return self.conns


def test_it_closes_dead_connections_outside_a_transaction_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    free, in_transaction = FakeConnection(False), FakeConnection(True)
    monkeypatch.setattr(retry, "connections", FakeConnections(free, in_transaction))
    assert retry.as_unavailable(LOST[0]()) is not None
    assert free.checked and not in_transaction.checked


def test_it_tells_the_databases_trouble_from_any_other() -> None:
    assert all(retry.is_unavailable(make()) for make in LOST)
    try:
        try:
            raise LOST[1]()
        except OperationalError as lost:
            raise ValueError("while handling it") from lost
    except ValueError as raised:
        assert retry.is_unavailable(raised)
    assert not retry.is_unavailable(ValueError("no database here"))
