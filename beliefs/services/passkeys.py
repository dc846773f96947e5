"""Passkeys (WebAuthn, through py_webauthn) and passkey-signed approvals.

A person registers passkeys on their account page (user verification required) and may sign
in with one. A decision may require a signature: once every blocking prompt of such an
instance is answered it waits (`awaiting_signature`); the person reviews the whole action and
signs. Each attempt stores a fresh nonce, and the WebAuthn challenge is SHA-256 of the
canonical JSON `{"instance", "bindings_digest", "nonce"}` (`domain.passkeys`), so the
assertion holds for exactly these bindings, once. The instance becomes ready only after the
assertion verifies against the passkey's stored public key; the receipt carries it.

The relying party (`rp_id`, the origin) is the caller's to say: the pages take it from the
settings or the request (`console.views.passkeys`).
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils import timezone
from webauthn import (
    generate_authentication_options,
    generate_registration_options,
    options_to_json,
    verify_authentication_response,
    verify_registration_response,
)
from webauthn.helpers.exceptions import WebAuthnException
from webauthn.helpers.structs import (
    AuthenticatorSelectionCriteria,
    PublicKeyCredentialDescriptor,
    ResidentKeyRequirement,
    UserVerificationRequirement,
)

from beliefs.domain.passkeys import b64url, b64url_decode, signature_challenge
from beliefs.domain.vocabulary import MAX_LABEL_LENGTH, AuditKind
from beliefs.errors import Conflict, InvalidInput, NotFound, field_error
from beliefs.models import (
    InstanceStatus,
    Passkey,
    SignatureAttempt,
    TaskInstance,
)
from beliefs.selectors.passkeys import active_passkeys
from beliefs.services.audit import Actor, audit
from beliefs.services.lifecycle import lock_instance
from beliefs.services.planning import plan_locked


@dataclass(frozen=True)
class RelyingParty:
    """Who the passkeys are for: the domain (`id`), its name, the page origins accepted."""

    id: str
    name: str
    origins: tuple[str, ...]

    @property
    def origin(self) -> str:
        return self.origins[0]


class SignatureRefused(InvalidInput):
    """An assertion that does not sign this attempt's challenge with this person's passkey."""


def _user_handle(user: User) -> bytes:
    # Stable per person and not their username: the pk, as WebAuthn's opaque user handle.
    return f"console-user-{user.pk}".encode()


def _credential(data: Any) -> dict[str, Any]:
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except ValueError:
            data = None
    if not isinstance(data, dict) or not isinstance(data.get("id"), str):
        raise field_error("credential", "must be the JSON of a WebAuthn credential")
    return data


def _descriptors(passkeys: list[Passkey]) -> list[PublicKeyCredentialDescriptor]:
    return [PublicKeyCredentialDescriptor(id=b64url_decode(p.credential_id)) for p in passkeys]


# --- registering, removing, signing in ------------------------------------------------------


def passkey_registration_options(*, user: User, rp: RelyingParty) -> tuple[str, bytes]:
    """The creation options (JSON) and their challenge, which the caller keeps for the answer
    (the session). Resident key and user verification required; no attestation asked."""
    options = generate_registration_options(
        rp_id=rp.id,
        rp_name=rp.name,
        user_name=user.get_username(),
        user_id=_user_handle(user),
        user_display_name=user.get_full_name() or user.get_username(),
        authenticator_selection=AuthenticatorSelectionCriteria(
            resident_key=ResidentKeyRequirement.REQUIRED,
            user_verification=UserVerificationRequirement.REQUIRED,
        ),
        exclude_credentials=_descriptors(active_passkeys(user)),
    )
    return options_to_json(options), options.challenge


@transaction.atomic
def passkey_register(
    *, user: User, name: Any, credential: Any, challenge: bytes, rp: RelyingParty
) -> Passkey:
    if not isinstance(name, str) or not name.strip():
        raise field_error("name", "give the passkey a name, e.g. the device it is on")
    if len(name.strip()) > MAX_LABEL_LENGTH:
        raise field_error("name", f"must be at most {MAX_LABEL_LENGTH} characters")
    data = _credential(credential)
    try:
        verified = verify_registration_response(
            credential=data,
            expected_challenge=challenge,
            expected_rp_id=rp.id,
            expected_origin=list(rp.origins),
            require_user_verification=True,
        )
    except WebAuthnException as exc:
        raise InvalidInput(
            f"The passkey could not be registered: {exc}", code="passkey_invalid"
        ) from None
    transports = data.get("response", {}).get("transports") or []
    try:
        with transaction.atomic():
            passkey = Passkey.objects.create(
                user=user,
                name=name.strip(),
                credential_id=b64url(verified.credential_id),
                public_key=verified.credential_public_key,
                sign_count=verified.sign_count,
                transports=[t for t in transports if isinstance(t, str)][:10],
                aaguid=verified.aaguid,
                backed_up=verified.credential_backed_up,
            )
    except IntegrityError:
        raise Conflict("This passkey is already registered.", code="passkey_exists") from None
    _audit_passkey(AuditKind.PASSKEY_REGISTERED, passkey, user)
    return passkey


def _audit_passkey(kind: AuditKind, passkey: Passkey, user: User) -> None:
    """A passkey registered or removed by its person `user`: which one, and its credential id
    (what the signatures it made name)."""
    audit(
        kind,
        actor=Actor(user=user),
        subject=passkey.name,
        data={"passkey": passkey.pk, "credential_id": passkey.credential_id},
    )


@transaction.atomic
def passkey_remove(*, user: User, passkey_id: int) -> Passkey:
    """Remove one of the person's passkeys: it signs nothing more, and its public key stays
    listed (removed) so that what it signed can still be verified."""
    passkey = (
        Passkey.objects.select_for_update()
        .filter(pk=passkey_id, user=user, removed_at__isnull=True)
        .first()
    )
    if passkey is None:
        raise NotFound("No such passkey.")
    passkey.removed_at = timezone.now()
    passkey.save(update_fields=["removed_at"])
    _audit_passkey(AuditKind.PASSKEY_REMOVED, passkey, user)
    return passkey


def passkey_sign_in_options(*, rp: RelyingParty) -> tuple[str, bytes]:
    """Request options for signing in with a discoverable passkey (no username first)."""
    options = generate_authentication_options(
        rp_id=rp.id, user_verification=UserVerificationRequirement.REQUIRED
    )
    return options_to_json(options), options.challenge


def _locked_passkey(credential_id: str) -> Passkey | None:
    """The passkey with this credential id (not removed), its row locked until the transaction
    ends: its signature counter is read, checked and advanced by one assertion at a time, so
    that two assertions with the same count (a cloned authenticator, a replay on another
    instance) cannot both pass."""
    return (
        Passkey.objects.select_for_update(of=("self",))
        .select_related("user")
        .filter(credential_id=credential_id, removed_at__isnull=True)
        .first()
    )


def _client_data(response: dict[str, Any]) -> dict[str, Any]:
    """The assertion's clientDataJSON, parsed; empty if it is not JSON (py_webauthn then
    refuses the assertion in its own words)."""
    try:
        parsed = json.loads(b64url_decode(str(response.get("clientDataJSON") or "")))
    except (ValueError, TypeError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _require_own_page(passkey: Passkey, data: dict[str, Any], origins: list[str]) -> None:
    """What py_webauthn leaves to the relying party: the assertion's user handle, where it
    gives one, is the passkey's owner's (an authenticator answers with the account the
    credential was made for, never another person's), and the ceremony ran in the console's
    own page, not framed by another site (`crossOrigin`, `topOrigin`)."""
    response = data.get("response")
    response = response if isinstance(response, dict) else {}
    handle = response.get("userHandle")
    if handle not in (None, ""):
        try:
            given = b64url_decode(str(handle))
        except (ValueError, TypeError):
            given = None
        if given != _user_handle(passkey.user):
            raise SignatureRefused(
                "This assertion names another person (its userHandle is not the passkey "
                "owner's): refused.",
                code="user_handle_mismatch",
            )
    client = _client_data(response)
    cross = client.get("crossOrigin")
    top = client.get("topOrigin")
    if cross not in (None, False) or (top is not None and top not in origins):
        raise SignatureRefused(
            "The passkey was used inside another site's page (a cross-origin frame): only the "
            "console's own page may ask for it.",
            code="cross_origin",
        )


def _verify(
    passkey: Passkey, data: dict[str, Any], challenge: bytes, rp_id: str, origins: list[str]
) -> int:
    """The new sign count of a verified assertion; SignatureRefused otherwise. `passkey` is
    locked (`_locked_passkey`), so the count it holds is the latest."""
    _require_own_page(passkey, data, origins)
    try:
        verified = verify_authentication_response(
            credential=data,
            expected_challenge=challenge,
            expected_rp_id=rp_id,
            expected_origin=origins,
            credential_public_key=bytes(passkey.public_key),
            credential_current_sign_count=passkey.sign_count,
            require_user_verification=True,
        )
    except WebAuthnException as exc:
        raise SignatureRefused(
            f"The passkey's signature did not verify: {exc}", code="signature_invalid"
        ) from None
    return verified.new_sign_count


def _used(passkey: Passkey, sign_count: int) -> None:
    passkey.sign_count = sign_count
    passkey.last_used_at = timezone.now()
    passkey.save(update_fields=["sign_count", "last_used_at"])


@transaction.atomic
def passkey_sign_in(*, credential: Any, challenge: bytes, rp: RelyingParty) -> User:
    """The person whose passkey signed the sign-in challenge (user verified)."""
    data = _credential(credential)
    passkey = _locked_passkey(data["id"])
    if passkey is None or not passkey.user.is_active:
        raise SignatureRefused("This passkey is not registered here.", code="passkey_unknown")
    _used(passkey, _verify(passkey, data, challenge, rp.id, list(rp.origins)))
    audit(
        AuditKind.PASSKEY_SIGNED_IN,
        actor=Actor(user=passkey.user),
        subject=passkey.name,
        data={"passkey": passkey.pk},
    )
    return passkey.user


# --- signing an instance ----------------------------------------------------------------------


def _principal_instance(instance_id: Any, user: User) -> TaskInstance:
    instance = TaskInstance.objects.filter(pk=instance_id, principal=user).first()
    if instance is None:
        raise NotFound("No such instance.")
    return lock_instance(instance)


def _require_awaiting(instance: TaskInstance) -> None:
    if instance.status != InstanceStatus.AWAITING_SIGNATURE:
        raise Conflict(
            f"Nothing to sign: the instance is {instance.status}.",
            code=f"instance_{instance.status}",
        )


@transaction.atomic
def signature_attempt_start(
    *, instance_id: Any, user: User, rp: RelyingParty
) -> tuple[SignatureAttempt, str]:
    """A fresh attempt: a new nonce, stored, and the request options whose challenge is the
    digest of the instance, its bindings digest and that nonce. Only the principal, only
    while it awaits the signature, only with a passkey."""
    instance = _principal_instance(instance_id, user)
    _require_awaiting(instance)
    passkeys = active_passkeys(user)
    if not passkeys:
        raise Conflict(
            "You have no passkey yet: add one on your account page, then sign.",
            code="no_passkey",
        )
    now = timezone.now()
    nonce = secrets.token_urlsafe(32)
    challenge = signature_challenge(
        str(instance.pk), instance.bindings_digest, nonce, instance.worlds_digest
    )
    attempt = SignatureAttempt.objects.create(
        instance=instance,
        user=user,
        bindings_digest=instance.bindings_digest,
        worlds_digest=instance.worlds_digest,
        nonce=nonce,
        challenge=challenge.hex(),
        rp_id=rp.id,
        origin=rp.origin,
        created_at=now,
        expires_at=now + settings.CONSOLE_SIGNATURE_ATTEMPT_TTL,
    )
    options = generate_authentication_options(
        rp_id=rp.id,
        challenge=challenge,
        allow_credentials=_descriptors(passkeys),
        user_verification=UserVerificationRequirement.REQUIRED,
    )
    return attempt, options_to_json(options)


@transaction.atomic
def instance_sign(
    *, instance_id: Any, user: User, attempt_id: Any, credential: Any
) -> TaskInstance:
    """Verify the assertion of one attempt and, if it signs exactly what the instance would
    bind now, let the instance become ready. An attempt is used once: its nonce never signs
    again (a replayed assertion is refused)."""
    data = _credential(credential)
    instance = _principal_instance(instance_id, user)
    try:
        attempt_pk = UUID(str(attempt_id))
    except ValueError:
        raise field_error("attempt", "is not a signing attempt") from None
    attempt = (
        SignatureAttempt.objects.select_for_update()
        .filter(pk=attempt_pk, instance=instance, user=user)
        .first()
    )
    if attempt is None:
        raise NotFound("No such signing attempt.", code="not_found")
    if attempt.verified_at is not None or attempt.voided_at is not None:
        raise Conflict(
            "This signing attempt was already used or voided: its nonce signs nothing again. "
            "Start a new one.",
            code="signature_replayed",
        )
    _require_awaiting(instance)
    now = timezone.now()
    if attempt.expires_at <= now:
        raise Conflict("This signing attempt expired: start a new one.", code="attempt_expired")
    if (
        attempt.bindings_digest != instance.bindings_digest
        or attempt.worlds_digest != instance.worlds_digest
    ):
        raise Conflict(
            "The action changed since this attempt began: review it again and sign anew.",
            code="signature_outdated",
        )
    passkey = _locked_passkey(data["id"])
    if passkey is None or passkey.user_id != user.pk:
        raise SignatureRefused(
            "This passkey is not one of yours registered here.", code="passkey_unknown"
        )
    sign_count = _verify(
        passkey, data, bytes.fromhex(attempt.challenge), attempt.rp_id, [attempt.origin]
    )
    _used(passkey, sign_count)
    response = data.get("response") or {}
    attempt.passkey = passkey
    attempt.assertion = {
        "credential_id": passkey.credential_id,
        "authenticator_data": response.get("authenticatorData"),
        "client_data_json": response.get("clientDataJSON"),
        "signature": response.get("signature"),
        "user_handle": response.get("userHandle"),
    }
    attempt.verified_at = now
    attempt.save(update_fields=["passkey", "assertion", "verified_at"])
    audit(
        AuditKind.INSTANCE_SIGNED,
        actor=Actor(user=user),
        instance=instance,
        data={
            "attempt": str(attempt.pk),
            "passkey": passkey.pk,
            "bindings_digest": attempt.bindings_digest,
            "worlds_digest": attempt.worlds_digest,
            "nonce": attempt.nonce,
        },
    )
    return plan_locked(instance, Actor(user=user)).instance
