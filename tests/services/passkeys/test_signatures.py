"""Passkey-signed approvals: an instance of a decision that requires a signature
waits for it once every answer is in, becomes ready only once the person's passkey signed
exactly its bindings, and carries the assertion in its receipt and its read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core import mail
from django.test import Client
from django.utils import timezone

from beliefs.domain.passkeys import b64url_decode, challenge_payload
from beliefs.domain.vocabulary import AuditKind
from beliefs.models import (
    AuditEvent,
    EmailNotification,
    InstanceStatus,
    Passkey,
    SignatureAttempt,
    TaskInstance,
    WebhookEvent,
)
from beliefs.services.expiry import instances_expire
from beliefs.services.notify import compose
from beliefs.signing import verify
from tests.conftest import JsonClient, runtime_key_of
from tests.support.api import API, Driver
from tests.support.authenticator import SoftAuthenticator
from tests.support.passkeys import (
    RECIPIENT,
    confirm_recipient,
    open_transfer,
    post_json,
    register_passkey,
    send_assertion,
    sign,
    start_signing,
)

REPO = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.usefixtures("signed_class")


def _awaiting(api: Driver) -> tuple[str, dict[str, Any]]:
    instance_id = open_transfer(api)
    return instance_id, confirm_recipient(api, instance_id)


# --- waiting for the signature ----------------------------------------------------------------


def test_it_waits_for_a_signature_once_every_answer_is_in(api: Driver, alice: User) -> None:
    User.objects.filter(pk=alice.pk).update(email="alice@example.com")
    instance_id, read = _awaiting(api)
    assert read["status"] == "awaiting_signature"
    assert read["blocking"] == 0
    assert read["bindings_digest"]  # what the signature will cover
    assert read["receipt"] is None
    assert read["signature"] == {"required": True, "signed": False, "assertion": None}
    # The runtime hears that a signature is awaited, never the values.
    event = WebhookEvent.objects.get(instance_id=instance_id, type="instance.awaiting_signature")
    data = event.payload["data"]
    assert data["awaiting"] == "signature"
    assert data["bindings_digest"] == read["bindings_digest"]
    assert RECIPIENT not in json.dumps(event.payload)
    # The person is told by email that their signature is needed, never the values.
    note = EmailNotification.objects.get(instance_id=instance_id, kind="awaiting_signature")
    subject, body = compose(note.kind, [note], timezone.now())
    assert "signature" in subject.lower()
    assert "passkey" in body and "/account/" in body
    assert RECIPIENT not in body


def test_the_waiting_email_is_sent_while_it_waits(api: Driver, alice: User) -> None:
    from beliefs.services.notify import email_send

    User.objects.filter(pk=alice.pk).update(email="alice@example.com")
    instance_id, _ = _awaiting(api)
    note = EmailNotification.objects.get(instance_id=instance_id, kind="awaiting_signature")
    assert note.email_id is not None
    assert email_send(note.email_id) == "sent"
    (sent,) = [m for m in mail.outbox if "signature" in m.subject.lower()]
    assert sent.to == ["alice@example.com"]
    assert RECIPIENT not in sent.body


def test_an_instance_of_a_decision_without_the_setting_is_ready_at_once(
    api: Driver, carol: User
) -> None:
    from beliefs.models import Decision

    Decision.objects.filter(key="send_transfer").update(requires_signature=False)
    instance_id = open_transfer(api)
    read = confirm_recipient(api, instance_id)
    assert read["status"] == "ready"
    assert read["signature"] is None
    assert "passkey" not in verify(read["receipt"])


# --- signing --------------------------------------------------------------------------------------


def test_signing_makes_it_ready_and_the_evidence_travels(
    api: Driver, alice_pages: Client, device: SoftAuthenticator, runtime: JsonClient
) -> None:
    instance_id, before = _awaiting(api)
    assert register_passkey(alice_pages, device).status_code == 201
    signed = sign(alice_pages, instance_id, device)
    assert signed.status_code == 200, signed.json()
    assert signed.json()["status"] == "ready"

    read = api.instance(instance_id)
    assert read["status"] == "ready"
    assert read["bindings_digest"] == before["bindings_digest"]
    evidence = read["signature"]["assertion"]
    assert read["signature"]["signed"] is True
    attempt = SignatureAttempt.objects.get(instance_id=instance_id, verified_at__isnull=False)
    assert evidence["nonce"] == attempt.nonce
    assert evidence["credential_id"] == Passkey.objects.get().credential_id
    for part in ("authenticator_data", "client_data_json", "signature"):
        assert evidence[part]
    # The challenge the device signed is SHA-256 of exactly
    # {instance, bindings_digest, worlds_digest, nonce}.
    client_data = json.loads(b64url_decode(evidence["client_data_json"]))
    import hashlib

    assert read["worlds_digest"] and evidence["worlds_digest"] == read["worlds_digest"]
    payload = challenge_payload(
        instance_id, read["bindings_digest"], attempt.nonce, read["worlds_digest"]
    )
    expected = hashlib.sha256(payload.encode()).digest()
    assert b64url_decode(client_data["challenge"]) == expected
    # The receipt carries the same assertion.
    claims = verify(read["receipt"])
    assert claims["passkey"] == evidence
    assert claims["bindings_digest"] == read["bindings_digest"]
    # Audited, and the passkey's last use recorded.
    assert AuditEvent.objects.filter(kind=AuditKind.INSTANCE_SIGNED, instance_id=instance_id)
    assert Passkey.objects.get().last_used_at is not None

    # A verifier in another process, with only the people endpoint's public key, checks it.
    keys = runtime.get(f"{API}/people/alice/passkeys/")
    assert keys.status_code == 200
    assert _verify_elsewhere(claims["passkey"], keys.json()) == "verified"
    tampered = dict(claims["passkey"])
    digest = tampered["bindings_digest"]
    tampered["bindings_digest"] = ("0" if digest[0] != "0" else "1") + digest[1:]
    assert _verify_elsewhere(tampered, keys.json()).startswith("refused")


VERIFIER = r"""
import hashlib, json, sys
sys.path.insert(0, sys.argv[1])
from webauthn import verify_authentication_response
from webauthn.helpers import base64url_to_bytes
from console_client import verify_signature, SignatureInvalid
evidence, people = json.loads(sys.stdin.read())
key = next(p for p in people["passkeys"] if p["credential_id"] == evidence["credential_id"])
payload = json.dumps(
    {"instance": evidence["instance"], "bindings_digest": evidence["bindings_digest"],
     "worlds_digest": evidence["worlds_digest"], "nonce": evidence["nonce"]},
    sort_keys=True, separators=(",", ":"), ensure_ascii=False)
