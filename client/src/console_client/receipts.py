"""Approval receipts: what the console signs when an instance becomes ready, checked here.

A receipt is a compact JWS (Ed25519, `alg` EdDSA, `typ` approval-receipt+jwt, `kid` naming the
key in the console's `/.well-known/jwks.json`). It names the instance, the principal, the task
class, who approved which slot, and the SHA-256 of the confirmed bindings, never the values
themselves: whoever executes the action checks that the arguments it is about to use hash to
`bindings_digest`, and that the receipt is used once (a `jti` ledger offline, or `redeem` online).

The console signs with one JOSE library (joserfc) and this module verifies with another (PyJWT
with cryptography), so a quirk of one cannot pass its own check unnoticed.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import jwt

from console_client.digest import bindings_digest as digest_of
from console_client.errors import (
    ReceiptAudienceMismatch,
    ReceiptDigestMismatch,
    ReceiptExpired,
    ReceiptInvalid,
    ReceiptIssuerMismatch,
    ReceiptKeyUnknown,
    ReceiptSignatureInvalid,
)

ALGORITHM = "EdDSA"
TOKEN_TYPE = "approval-receipt+jwt"
JWKS_PATH = "/.well-known/jwks.json"
REQUIRED_CLAIMS = [
    "iss",
    "sub",
    "aud",
    "jti",
    "iat",
    "exp",
    "instance",
    "task_class",
    "bindings_digest",
]


@dataclass(frozen=True)
class Approval:
    """One person's answer that the receipt covers: `action` is confirm, edit or answer."""

    slot: str
    action: str
    by: str
    at: datetime | str  # ISO time; kept as the string when it does not parse


@dataclass(frozen=True)
class Receipt:
    """A verified receipt's claims (`token` is the receipt itself, to redeem or pass on)."""

    token: str
    jti: str
    instance_id: str
    task_class: str
    principal: str
    audience: str | tuple[str, ...]
    issuer: str
    issued_at: datetime
    expires_at: datetime
    bindings_digest: str
    decisions: tuple[str, ...]
    approvals: tuple[Approval, ...]
    key_id: str
    # The person's passkey assertion over these bindings, where the decision required one:
    # check it with `verify_signature` and the person's public keys.
    passkey: dict[str, Any] | None = None


@dataclass(frozen=True)
class Redemption:
    """The console's record that a receipt was used: the first redemption only succeeds."""

    jti: str
    instance_id: str
    bindings_digest: str
    redeemed_at: datetime | str

    @classmethod
    def from_payload(cls, payload: Mapping[str, Any]) -> Redemption:
        return cls(
            jti=str(payload.get("jti")),
            instance_id=str(payload.get("instance")),
            bindings_digest=str(payload.get("bindings_digest")),
            redeemed_at=_time(payload.get("redeemed_at")),
        )


def _time(value: Any) -> datetime | str:
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            return value
    return str(value)


def _key_for(kid: str, jwks: Mapping[str, Any]) -> Any:
    """The public key the header names; keys of other types or that do not parse are skipped."""
    keys = jwks.get("keys")
    for entry in keys if isinstance(keys, list) else []:
        if not isinstance(entry, Mapping) or entry.get("kid") != kid:
            continue
        try:
            return jwt.PyJWK(dict(entry), algorithm=ALGORITHM).key
        except (jwt.PyJWKError, jwt.InvalidKeyError) as exc:
            raise ReceiptKeyUnknown(f"key {kid} in the JWKS is not an Ed25519 key: {exc}") from exc
    raise ReceiptKeyUnknown(f"no key {kid!r} in the console's JWKS")


