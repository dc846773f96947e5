"""Verifying a passkey signature of an approval, without trusting the console.

A decision may require its person's passkey signature (WebAuthn). The receipt's `passkey` claim
(and the instance read's `signature.assertion`) carries the assertion: credential id,
authenticatorData, clientDataJSON, signature, and the nonce. Its challenge is SHA-256 of the
canonical JSON `{"instance", "bindings_digest", "nonce"}`, so the signature holds for exactly
one instance, one set of bindings, one attempt. With the person's public key (from
`GET /api/v1/people/{username}/passkeys/`), `verify_signature` checks that their device signed
the very bindings a tool server is about to execute:

    passkeys = console.person_passkeys("alice")
    verify_signature(receipt.claims["passkey"], passkeys, bindings=arguments,
                     rp_id="console.example.com", origin="https://console.example.com")
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Iterable, Mapping
from typing import Any

import jwt
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa

from console_client.digest import bindings_digest as digest_of
from console_client.digest import canonical_json
from console_client.errors import ConsoleError

UP, UV = 0x01, 0x04


class SignatureInvalid(ConsoleError):
    """The passkey assertion does not prove that this person's device signed these bindings."""


def _b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def signature_challenge(
    instance: str, bindings_digest: str, nonce: str, worlds_digest: str | None = None
) -> bytes:
    """SHA-256 of the canonical JSON {"instance", "bindings_digest", "worlds_digest",
    "nonce"} (without `worlds_digest` for a signature made before the console bound worlds)."""
    payload = {"instance": str(instance), "bindings_digest": bindings_digest, "nonce": nonce}
    if worlds_digest:
        payload["worlds_digest"] = worlds_digest
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).digest()


def _public_key(assertion: Mapping[str, Any], keys: Any) -> Any:
    """The key that made the assertion, from one passkey entry of the people endpoint, a list
    of them (or that endpoint's whole answer), or a bare JWK."""
    if isinstance(keys, Mapping) and "passkeys" in keys:
        keys = keys["passkeys"]
    if isinstance(keys, Mapping) and "kty" in keys:
        return jwt.PyJWK(dict(keys)).key
    entries: Iterable[Any] = [keys] if isinstance(keys, Mapping) else keys
    for entry in entries:
        if entry.get("credential_id") == assertion.get("credential_id"):
            jwk = entry.get("public_key_jwk")
            if not jwk:
                raise SignatureInvalid("the passkey's key has no JWK form this client can use")
            return jwt.PyJWK(dict(jwk)).key
    raise SignatureInvalid("no public key of this person matches the assertion's credential")


def _verify(key: Any, signature: bytes, data: bytes) -> None:
    if isinstance(key, ec.EllipticCurvePublicKey):
        algorithm = {256: hashes.SHA256(), 384: hashes.SHA384(), 521: hashes.SHA512()}
        key.verify(signature, data, ec.ECDSA(algorithm[key.curve.key_size]))
    elif isinstance(key, ed25519.Ed25519PublicKey):
        key.verify(signature, data)
    elif isinstance(key, rsa.RSAPublicKey):
        key.verify(signature, data, padding.PKCS1v15(), hashes.SHA256())
    else:
        raise SignatureInvalid(f"unsupported key type {type(key).__name__}")


def verify_signature(
    assertion: Mapping[str, Any],
    public_keys: Any,
    *,
    bindings: Mapping[str, Any] | None = None,
    bindings_digest: str | None = None,
    worlds_digest: str | None = None,
    instance: str | None = None,
    rp_id: str | None = None,
    origin: str | None = None,
    require_user_verification: bool = True,
) -> None:
    """Raise `SignatureInvalid` unless the assertion is this person's passkey signing exactly
    these bindings: the challenge recomputed from the instance, the digest (of `bindings=`,
    or `bindings_digest=`, else the assertion's own) and the nonce; clientDataJSON's type,
    challenge and origin; the relying party's hash and the user-present and user-verified
    flags in authenticatorData; and the signature over authenticatorData and the hash of
    clientDataJSON, with the public key. `rp_id` and `origin` default to the assertion's
    (pass your own to check them against what you expect)."""
    digest = digest_of(bindings) if bindings is not None else bindings_digest
    digest = digest or str(assertion.get("bindings_digest") or "")
    if assertion.get("bindings_digest") not in (None, digest):
        raise SignatureInvalid("the signature is of other bindings than these")
    worlds = worlds_digest or str(assertion.get("worlds_digest") or "")
    if assertion.get("worlds_digest") not in (None, worlds):
        raise SignatureInvalid("the signature is of these values bound with another world")
    instance_id = instance or str(assertion.get("instance") or "")
    if assertion.get("instance") not in (None, instance_id):
        raise SignatureInvalid("the signature is of another instance")
    try:
        client_data_bytes = _b64url_decode(str(assertion["client_data_json"]))
        auth_data = _b64url_decode(str(assertion["authenticator_data"]))
        signature = _b64url_decode(str(assertion["signature"]))
        nonce = str(assertion["nonce"])
        client_data = json.loads(client_data_bytes)
    except (KeyError, ValueError, TypeError) as exc:
        raise SignatureInvalid(f"the assertion is malformed: {exc}") from None
    expected = signature_challenge(instance_id, digest, nonce, worlds)
    try:
        challenge = _b64url_decode(str(client_data.get("challenge", "")))
    except ValueError:
        challenge = b""
    if client_data.get("type") != "webauthn.get":
        raise SignatureInvalid("clientDataJSON is not of an assertion (webauthn.get)")
    if not hmac.compare_digest(challenge, expected):
        raise SignatureInvalid(
            "the signed challenge is not this instance, these bindings, this nonce"
        )
    want_origin = origin or assertion.get("origin")
    if want_origin and client_data.get("origin") != want_origin:
        raise SignatureInvalid("the assertion was made on another origin")
    want_rp = rp_id or assertion.get("rp_id")
    if len(auth_data) < 37:
        raise SignatureInvalid("authenticatorData is too short")
    if want_rp and not hmac.compare_digest(
        auth_data[:32], hashlib.sha256(str(want_rp).encode()).digest()
    ):
        raise SignatureInvalid("the assertion was made for another relying party")
    flags = auth_data[32]
    if not flags & UP:
        raise SignatureInvalid("the person was not present (user presence flag unset)")
    if require_user_verification and not flags & UV:
        raise SignatureInvalid("the person was not verified (user verification flag unset)")
    key = _public_key(assertion, public_keys)
    try:
        _verify(key, signature, auth_data + hashlib.sha256(client_data_bytes).digest())
    except InvalidSignature:
        raise SignatureInvalid("the passkey's signature does not verify") from None
