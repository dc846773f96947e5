"""Approval receipts: what the console signs when an instance becomes ready, checked here.

A receipt is a compact JWS (Ed25519, `alg` EdDSA, `typ` approval-receipt+jwt, `kid` naming the
key in the console's `/.well-known/jwks.json`). It names the instance, the principal, the task
class, who approved which slot, and the SHA-256 of the confirmed bindings, never the values
themselves: whoever executes the action checks that the arguments it is about to use hash to
`bindings_digest`, and that the receipt is used once (a `jti` ledger offline, or `redeem` online).

A receipt also says who vouched for each bound value (`bound`: per slot its `route`, `rule`,
`source` and `via`, one of console, runtime or policy) and lists `vouched_by_runtime`, the
irreversible slots bound on a runtime's report alone; `verify_receipt` refuses those unless told
`person_required=False`. `worlds_digest` binds the world each irreversible value refers to, and
`canonicalization` names the form its digests are over ("RFC8785"; none on receipts issued
before it, whose digests are over the legacy form).

The console signs with one JOSE library (joserfc) and this module verifies with another (PyJWT
with cryptography), so a quirk of one cannot pass its own check unnoticed.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import jwt

from console_client.digest import CANONICALIZATION
from console_client.digest import bindings_digest as digest_of
from console_client.digest import worlds_digest as worlds_digest_of
from console_client.errors import (
    ReceiptAudienceMismatch,
    ReceiptDigestMismatch,
    ReceiptExpired,
    ReceiptInvalid,
    ReceiptIssuerMismatch,
    ReceiptKeyUnknown,
    ReceiptNotApprovedByPerson,
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
class Bound:
    """Who vouched for one bound value: `via` is console (the person answered, confirmed or
    let it stand in the console), runtime (bound on the runtime's report) or policy
    (cosmetic); `route`, `rule` and `source` are how the console planned it."""

    route: str
    rule: str
    source: str
    via: str


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
    # SHA-256 of the canonical JSON of {slot: world_ref} over the bound irreversible slots
    # (None on receipts issued before worlds were bound).
    worlds_digest: str | None = None
    # Per bound slot, who vouched for its value (empty on receipts issued before).
    bound: Mapping[str, Bound] = field(default_factory=dict)
    # The irreversible slots bound on a runtime's report alone, no person's act in the console.
    vouched_by_runtime: tuple[str, ...] = ()
    # The form the digests are over: "RFC8785", or None (the legacy form, older receipts).
    canonicalization: str | None = None


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
    worlds: Mapping[str, Any] | None = None,
    audience: str | None = None,
    issuer: str | None = None,
    leeway: float = 0,
    person_required: bool = True,
) -> Receipt:
    """Check a receipt against the console's public keys (a JWKS dict) and return its claims.

    Always checked: the header (EdDSA, the receipt type, a `kid` listed in `jwks`), the
    signature, `exp` and `iat`, that every claim is there, and (unless `person_required=False`)
    that no irreversible value was bound on a runtime's report alone (`vouched_by_runtime`
    empty; else `ReceiptNotApprovedByPerson`). `bindings=` (the exact arguments about to be
    executed) must hash to `bindings_digest`; `worlds=` (`{slot: world_ref}` over the bound
    irreversible slots, null where a slot has none) to `worlds_digest`; both in the form the
    receipt's `canonicalization` names. `audience=` must be the `aud`; `issuer=` the `iss`.
    Raises the `ReceiptError` of the first check that failed.
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
    if person_required and receipt.vouched_by_runtime:
        slots = ", ".join(receipt.vouched_by_runtime)
        raise ReceiptNotApprovedByPerson(
            f"no person approved this receipt in the console: the irreversible values of "
            f"{slots} were bound on the runtime's report alone (vouched_by_runtime). To accept "
            f"the runtime's word for them, verify with person_required=False.",
            receipt.vouched_by_runtime,
        )
    if bindings is not None:
        actual = digest_of(bindings, receipt.canonicalization)
        if not hmac.compare_digest(actual, receipt.bindings_digest):
            raise ReceiptDigestMismatch(
                f"the arguments hash to {actual}, the receipt approves {receipt.bindings_digest}"
            )
    if worlds is not None:
        if receipt.worlds_digest is None:
            raise ReceiptDigestMismatch(
                "the receipt binds no world (no worlds_digest: issued before worlds were "
                "bound), so it cannot vouch for these world references"
            )
        actual = worlds_digest_of(worlds, receipt.canonicalization)
        if not hmac.compare_digest(actual, receipt.worlds_digest):
            raise ReceiptDigestMismatch(
                f"the world references hash to {actual}, the receipt approves "
                f"{receipt.worlds_digest}"
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
    canonicalization = claims.get("canonicalization")
    if canonicalization not in (None, CANONICALIZATION):
        raise ReceiptInvalid(
            f"the receipt's digests are in a form this client does not know "
            f"(canonicalization {canonicalization!r}; it knows {CANONICALIZATION})"
        )
    worlds = claims.get("worlds_digest")
    if worlds is not None and not isinstance(worlds, str):
        raise ReceiptInvalid("the receipt's worlds_digest must be a string")
    vouched = claims.get("vouched_by_runtime") or []
    if not isinstance(vouched, list) or not all(isinstance(slot, str) for slot in vouched):
        raise ReceiptInvalid("the receipt's vouched_by_runtime must be a list of slot keys")
    return Receipt(
        worlds_digest=worlds,
        bound=_bound(claims.get("bound")),
        vouched_by_runtime=tuple(vouched),
        canonicalization=canonicalization,
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


def _bound(claim: Any) -> dict[str, Bound]:
    if claim is None:
        return {}
    if not isinstance(claim, Mapping) or not all(isinstance(v, Mapping) for v in claim.values()):
        raise ReceiptInvalid("the receipt's bound claim must map each slot to an object")
    return {
        str(slot): Bound(
            route=str(entry.get("route")),
            rule=str(entry.get("rule")),
            source=str(entry.get("source")),
            via=str(entry.get("via")),
        )
        for slot, entry in claim.items()
    }
