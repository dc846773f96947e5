"""Passkeys on the account page, and signing in with one."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from beliefs.domain.vocabulary import AuditKind
from beliefs.models import AuditEvent, Passkey, SignatureAttempt
from tests.support.api import Driver
from tests.support.authenticator import SoftAuthenticator
from tests.support.passkeys import (
    confirm_recipient,
    open_transfer,
    post_json,
    register_passkey,
)


def test_a_person_registers_named_passkeys_and_sees_them(
    alice: User, alice_pages: Client, device: SoftAuthenticator
) -> None:
    assert register_passkey(alice_pages, device, "work laptop").status_code == 201
    assert register_passkey(alice_pages, SoftAuthenticator(), "phone").status_code == 201
    page = alice_pages.get("/account/").content.decode()
    assert "work laptop" in page and "phone" in page and "never" in page
    assert Passkey.objects.filter(user=alice).count() == 2
    assert AuditEvent.objects.filter(kind=AuditKind.PASSKEY_REGISTERED).count() == 2


def test_registration_requires_user_verification(alice_pages: Client) -> None:
    refused = register_passkey(alice_pages, SoftAuthenticator(user_verified=False))
    assert refused.status_code == 400
    assert refused.json()["error"] == "passkey_invalid"
    assert not Passkey.objects.exists()


def test_registration_needs_a_name_and_its_own_challenge(
    alice_pages: Client, device: SoftAuthenticator
) -> None:
    assert register_passkey(alice_pages, device, " ").status_code == 400
    # The challenge is used once: the same answer again has none to answer.
    options = post_json(alice_pages, "/account/passkeys/options/").json()["options"]
    credential = device.create(options)
    body = {"name": "laptop", "credential": credential}
    assert post_json(alice_pages, "/account/passkeys/", body).status_code == 201
    again = post_json(alice_pages, "/account/passkeys/", body)
    assert again.status_code == 400 and again.json()["error"] == "no_challenge"


def test_a_passkey_is_removed_only_by_its_owner(
    alice_pages: Client, device: SoftAuthenticator, mallory: User, signed_in: Any
) -> None:
    register_passkey(alice_pages, device)
    passkey = Passkey.objects.get()
    assert signed_in(mallory).post(f"/account/passkeys/{passkey.pk}/remove/").status_code == 404
    assert alice_pages.post(f"/account/passkeys/{passkey.pk}/remove/").status_code == 302
    alice_pages.get("/account/")  # (the messages of the add and the removal shown)
    assert "data-passkey=" not in alice_pages.get("/account/").content.decode()


def _sign_in(client: Client, device: SoftAuthenticator) -> Any:
    options = post_json(client, "/accounts/login/passkey/options/").json()["options"]
    assert options["userVerification"] == "required"
    return post_json(client, "/accounts/login/passkey/", {"credential": device.get(options)})


def test_a_person_signs_in_with_a_passkey(
    alice: User, alice_pages: Client, device: SoftAuthenticator
) -> None:
    register_passkey(alice_pages, device)
    fresh = Client()
    assert fresh.get("/").status_code == 302  # signed out
    signed = _sign_in(fresh, device)
    assert signed.status_code == 200, signed.json()
    assert fresh.get("/").status_code == 200
    assert AuditEvent.objects.filter(kind=AuditKind.PASSKEY_SIGNED_IN).count() == 1
    assert Passkey.objects.get().last_used_at is not None


def test_a_removed_or_unknown_passkey_does_not_sign_in(
    alice_pages: Client, device: SoftAuthenticator
) -> None:
    assert _sign_in(Client(), SoftAuthenticator()).status_code == 400
    register_passkey(alice_pages, device)
    alice_pages.post(f"/account/passkeys/{Passkey.objects.get().pk}/remove/")
    fresh = Client()
    assert _sign_in(fresh, device).status_code == 400
    assert fresh.get("/").status_code == 302


def test_the_sign_in_page_offers_a_passkey(client: Client) -> None:
    page = client.get("/accounts/login/").content.decode()
    assert "Use a passkey" in page


@pytest.mark.parametrize(
    ("host", "secure", "shown", "instead"),
    [
        ("127.0.0.1:8000", False, "127.0.0.1", "Open http://localhost:8000/ instead"),
        ("127.0.0.1", False, "127.0.0.1", "Open http://localhost/ instead"),
        ("127.0.0.1:8443", True, "127.0.0.1", "Open https://localhost:8443/ instead"),
        ("[::1]:8000", False, "[::1]", "Open http://localhost:8000/ instead"),
        ("10.0.0.5:8000", False, "10.0.0.5", "Open the console's host name"),
        ("localhost:8000", False, None, None),
        ("testserver", False, None, None),
    ],
)
@pytest.mark.parametrize("ceremony", ["register", "sign in", "sign"])
def test_a_passkey_on_an_ip_address_says_to_open_the_host_name(
    api: Driver,
    signed_class: str,
    alice: User,
    signed_in: Callable[[User], Client],
    settings,  # noqa: ANN001
    ceremony: str,
    host: str,
    secure: bool,
    shown: str | None,
    instead: str | None,
) -> None:
    settings.ALLOWED_HOSTS = ["*"]
    device = SoftAuthenticator()
    pages = signed_in(alice)
    register_passkey(pages, device)
    instance_id = open_transfer(api)
    confirm_recipient(api, instance_id)
    url = {
        "register": "/account/passkeys/options/",
        "sign in": "/accounts/login/passkey/options/",
        "sign": f"/instances/{instance_id}/sign/options/",
    }[ceremony]
    client = Client() if ceremony == "sign in" else pages
    answer = client.post(
        url, data="{}", content_type="application/json", HTTP_HOST=host, secure=secure
    )
    if instead is None:
        assert answer.status_code == 200, answer.json()
        assert "options" in answer.json()
        return
    assert answer.status_code == 400
    body = answer.json()
    assert body["error"] == "passkey_needs_host_name"
    assert f"Passkeys do not work on an IP address ({shown})" in body["detail"]
    assert instead is not None and instead in body["detail"]
    # Nothing began: no attempt to sign, no challenge kept.
    assert not SignatureAttempt.objects.exists()
    assert "passkey_sign_in_challenge" not in client.session
    assert "passkey_registration_challenge" not in client.session


def test_the_passkey_script_says_to_use_the_host_name_on_an_ip_address() -> None:
    # The browser's own refusal ("This is an invalid domain", a SecurityError) is replaced by
    # the same words the server gives, before any ceremony starts.
    script = (Path(__file__).resolve().parents[3] / "static/console/passkeys.js").read_text()
    assert 'error.name === "SecurityError"' in script
    assert "Passkeys do not work on an IP address" in script
    assert "if (!supported() || onIpAddress())" in script
