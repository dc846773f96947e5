"""Passkey signatures, the pure parts: the challenge a signature of an instance's bindings
answers, and a COSE public key as a JWK.

The challenge is SHA-256 of the canonical JSON `{"instance", "bindings_digest",
"worlds_digest", "nonce"}`, so an assertion over it holds for exactly that instance, those
bindings, the world they were bound with and that attempt: another digest or another nonce
gives another challenge, and the authenticator's signature covers the
challenge (through clientDataJSON).
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from beliefs.domain.canonical import canonical_json

# COSE key parameters (RFC 9053) of the keys WebAuthn authenticators make.
_KTY, _ALG, _CRV, _X, _Y, _N, _E = 1, 3, -1, -2, -3, -1, -2
_EC2, _OKP, _RSA = 2, 1, 3
_EC_CURVES = {1: "P-256", 2: "P-384", 3: "P-521"}
_OKP_CURVES = {6: "Ed25519"}
_ALGORITHMS = {-7: "ES256", -35: "ES384", -36: "ES512", -8: "EdDSA", -257: "RS256"}


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def challenge_payload(
    instance_id: str, bindings_digest: str, nonce: str, worlds_digest: str | None = None
) -> str:
    """The canonical JSON the challenge is the digest of: with `worlds_digest` too where the
    attempt binds the world (every attempt made since receipts carry it)."""
    payload = {"instance": str(instance_id), "bindings_digest": bindings_digest, "nonce": nonce}
    if worlds_digest:
        payload["worlds_digest"] = worlds_digest
    return canonical_json(payload)


def signature_challenge(
    instance_id: str, bindings_digest: str, nonce: str, worlds_digest: str | None = None
) -> bytes:
    """The 32 bytes WebAuthn signs over (as `challenge`, base64url in clientDataJSON)."""
    return hashlib.sha256(
        challenge_payload(instance_id, bindings_digest, nonce, worlds_digest).encode("utf-8")
    ).digest()


def cose_to_jwk(cose: dict[int, Any]) -> dict[str, Any]:
    """A decoded COSE_Key (integer labels) as an RFC 7517 JWK; ValueError for a kind of key
    this does not know (a runtime then still has the COSE bytes)."""
    kty, alg = cose.get(_KTY), cose.get(_ALG)
    jwk: dict[str, Any]
    if kty == _EC2 and cose.get(_CRV) in _EC_CURVES:
        jwk = {
            "kty": "EC",
            "crv": _EC_CURVES[cose[_CRV]],
            "x": b64url(cose[_X]),
            "y": b64url(cose[_Y]),
        }
    elif kty == _OKP and cose.get(_CRV) in _OKP_CURVES:
        jwk = {"kty": "OKP", "crv": _OKP_CURVES[cose[_CRV]], "x": b64url(cose[_X])}
    elif kty == _RSA:
        jwk = {"kty": "RSA", "n": b64url(cose[_N]), "e": b64url(cose[_E])}
    else:
        raise ValueError(f"unsupported COSE key type {kty!r}")
    if alg in _ALGORITHMS:
        jwk["alg"] = _ALGORITHMS[alg]
    return jwk