def key_id(token: str) -> str:
    """The `kid` a receipt's header names (not verified: only to pick the key)."""
    try:
        header = jwt.get_unverified_header(token)
    except jwt.DecodeError as exc:
        raise ReceiptInvalid(f"not a compact JWS: {exc}") from exc
    if header.get("alg") != ALGORITHM:
        raise ReceiptInvalid(f"receipts are signed with {ALGORITHM}, not {header.get('alg')!r}")
    if header.get("typ") != TOKEN_TYPE:
        raise ReceiptInvalid(f"the token's typ is {header.get('typ')!r}, not {TOKEN_TYPE}")
    kid = header.get("kid")
    if not isinstance(kid, str) or not kid:
        raise ReceiptInvalid("the receipt's header names no key (kid)")
    return kid


def verify_receipt(
    token: str,
    jwks: Mapping[str, Any],
    *,
    bindings: Mapping[str, Any] | None = None,
    audience: str | None = None,
    issuer: str | None = None,
    leeway: float = 0,
) -> Receipt:
    """Check a receipt against the console's public keys (a JWKS dict) and return its claims.

    Always checked: the header (EdDSA, the receipt type, a `kid` listed in `jwks`), the
    signature, `exp` and `iat`, and that every claim is there. `bindings=` (the exact arguments
    about to be executed) must hash to `bindings_digest`; `audience=` must be the `aud`;
    `issuer=` the `iss`. Raises the `ReceiptError` of the first check that failed.
    """
    key = _key_for(key_id(token), jwks)
    try:
        claims: dict[str, Any] = jwt.decode(
            token,
            key,
            algorithms=[ALGORITHM],
            audience=audience,
            issuer=issuer,
            leeway=leeway,
            options={"require": REQUIRED_CLAIMS, "verify_aud": audience is not None},
        )
    except jwt.ExpiredSignatureError as exc:
        raise ReceiptExpired("the receipt has expired") from exc
    except jwt.InvalidSignatureError as exc:
        raise ReceiptSignatureInvalid("the receipt's signature does not verify") from exc
    except jwt.InvalidAudienceError as exc:
        raise ReceiptAudienceMismatch(f"the receipt is not for {audience!r}: {exc}") from exc
    except jwt.InvalidIssuerError as exc:
        raise ReceiptIssuerMismatch(f"the receipt was not issued by {issuer!r}") from exc
    except jwt.InvalidTokenError as exc:  # malformed, a claim missing, iat in the future...
        raise ReceiptInvalid(f"the receipt is invalid: {exc}") from exc
    receipt = _receipt(token, claims, key_id(token))
    if bindings is not None:
        actual = digest_of(bindings)
        if not hmac.compare_digest(actual, receipt.bindings_digest):
            raise ReceiptDigestMismatch(
                f"the arguments hash to {actual}, the receipt approves {receipt.bindings_digest}"
            )
    return receipt


def _receipt(token: str, claims: Mapping[str, Any], kid: str) -> Receipt:
    approvals = claims.get("approvals") or []
    decisions = claims.get("decisions") or []
    if not isinstance(approvals, list) or not isinstance(decisions, list):
        raise ReceiptInvalid("the receipt's approvals and decisions must be lists")
    if not all(isinstance(a, Mapping) for a in approvals):
        raise ReceiptInvalid("each approval must be an object")
    aud = claims["aud"]
    passkey = claims.get("passkey")
    return Receipt(
        passkey=dict(passkey) if isinstance(passkey, Mapping) else None,
        token=token,
        jti=str(claims["jti"]),
        instance_id=str(claims["instance"]),
        task_class=str(claims["task_class"]),
        principal=str(claims["sub"]),
        audience=tuple(str(a) for a in aud) if isinstance(aud, list) else str(aud),
        issuer=str(claims["iss"]),
        issued_at=datetime.fromtimestamp(float(claims["iat"]), UTC),
        expires_at=datetime.fromtimestamp(float(claims["exp"]), UTC),
        bindings_digest=str(claims["bindings_digest"]),
        decisions=tuple(str(d) for d in decisions),
        approvals=tuple(
            Approval(
                slot=str(a.get("slot")),
                action=str(a.get("action")),
                by=str(a.get("by")),
                at=_time(a.get("at")),
            )
            for a in approvals
        ),
        key_id=kid,
    )
