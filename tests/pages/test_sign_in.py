"""Signing in and out, the lockout after repeated failures, and the header."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db


def test_it_shows_a_labelled_sign_in_form(db: None) -> None:
    html = Client().get("/accounts/login/").content.decode()
    assert '<label for="id_username">Username</label>' in html
    assert '<label for="id_password">Password</label>' in html
    assert 'autocomplete="current-password"' in html
    assert '<button type="submit" class="primary">Sign in</button>' in html


def test_it_signs_in_and_lands_on_the_inbox(alice: User) -> None:
    client = Client()
    response = client.post("/accounts/login/", {"username": "alice", "password": PASSWORD})
    assert response.status_code == 302 and response["Location"] == "/start/"
    response = client.get("/start/")
    assert response.status_code == 302 and response["Location"] == "/"
    html = client.get("/").content.decode()
    assert "Signed in as <strong>alice</strong>" in html
    assert "(end user)" in html


def test_it_returns_to_the_page_asked_for(alice: User) -> None:
    client = Client()
    response = client.post(
        "/accounts/login/?next=/inbox/rows/",
        {"username": "alice", "password": PASSWORD, "next": "/inbox/rows/"},
    )
    assert response["Location"] == "/inbox/rows/"


def test_it_says_when_the_password_is_wrong(alice: User) -> None:
    response = Client().post("/accounts/login/", {"username": "alice", "password": "nope"})
    html = response.content.decode()
    assert response.status_code == 200
    assert 'role="alert"' in html and "correct username and password" in html
    assert 'value="alice"' in html


def test_it_locks_the_account_after_repeated_failures(alice: User, settings) -> None:  # noqa: ANN001
    client = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT):
        client.post("/accounts/login/", {"username": "alice", "password": "wrong"})
    locked = client.post("/accounts/login/", {"username": "alice", "password": PASSWORD})
    html = locked.content.decode()
    assert locked.status_code == 429
    assert "Account locked" in html and "for 15 minutes" in html
    assert "_auth_user_id" not in client.session


def test_it_shows_the_roles_of_a_classifier_and_reviewer(carol: User, rita: User) -> None:
    client = Client()
    client.force_login(carol)
    html = client.get("/").content.decode()
    assert "(end user, classifier)" in html
    assert 'href="/classify/"' in html and 'href="/activity/"' in html
    assert 'href="/insights/"' in html


def test_it_signs_out_with_a_post(alice: User) -> None:
    client = Client()
    client.force_login(alice)
    html = client.get("/").content.decode()
    assert '<form method="post" action="/accounts/logout/"' in html
    response = client.post("/accounts/logout/")
    assert response.status_code == 302 and response["Location"] == "/accounts/login/"
    assert client.get("/").status_code == 302


def _fail(client: Client, username: str, times: int, **address: str) -> None:
    for _ in range(times):
        client.post("/accounts/login/", {"username": username, "password": "wrong"}, **address)


def _signs_in(username: str, **address: str) -> bool:
    client = Client()
    response = client.post(
        "/accounts/login/", {"username": username, "password": PASSWORD}, **address
    )
    return response.status_code == 302 and "_auth_user_id" in client.session


def test_it_locks_one_account_from_one_address_only(
    alice: User,
    mallory: User,
    settings,  # noqa: ANN001
) -> None:
    here = {"REMOTE_ADDR": "192.0.2.10"}
    _fail(Client(), "alice", settings.AXES_FAILURE_LIMIT, **here)

    assert not _signs_in("alice", **here)
    assert _signs_in("mallory", **here)  # someone else behind the same address
    assert _signs_in("alice", REMOTE_ADDR="198.51.100.7")  # alice herself, elsewhere


def test_it_takes_the_client_address_through_the_trusted_proxies_only(
    alice: User,
    mallory: User,
    settings,  # noqa: ANN001
) -> None:
    settings.CONSOLE_TRUSTED_PROXIES = 1
    proxy = "10.0.0.2"  # every request arrives from the one reverse proxy

    def via_proxy(client_address: str, spoofed: str = "") -> dict[str, str]:
        chain = f"{spoofed}, {client_address}" if spoofed else client_address
        return {"REMOTE_ADDR": proxy, "HTTP_X_FORWARDED_FOR": chain}

    _fail(Client(), "alice", settings.AXES_FAILURE_LIMIT, **via_proxy("203.0.113.5"))

    assert not _signs_in("alice", **via_proxy("203.0.113.5"))
    # What the client wrote further left is not its address: no way around the lockout.
    assert not _signs_in("alice", **via_proxy("203.0.113.5", spoofed="198.51.100.99"))
    # Another client behind the same proxy is another address: alice may sign in from there.
    assert _signs_in("alice", **via_proxy("203.0.113.77"))
    assert _signs_in("mallory", **via_proxy("203.0.113.5"))
