"""verify_signature: a passkey assertion proves that this person's device signed exactly these
bindings, and nothing else passes."""

from __future__ import annotations

import base64
import hashlib
import json
import struct
from collections.abc import Callable
from typing import Any

import jwt
import pytest
from console_client import SignatureInvalid, bindings_digest, signature_challenge, verify_signature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

RP_ID, ORIGIN = "console.example.com", "https://console.example.com"
INSTANCE = "7d0f2a52-3c55-4d36-9d3e-0e8f6f1a2b3c"
BINDINGS = {"iban": "NL91ABNA0417164300", "amount": 250}


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _jwk(key: Any) -> dict[str, Any]:
    if isinstance(key, ec.EllipticCurvePrivateKey):
        return json.loads(jwt.algorithms.ECAlgorithm.to_jwk(key.public_key()))
    return json.loads(jwt.algorithms.OKPAlgorithm.to_jwk(key.public_key()))


def _sign(key: Any, data: bytes) -> bytes:
    if isinstance(key, ec.EllipticCurvePrivateKey):
        return key.sign(data, ec.ECDSA(hashes.SHA256()))
    return key.sign(data)


def assertion_for(
    key: Any,
    *,
    digest: str | None = None,
    nonce: str = "n-1",
    flags: int = 0x05,
    kind: str = "webauthn.get",
    origin: str = ORIGIN,
    rp_id: str = RP_ID,
) -> dict[str, Any]:
    digest = digest or bindings_digest(BINDINGS)
    challenge = signature_challenge(INSTANCE, digest, nonce)
    client_data = json.dumps(
        {"type": kind, "challenge": b64url(challenge), "origin": origin}
    ).encode()
    auth_data = hashlib.sha256(rp_id.encode()).digest() + bytes([flags]) + struct.pack(">I", 7)
    signature = _sign(key, auth_data + hashlib.sha256(client_data).digest())
    return {
        "instance": INSTANCE,
        "bindings_digest": digest,
        "nonce": nonce,
        "credential_id": "cred-1",
        "authenticator_data": b64url(auth_data),
        "client_data_json": b64url(client_data),
        "signature": b64url(signature),
        "rp_id": RP_ID,
        "origin": ORIGIN,
    }


def people(key: Any) -> dict[str, Any]:
    """The people endpoint's answer for a person with this one passkey."""
    return {
        "username": "alice",
        "passkeys": [{"credential_id": "cred-1", "public_key_jwk": _jwk(key)}],
    }


KEYS: dict[str, Callable[[], Any]] = {
    "ES256": lambda: ec.generate_private_key(ec.SECP256R1()),
    "EdDSA": ed25519.Ed25519PrivateKey.generate,
}


@pytest.mark.parametrize("kind", list(KEYS))
def test_it_accepts_the_persons_signature_of_exactly_these_bindings(kind: str) -> None:
    key = KEYS[kind]()
    verify_signature(assertion_for(key), people(key), bindings=BINDINGS, rp_id=RP_ID, origin=ORIGIN)


def _flip(text: str, at: int = 10) -> str:
    raw = bytearray(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    raw[at % len(raw)] ^= 0x01
    return b64url(bytes(raw))


TAMPERINGS: dict[str, Callable[[dict[str, Any], Any], None]] = {
    "one byte of the digest": lambda a, k: a.update(
        bindings_digest=("0" if a["bindings_digest"][0] != "0" else "1") + a["bindings_digest"][1:]
    ),
    "another nonce": lambda a, k: a.update(nonce="n-2"),
    "another instance": lambda a, k: a.update(instance="00000000-0000-0000-0000-000000000000"),
    "a flipped signature byte": lambda a, k: a.update(signature=_flip(a["signature"])),
    "flipped authenticator data": lambda a, k: a.update(
        authenticator_data=_flip(a["authenticator_data"], 40)
    ),
}


@pytest.mark.parametrize("tampering", list(TAMPERINGS))
def test_it_refuses_an_assertion_changed_after_signing(tampering: str) -> None:
    key = KEYS["ES256"]()
    assertion = assertion_for(key)
    TAMPERINGS[tampering](assertion, key)
    with pytest.raises(SignatureInvalid):
        verify_signature(assertion, people(key), rp_id=RP_ID, origin=ORIGIN)


def test_it_refuses_other_bindings_than_the_ones_about_to_run() -> None:
    key = KEYS["ES256"]()
    with pytest.raises(SignatureInvalid, match="other bindings"):
        verify_signature(assertion_for(key), people(key), bindings={**BINDINGS, "amount": 251})


MADE_WRONG: dict[str, dict[str, Any]] = {
    "no user verification": {"flags": 0x01},
    "no user presence": {"flags": 0x04},
    "a registration, not an assertion": {"kind": "webauthn.create"},
    "another origin": {"origin": "https://evil.example"},
    "another relying party": {"rp_id": "evil.example"},
}


@pytest.mark.parametrize("wrong", list(MADE_WRONG))
def test_it_refuses_an_assertion_made_wrong(wrong: str) -> None:
    key = KEYS["ES256"]()
    with pytest.raises(SignatureInvalid):
        verify_signature(
            assertion_for(key, **MADE_WRONG[wrong]), people(key), rp_id=RP_ID, origin=ORIGIN
        )


def test_it_refuses_another_persons_key() -> None:
    mine, theirs = KEYS["ES256"](), KEYS["ES256"]()
    with pytest.raises(SignatureInvalid, match="does not verify"):
        verify_signature(assertion_for(mine), people(theirs))


def test_it_refuses_a_credential_the_person_does_not_have() -> None:
    key = KEYS["ES256"]()
    listed = {"passkeys": [{"credential_id": "other", "public_key_jwk": _jwk(key)}]}
    with pytest.raises(SignatureInvalid, match="no public key"):
        verify_signature(assertion_for(key), listed)


def test_it_takes_a_bare_jwk_too() -> None:
    key = KEYS["EdDSA"]()
    verify_signature(assertion_for(key), _jwk(key))