challenge = hashlib.sha256(payload.encode()).digest()
try:
    verify_authentication_response(
        credential={"id": evidence["credential_id"], "rawId": evidence["credential_id"],
                    "type": "public-key",
                    "response": {"authenticatorData": evidence["authenticator_data"],
                                 "clientDataJSON": evidence["client_data_json"],
                                 "signature": evidence["signature"]}},
        expected_challenge=challenge, expected_rp_id=evidence["rp_id"],
        expected_origin=evidence["origin"],
        credential_public_key=base64url_to_bytes(key["public_key_cose"]),
        credential_current_sign_count=0, require_user_verification=True)
    verify_signature(evidence, people)
except Exception as exc:
    print("refused:", type(exc).__name__, exc)
else:
    print("verified")
"""


def _verify_elsewhere(evidence: dict[str, Any], people: dict[str, Any]) -> str:
    """py_webauthn's verifier and the client's, in a process that has no console in it."""
    done = subprocess.run(
        [sys.executable, "-c", VERIFIER, str(REPO / "client" / "src")],
        input=json.dumps([evidence, people]),
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "django" not in done.stderr
    return done.stdout.strip()


def test_a_replayed_assertion_is_refused(
    api: Driver, alice_pages: Client, device: SoftAuthenticator
) -> None:
    instance_id, _ = _awaiting(api)
    register_passkey(alice_pages, device)
    first = start_signing(alice_pages, instance_id).json()
    old = device.get(first["options"])
    second = start_signing(alice_pages, instance_id).json()
    assert second["options"]["challenge"] != first["options"]["challenge"]  # a fresh nonce
    # The first attempt's assertion (its nonce) offered for the second attempt: refused.
    crossed = send_assertion(alice_pages, instance_id, second["attempt"], old)
    assert crossed.status_code == 400
    assert crossed.json()["error"] == "signature_invalid"
    assert api.instance(instance_id)["status"] == "awaiting_signature"
    # Used as it was made, it signs once...
    assert send_assertion(alice_pages, instance_id, first["attempt"], old).status_code == 200
    # ...and never again.
    again = send_assertion(alice_pages, instance_id, first["attempt"], old)
    assert again.status_code == 409
    assert again.json()["error"] == "signature_replayed"


def test_an_assertion_without_user_verification_is_refused(
    api: Driver, alice_pages: Client, device: SoftAuthenticator
) -> None:
    instance_id, _ = _awaiting(api)
    register_passkey(alice_pages, device)
    device.user_verified = False
    refused = sign(alice_pages, instance_id, device)
    assert refused.status_code == 400
    assert api.instance(instance_id)["status"] == "awaiting_signature"


def test_only_the_principal_signs(
    api: Driver,
    alice_pages: Client,
    device: SoftAuthenticator,
    mallory: User,
    signed_in: Any,
) -> None:
    instance_id, _ = _awaiting(api)
    register_passkey(alice_pages, device)
    other = signed_in(mallory)
    register_passkey(other, SoftAuthenticator())
    assert start_signing(other, instance_id).status_code == 404
    assert other.get(f"/instances/{instance_id}/sign/").status_code == 404


def test_a_world_change_voids_the_attempt_under_way(
    api: Driver, alice_pages: Client, device: SoftAuthenticator
) -> None:
    instance_id, _ = _awaiting(api)
    register_passkey(alice_pages, device)
    started = start_signing(alice_pages, instance_id).json()
    credential = device.get(started["options"])
    # The memo's world changes: its assumption is re-versioned, what was shown is not current.
    changed = api.runtime.put_json(
        f"{API}/instances/{instance_id}/world/", {"world": {"memo": {"ref": "b"}}}
    )
    assert changed.status_code == 200, changed.json()
    refused = send_assertion(alice_pages, instance_id, started["attempt"], credential)
    assert refused.status_code == 409
    assert api.instance(instance_id)["status"] == "awaiting_signature"
    # A fresh signature of the action as it now is makes it ready.
    assert sign(alice_pages, instance_id, device).json()["status"] == "ready"


def test_a_veto_after_ready_voids_the_signature(
    api: Driver, alice_pages: Client, device: SoftAuthenticator
) -> None:
    instance_id, _ = _awaiting(api)
    register_passkey(alice_pages, device)
    sign(alice_pages, instance_id, device)
    assert api.instance(instance_id)["status"] == "ready"
    memo = next(p for p in api.instance(instance_id)["prompts"] if p["slot"] == "memo")
    vetoed = api.respond(memo, "veto", reason="wrong memo")
    assert vetoed.status_code == 200, vetoed.json()
    read = api.instance(instance_id)
    assert read["status"] == "awaiting_user"
    assert read["receipt_state"] == "revoked"
    assert read["signature"]["signed"] is False
    voided = SignatureAttempt.objects.get(instance_id=instance_id, verified_at__isnull=False)
    assert voided.voided_at is not None
    # Answered again (the very same memo): it waits for a new signature, the old one is void.
    again = api.answer_all(instance_id, {"memo": "rent"})
    assert again["status"] == "awaiting_signature"


# --- people without a passkey -------------------------------------------------------------------


def test_without_a_passkey_it_cannot_become_ready_and_expires(
    api: Driver, alice_pages: Client
) -> None:
    instance_id, _ = _awaiting(api)
    refused = start_signing(alice_pages, instance_id)
    assert refused.status_code == 409
    assert refused.json()["error"] == "no_passkey"
    page = alice_pages.get(f"/instances/{instance_id}/sign/")
    text = page.content.decode()
    assert "You have no passkey yet" in text and "/account/#passkeys-heading" in text
    assert "Sign with passkey" not in text
    assert api.instance(instance_id)["status"] == "awaiting_signature"
    # It expires as an unanswered request does.
    later = timezone.now() + settings.CONSOLE_SIGNATURE_TTL + timedelta(seconds=1)
    assert instances_expire(now=later) == 1
    instance = TaskInstance.objects.get(pk=instance_id)
    assert instance.status == InstanceStatus.EXPIRED
    assert WebhookEvent.objects.filter(instance_id=instance_id, type="instance.expired").exists()


def test_a_read_after_the_signature_was_due_expires_it(api: Driver) -> None:
    instance_id, _ = _awaiting(api)
    TaskInstance.objects.filter(pk=instance_id).update(
        signature_due_at=timezone.now() - timedelta(seconds=1)
    )
    assert api.instance(instance_id)["status"] == "expired"


# --- the people endpoint ------------------------------------------------------------------------


def test_a_runtime_reads_the_keys_of_people_it_has_instances_for_only(
    api: Driver, alice_pages: Client, device: SoftAuthenticator, mallory: User
) -> None:
    _awaiting(api)
    register_passkey(alice_pages, device)
    mine = api.runtime.get(f"{API}/people/alice/passkeys/").json()
    (key,) = mine["passkeys"]
    assert key["public_key_jwk"]["kty"] == "EC" and key["public_key_jwk"]["alg"] == "ES256"
    assert key["public_key_cose"] and key["active"] is True
    assert "name" not in key  # the person's names for their devices stay theirs
    other = JsonClient()
    other.credentials(HTTP_AUTHORIZATION=f"Api-Key {runtime_key_of('other-runtime')[1]}")
    for username in ("alice", "mallory", "nobody"):
        refused = other.get(f"{API}/people/{username}/passkeys/")
        assert refused.status_code == 404, username
    assert api.runtime.get(f"{API}/people/mallory/passkeys/").status_code == 404
    assert api.person.get(f"{API}/people/alice/passkeys/").status_code == 403


def test_a_removed_passkey_stays_listed_as_removed(
    api: Driver, alice_pages: Client, device: SoftAuthenticator
) -> None:
    _awaiting(api)
    register_passkey(alice_pages, device)
    passkey = Passkey.objects.get()
    assert alice_pages.post(f"/account/passkeys/{passkey.pk}/remove/").status_code == 302
    (key,) = api.runtime.get(f"{API}/people/alice/passkeys/").json()["passkeys"]
    assert key["active"] is False and key["removed_at"]
    assert AuditEvent.objects.filter(kind=AuditKind.PASSKEY_REMOVED).count() == 1


def test_the_instance_read_is_the_same_through_the_orm(
    api: Driver, alice_pages: Client, device: SoftAuthenticator, runtime_key: Any
) -> None:
    from beliefs.selectors import instance_read
    from tests.oracles import instance_read as reference_read

    instance_id, _ = _awaiting(api)
    register_passkey(alice_pages, device)
    sign(alice_pages, instance_id, device)
    runtime_id = runtime_key[0].runtime_id
    fast = instance_read(instance_id, runtime_id=runtime_id)
    slow = reference_read(instance_id, runtime_id=runtime_id)
    assert fast is not None and slow is not None
    assert fast.payload == slow.payload
    assert fast.payload["signature"]["signed"] is True


def test_post_without_a_body_is_a_clear_refusal(api: Driver, alice_pages: Client) -> None:
    instance_id, _ = _awaiting(api)
    response = post_json(alice_pages, f"/instances/{instance_id}/sign/assertion/", {})
    assert response.status_code == 400
    assert response.json()["error"]


def test_it_warns_once_before_the_signature_is_due(api: Driver, alice: User) -> None:
    from beliefs.models import OutgoingEmail
    from beliefs.services.notify import email_send
    from beliefs.services.sweep import instances_warn_expiring

    User.objects.filter(pk=alice.pk).update(email="alice@example.com")
    instance_id, _ = _awaiting(api)
    due = TaskInstance.objects.get(pk=instance_id).signature_due_at
    assert due is not None
    soon = due - settings.CONSOLE_EXPIRY_WARNING + timedelta(seconds=1)
    assert instances_warn_expiring(now=soon - timedelta(minutes=5)) == 0  # not yet
    assert instances_warn_expiring(now=soon) == 1
    assert instances_warn_expiring(now=soon) == 0  # once
    event = WebhookEvent.objects.get(instance_id=instance_id, type="instance.expiring")
    assert event.payload["data"]["expires_at"] == due.isoformat()
    email = OutgoingEmail.objects.get(kind="expiring")
    assert email_send(email.pk) == "sent"
    (sent,) = [m for m in mail.outbox if m.subject.startswith("Expiring soon")]
    assert "your passkey signature" in sent.body
    assert RECIPIENT not in sent.body


def test_an_upgrade_while_it_awaits_its_signature_asks_again(
    api: Driver, alice_pages: Client, device: SoftAuthenticator, carol: User
) -> None:
    from beliefs.models import Slot
    from beliefs.services.audit import Actor
    from beliefs.services.classification import slot_set_risk

    instance_id, _ = _awaiting(api)
    register_passkey(alice_pages, device)
    started = start_signing(alice_pages, instance_id).json()
    credential = device.get(started["options"])
    result = slot_set_risk(
        slot=Slot.objects.get(key="memo"),
        risk_class="irreversible",
        reason="memos go on the statement",
        actor=Actor(user=carol),
    )
    assert result.replanned == 1
    read = api.instance(instance_id)
    assert read["status"] == "awaiting_user"  # the memo must now be confirmed
    refused = send_assertion(alice_pages, instance_id, started["attempt"], credential)
    assert refused.status_code == 409
