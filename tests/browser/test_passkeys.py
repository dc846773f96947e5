"""Passkey-signed approvals in real Chromium, with the DevTools virtual authenticator (ctap2,
internal, resident keys, user verification): register a passkey, review and sign an instance,
and the receipt's assertion verifies in another process with the people endpoint's key."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Page, expect

from beliefs.models import Decision, InstanceStatus, Prompt, SignatureAttempt, TaskInstance
from beliefs.services.audit import Actor
from beliefs.services.responses import prompt_respond
from beliefs.signing import verify
from tests.builders import open_instance, register
from tests.conftest import PASSWORD, JsonClient, runtime_key_of
from tests.services.passkeys.test_signatures import _verify_elsewhere

SignIn = Callable[[str, str], None]
WIDTHS = [1280, 390]


def virtual_authenticator(page: Page) -> Any:  # noqa: ANN401 - a CDP session
    cdp = page.context.new_cdp_session(page)
    cdp.send("WebAuthn.enable", {"enableUI": False})
    cdp.send(
        "WebAuthn.addVirtualAuthenticator",
        {
            "options": {
                "protocol": "ctap2",
                "transport": "internal",
                "hasResidentKey": True,
                "hasUserVerification": True,
                "isUserVerified": True,
                "automaticPresenceSimulation": True,
            }
        },
    )
    return cdp


def awaiting_signature(principal: str, runtime: str = "billing-agent") -> TaskInstance:
    """A transfer whose decision requires a signature, its recipient confirmed: it waits."""
    key, _ = runtime_key_of(runtime)
    actor = Actor(key=key)
    if not Decision.objects.filter(key="send_transfer").exists():
        register(
            "payments.transfer",
            actor=actor,
            slots=[
                {"key": "recipient_account", "label": "Recipient account"},
                {"key": "amount", "label": "Amount"},
                {"key": "memo", "label": "Memo"},
            ],
            decisions=[{"key": "send_transfer", "slots": ["recipient_account", "amount"]}],
            risks={"recipient_account": "reversible", "amount": "reversible", "memo": "reversible"},
            decision_risks={"send_transfer": "irreversible"},
        )
        Decision.objects.filter(key="send_transfer").update(requires_signature=True)
    instance = open_instance(
        task_class_key="payments.transfer",
        principal=principal,
        actor=actor,
        world={"memo": {"ref": "invoice 7"}},
        beliefs=[
            {"slot": "recipient_account", "value": "DE89370400440532013000", "source": "tool"},
            {"slot": "amount", "value": "250.00 EUR", "source": "inference"},
            {"slot": "memo", "value": "rent", "source": "tool", "world_ref": {"ref": "invoice 6"}},
        ],
    )
    from beliefs.services.planning import instance_plan

    instance_plan(instance=instance, actor=actor)
    user = User.objects.get(username=principal)
    for prompt in Prompt.objects.filter(instance=instance, state="open", blocking=True):
        action, value = ("edit", "245.00 EUR") if prompt.slot.key == "amount" else ("confirm", None)
        prompt_respond(
            prompt_id=prompt.pk,
            user=user,
            action=action,
            version=prompt.version,
            value=value,
            value_confirmation=value,
        )
    instance.refresh_from_db()
    assert instance.status == InstanceStatus.AWAITING_SIGNATURE
    return instance


def fits(page: Page, width: int) -> bool:
    return bool(page.evaluate("document.documentElement.scrollWidth") <= width)


def _origin(live_server: Any) -> str:  # noqa: ANN401 - pytest-django's live server
    # WebAuthn takes a domain as the relying party, never an IP address: the console is opened
    # as http://localhost:PORT, a secure context.
    return re.sub(r"//127\.0\.0\.1:", "//localhost:", str(live_server.url))


@pytest.mark.parametrize("width", WIDTHS)
def test_it_registers_a_passkey_signs_and_the_signature_verifies_elsewhere(
    page: Page,
    sign_out: Callable[[], None],
    screenshot: Callable[[str], Any],
    alice: User,
    live_server: Any,
    width: int,
) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    origin = _origin(live_server)
    instance = awaiting_signature("alice")
    virtual_authenticator(page)

    page.goto(f"{origin}/accounts/login/")
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(lambda url: "/accounts/login/" not in url)

    # Register a passkey on the account page.
    page.goto(f"{origin}/account/")
    page.get_by_label("Name of the new passkey").fill("test laptop")
    page.get_by_role("button", name="Add a passkey").click()
    expect(page.get_by_role("status").first).to_contain_text("Passkey “test laptop” added.")
    row = page.locator("tr[data-passkey]")
    expect(row).to_contain_text("test laptop")
    expect(row).to_contain_text("never")
    assert fits(page, width), "the account page scrolls sideways"

    # The instance page sends the person to review and sign.
    page.goto(f"{origin}/instances/{instance.pk}/")
    expect(page.get_by_role("heading", name="Waiting for your signature")).to_be_visible()
    page.get_by_role("link", name="Review and sign").click()
    expect(page.get_by_role("heading", name="Review and sign", exact=True)).to_be_visible()
    bindings = page.locator("table.sign-bindings")
    expect(bindings).to_contain_text("DE89370400440532013000")
    expect(bindings.locator("tr.is-changed")).to_have_count(2)  # the edit, the memo's world
    expect(page.locator("[data-slot=amount]")).to_contain_text("Changed by you")
    # The world's change is a warning of its own, apart from the value signed.
    expect(page.locator("[data-slot=memo]")).to_contain_text("The world it refers to changed")
    expect(page.locator("#world-memo")).to_contain_text("then; it says")
    expect(page.locator("#bindings-digest")).to_have_text(instance.bindings_digest)
    screenshot(f"passkeys-review-and-sign-{width}")
    assert fits(page, width), "the review page scrolls sideways"

    page.get_by_role("button", name="Sign with passkey").click()
    page.wait_for_url(re.compile(rf"/instances/{instance.pk}/$"))
    expect(page.get_by_role("heading", name="✓ This action may proceed")).to_be_visible()
    instance.refresh_from_db()
    assert instance.status == InstanceStatus.READY

    # The receipt carries the assertion; it verifies in another process with the public key
    # from the people endpoint, and fails with one byte of the digest changed.
    assert instance.receipt is not None
    evidence = verify(instance.receipt.token)["passkey"]
    assert evidence["rp_id"] == "localhost" and evidence["origin"] == origin
    runtime = JsonClient()
    runtime.credentials(HTTP_AUTHORIZATION=f"Api-Key {runtime_key_of('billing-agent')[1]}")
    people = runtime.get("/api/v1/people/alice/passkeys/").json()
    assert _verify_elsewhere(evidence, people) == "verified"
    digest = evidence["bindings_digest"]
    tampered = {**evidence, "bindings_digest": ("0" if digest[0] != "0" else "1") + digest[1:]}
    assert _verify_elsewhere(tampered, people).startswith("refused")

    # The same assertion replayed (its old nonce) is refused.
    attempt = SignatureAttempt.objects.get(instance=instance, verified_at__isnull=False)
    assertion = attempt.assertion
    assert assertion is not None
    credential = {
        "id": assertion["credential_id"],
        "rawId": assertion["credential_id"],
        "type": "public-key",
        "response": {
            "authenticatorData": assertion["authenticator_data"],
            "clientDataJSON": assertion["client_data_json"],
            "signature": assertion["signature"],
            "userHandle": assertion["user_handle"],
        },
        "clientExtensionResults": {},
    }
    csrf = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    replayed = page.request.post(
        f"{origin}/instances/{instance.pk}/sign/assertion/",
        data=json.dumps({"attempt": str(attempt.pk), "credential": credential}),
        headers={"Content-Type": "application/json", "X-CSRFToken": csrf, "Referer": origin},
    )
    assert replayed.status == 409
    assert replayed.json()["error"] == "signature_replayed"

    # Signed out, the passkey signs the person back in.
    sign_out()
    page.goto(f"{origin}/accounts/login/")
    page.get_by_role("button", name="Use a passkey").click()
    page.wait_for_url(lambda url: "/accounts/login/" not in url)
    expect(page.get_by_text("Signed in as")).to_be_visible()


@pytest.mark.parametrize("width", WIDTHS)
def test_a_person_without_a_passkey_is_told_how_to_add_one_and_it_stays_unsigned(
    page: Page,
    screenshot: Callable[[str], Any],
    alice: User,
    live_server: Any,
    width: int,
) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    origin = _origin(live_server)
    instance = awaiting_signature("alice")
    virtual_authenticator(page)
    page.goto(f"{origin}/accounts/login/")
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(lambda url: "/accounts/login/" not in url)
    page.goto(f"{origin}/instances/{instance.pk}/sign/")
    note = page.locator("#no-passkey")
    expect(note).to_contain_text("You have no passkey yet")
    expect(note.get_by_role("link", name="your account page")).to_be_visible()
    expect(page.get_by_role("button", name="Sign with passkey")).to_have_count(0)
    screenshot(f"passkeys-no-passkey-{width}")
    assert fits(page, width)
    # Whatever it posts, it cannot make the instance ready.
    csrf = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    started = page.request.post(
        f"{origin}/instances/{instance.pk}/sign/options/",
        headers={"X-CSRFToken": csrf, "Referer": origin},
    )
    assert started.status == 409 and started.json()["error"] == "no_passkey"
    instance.refresh_from_db()
    assert instance.status == InstanceStatus.AWAITING_SIGNATURE


def test_on_an_ip_address_it_says_to_open_the_host_name(
    page: Page, alice: User, live_server: Any
) -> None:
    # The console opened as http://127.0.0.1:PORT: the browser would refuse any passkey there
    # with only "This is an invalid domain".
    port = str(live_server.url).rsplit(":", 1)[1]
    base = f"http://127.0.0.1:{port}"
    virtual_authenticator(page)
    page.goto(f"{base}/accounts/login/")
    page.get_by_role("button", name="Use a passkey").click()
    error = page.locator("[data-passkey-error]")
    expect(error).to_be_visible()
    expect(error).to_contain_text("Passkeys do not work on an IP address (127.0.0.1)")
    expect(error).to_contain_text(f"Open http://localhost:{port}/ instead")
    expect(error).not_to_contain_text("invalid domain")
