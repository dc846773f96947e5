"""verify_receipt against a JWKS, with test receipts signed here (PyJWT + Ed25519); redeem and
the receipt-aware parts of resolve against the scripted console."""

from __future__ import annotations

import base64
import json
import time
import uuid
from datetime import UTC, datetime
from typing import Any

import httpx
import jwt
import pytest
from conftest import BASE, INSTANCE_ID, KEY, FakeConsole, instance, ready
from console_client import (
    Approval,
    BadRequest,
    Console,
    DigestMismatch,
    ReceiptAudienceMismatch,
    ReceiptDigestMismatch,
    ReceiptError,
    ReceiptExpired,
    ReceiptInvalid,
    ReceiptIssuerMismatch,
    ReceiptKeyUnknown,
    ReceiptNotApprovedByPerson,
    ReceiptRedeemed,
    ReceiptRevoked,
    ReceiptSignatureInvalid,
    Redemption,
    Resolution,
    bindings_digest,
    verify_receipt,
    worlds_digest,
)
from console_client.digest import legacy_canonical_json
from console_client.errors import Conflict
from console_client.receipts import Bound
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

AT = "2026-12-01T10:00:00+00:00"
BINDINGS = {"recipient_account": "NL91 ABNA 0417 1643 00", "amount": 120, "memo": "rent"}
WORLDS = {"recipient_account": {"account": "acc_42", "verified_at": AT}, "amount": None}
BOUND = {
    "recipient_account": {"route": "CONFIRM", "rule": "R3", "source": "tool", "via": "console"},
    "amount": {"route": "CONFIRM", "rule": "R3", "source": "tool", "via": "console"},
    "memo": {"route": "SILENT", "rule": "R2", "source": "tool", "via": "policy"},
}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


class Signer:
    """An Ed25519 key as the console holds it: signs receipts, publishes its JWK."""

    def __init__(self, kid: str) -> None:
        self.kid = kid
        self.key = Ed25519PrivateKey.generate()

    def jwk(self) -> dict[str, str]:
        raw = self.key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        return {"kty": "OKP", "crv": "Ed25519", "x": _b64(raw), "kid": self.kid, "alg": "EdDSA"}

    def sign(self, headers: dict[str, Any] | None = None, **changes: Any) -> str:
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": BASE,
            "sub": "alice",
            "aud": "agent-runtime",
            "jti": str(uuid.uuid4()),
            "iat": now,
            "exp": now + 3600,
            "instance": INSTANCE_ID,
            "task_class": "payments.transfer",
            "decisions": ["send_transfer"],
            "bindings_digest": bindings_digest(BINDINGS),
            "worlds_digest": worlds_digest(WORLDS),
            "bound": BOUND,
            "vouched_by_runtime": [],
            "canonicalization": "RFC8785",
            "approvals": [{"slot": "recipient_account", "action": "edit", "by": "alice", "at": AT}],
        }
        claims.update(changes)
        header = {"kid": self.kid, "typ": "approval-receipt+jwt", **(headers or {})}
        header = {name: value for name, value in header.items() if value is not None}
        return jwt.encode(claims, self.key, algorithm="EdDSA", headers=header)


@pytest.fixture
def first() -> Signer:
    return Signer("key-1")


@pytest.fixture
def second() -> Signer:
    return Signer("key-2")


def _jwks(*signers: Signer) -> dict[str, Any]:
    return {"keys": [s.jwk() for s in signers]}


def test_a_receipt_verifies_into_its_typed_claims(first: Signer) -> None:
    token = first.sign()
    receipt = verify_receipt(token, _jwks(first), bindings=BINDINGS, audience="agent-runtime")
    assert receipt.token == token
    assert (receipt.instance_id, receipt.task_class, receipt.principal) == (
        INSTANCE_ID,
        "payments.transfer",
        "alice",
    )
    assert (receipt.audience, receipt.issuer, receipt.key_id) == ("agent-runtime", BASE, "key-1")
    assert receipt.decisions == ("send_transfer",)
    assert receipt.bindings_digest == bindings_digest(BINDINGS)
    assert receipt.approvals == (
        Approval(
            slot="recipient_account",
            action="edit",
            by="alice",
            at=datetime(2026, 12, 1, 10, tzinfo=UTC),
        ),
    )
    assert receipt.expires_at > receipt.issued_at
    assert receipt.worlds_digest == worlds_digest(WORLDS)
    assert receipt.bound["memo"] == Bound(route="SILENT", rule="R2", source="tool", via="policy")
    assert receipt.vouched_by_runtime == ()
    assert receipt.canonicalization == "RFC8785"
    with pytest.raises(AttributeError):
        receipt.jti = "other"  # type: ignore[misc]


def test_rotation_a_token_signed_by_the_second_key_verifies(first: Signer, second: Signer) -> None:
    receipt = verify_receipt(second.sign(), _jwks(first, second), bindings=BINDINGS)
    assert receipt.key_id == "key-2"


def test_an_unknown_kid_fails(first: Signer, second: Signer) -> None:
    with pytest.raises(ReceiptKeyUnknown, match="key-2"):
        verify_receipt(second.sign(), _jwks(first))


def test_a_key_that_claims_anothers_kid_fails_the_signature(first: Signer) -> None:
    impostor = Signer("key-1")
    with pytest.raises(ReceiptSignatureInvalid):
        verify_receipt(impostor.sign(), _jwks(first))


@pytest.mark.parametrize(
    ("claim", "value"),
    [
        ("bindings_digest", "0" * 64),
        ("instance", str(uuid.uuid4())),
        ("sub", "mallory"),
        ("aud", "another-runtime"),
        ("exp", int(time.time()) + 10**6),
        ("decisions", []),
    ],
)
def test_a_changed_claim_fails_the_signature(first: Signer, claim: str, value: Any) -> None:
    header, payload, signature = first.sign().split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims[claim] = value
    forged = ".".join([header, _b64(json.dumps(claims).encode()), signature])
    with pytest.raises(ReceiptSignatureInvalid):
        verify_receipt(forged, _jwks(first))


def test_the_wrong_arguments_fail_the_digest(first: Signer) -> None:
    other = {**BINDINGS, "amount": 999}
    with pytest.raises(ReceiptDigestMismatch, match="approves") as caught:
        verify_receipt(first.sign(), _jwks(first), bindings=other)
    assert isinstance(caught.value, DigestMismatch)  # caught by code that catches either
    fewer = {k: v for k, v in BINDINGS.items() if k != "memo"}
    with pytest.raises(ReceiptDigestMismatch):
        verify_receipt(first.sign(), _jwks(first), bindings=fewer)


def test_an_expired_receipt_fails(first: Signer) -> None:
    past = int(time.time()) - 7200
    with pytest.raises(ReceiptExpired):
        verify_receipt(first.sign(iat=past, exp=past + 60), _jwks(first), bindings=BINDINGS)


def test_another_audience_or_issuer_fails(first: Signer) -> None:
    token = first.sign()
    with pytest.raises(ReceiptAudienceMismatch):
        verify_receipt(token, _jwks(first), audience="payments-service")
    with pytest.raises(ReceiptIssuerMismatch):
        verify_receipt(token, _jwks(first), issuer="https://evil.test")
    assert verify_receipt(token, _jwks(first), issuer=BASE).issuer == BASE


@pytest.mark.parametrize(
    "token",
    [
        "not a token",
        "a.b.c",
        "",
    ],
)
def test_a_malformed_token_is_invalid(first: Signer, token: str) -> None:
    with pytest.raises(ReceiptInvalid):
        verify_receipt(token, _jwks(first))


@pytest.mark.parametrize(
    "header",
    [{"typ": "JWT"}, {"kid": None}, {"kid": ""}],
)
def test_a_header_that_is_not_a_receipts_is_invalid(first: Signer, header: dict[str, Any]) -> None:
    with pytest.raises(ReceiptInvalid):
        verify_receipt(first.sign(headers=header), _jwks(first))


def test_another_algorithm_is_invalid(first: Signer) -> None:
    token = jwt.encode(
        {"sub": "alice"}, "shared-secret-of-32-bytes-or-more!", algorithm="HS256",
        headers={"kid": "key-1", "typ": "approval-receipt+jwt"},
    )  # fmt: skip
    with pytest.raises(ReceiptInvalid, match="EdDSA"):
        verify_receipt(token, _jwks(first))


@pytest.mark.parametrize("missing", ["jti", "instance", "bindings_digest", "aud", "exp", "sub"])
def test_a_missing_claim_is_invalid(first: Signer, missing: str) -> None:
    with pytest.raises(ReceiptInvalid, match=missing):
        verify_receipt(first.sign(**{missing: None}), _jwks(first))


def test_every_refusal_is_a_receipt_error() -> None:
    for error in (
        ReceiptInvalid, ReceiptKeyUnknown, ReceiptSignatureInvalid, ReceiptExpired,
        ReceiptAudienceMismatch, ReceiptIssuerMismatch, ReceiptDigestMismatch,
        ReceiptRedeemed, ReceiptRevoked, ReceiptNotApprovedByPerson,
    ):  # fmt: skip
        assert issubclass(error, ReceiptError)


# --- what a receipt vouches for: the person's own act, the world, the canonical form --------


@pytest.mark.parametrize("person_required", [True, False])
@pytest.mark.parametrize("vouched", [[], ["amount"], ["recipient_account", "amount"]])
def test_values_a_runtime_vouched_for_are_refused_unless_the_caller_accepts_them(
    first: Signer, vouched: list[str], person_required: bool
) -> None:
    token = first.sign(vouched_by_runtime=vouched)
    verify = lambda: verify_receipt(  # noqa: E731
        token, _jwks(first), bindings=BINDINGS, person_required=person_required
    )
    if vouched and person_required:
        with pytest.raises(ReceiptNotApprovedByPerson) as caught:
            verify()
        assert caught.value.slots == tuple(vouched)
        message = str(caught.value)
        assert all(slot in message for slot in vouched)
        assert "person_required=False" in message
    else:
        assert verify().vouched_by_runtime == tuple(vouched)


def test_a_receipt_issued_before_the_vouched_claim_is_a_persons(first: Signer) -> None:
    old = first.sign(vouched_by_runtime=None, bound=None, worlds_digest=None)
    receipt = verify_receipt(old, _jwks(first), bindings=BINDINGS)
    assert (receipt.vouched_by_runtime, receipt.bound, receipt.worlds_digest) == ((), {}, None)


def test_the_runtime_vouched_check_comes_before_the_arguments(first: Signer) -> None:
    """Values no person approved are refused as such, whatever arguments are offered."""
    token = first.sign(vouched_by_runtime=["amount"])
    with pytest.raises(ReceiptNotApprovedByPerson):
        verify_receipt(token, _jwks(first), bindings={**BINDINGS, "amount": 999})
    with pytest.raises(ReceiptDigestMismatch):
        verify_receipt(
            token, _jwks(first), bindings={**BINDINGS, "amount": 999}, person_required=False
        )


def test_the_world_references_must_hash_to_worlds_digest(first: Signer) -> None:
    token = first.sign()
    assert verify_receipt(token, _jwks(first), worlds=WORLDS).worlds_digest == worlds_digest(WORLDS)
    moved = {**WORLDS, "recipient_account": {"account": "acc_43", "verified_at": AT}}
    for other in (moved, {"recipient_account": WORLDS["recipient_account"]}):
        with pytest.raises(ReceiptDigestMismatch, match="world references"):
            verify_receipt(token, _jwks(first), bindings=BINDINGS, worlds=other)
    with pytest.raises(ReceiptDigestMismatch, match="no worlds_digest"):
        verify_receipt(first.sign(worlds_digest=None), _jwks(first), worlds=WORLDS)


FLOATY = {"recipient_account": "NL91", "amount": 120.0, "rate": 1e-7}
LEGACY_DIGEST = bindings_digest(FLOATY, None)


@pytest.mark.parametrize("claim", ["RFC8785", None])
@pytest.mark.parametrize("form", ["RFC8785", "legacy"])
def test_digests_are_checked_in_the_form_the_receipt_names(
    first: Signer, claim: str | None, form: str
) -> None:
    """A receipt issued before RFC 8785 has no claim and a digest of Python's JSON; it still
    verifies. A digest in the other form than the claim says is refused."""
    digest = bindings_digest(FLOATY) if form == "RFC8785" else LEGACY_DIGEST
    token = first.sign(bindings_digest=digest, canonicalization=claim)
    if (claim == "RFC8785") == (form == "RFC8785"):
        receipt = verify_receipt(token, _jwks(first), bindings=FLOATY)
        assert receipt.canonicalization == claim
    else:
        with pytest.raises(ReceiptDigestMismatch):
            verify_receipt(token, _jwks(first), bindings=FLOATY)


def test_the_two_forms_differ_where_javascript_reads_numbers_otherwise() -> None:
    assert (
        legacy_canonical_json(FLOATY) == '{"amount":120.0,"rate":1e-07,"recipient_account":"NL91"}'
    )
    assert bindings_digest(FLOATY) != LEGACY_DIGEST
    assert bindings_digest(FLOATY) == bindings_digest({**FLOATY, "amount": 120})


@pytest.mark.parametrize(
    ("claim", "value"),
    [
        ("canonicalization", "JCS-v2"),
        ("canonicalization", 8785),
        ("vouched_by_runtime", "amount"),
        ("vouched_by_runtime", [1]),
        ("bound", ["amount"]),
        ("bound", {"amount": "console"}),
        ("worlds_digest", 5),
    ],
)
def test_malformed_new_claims_are_invalid(first: Signer, claim: str, value: Any) -> None:
    with pytest.raises(ReceiptInvalid, match=claim):
        verify_receipt(first.sign(**{claim: value}), _jwks(first), person_required=False)


# --- the console's side: JWKS fetched and cached, redeem ------------------------------------


def _console(fake: FakeConsole) -> Console:
    return Console(BASE, KEY, transport=httpx.MockTransport(fake))


def _serve_jwks(fake: FakeConsole, *key_sets: dict[str, Any]) -> list[httpx.Request]:
    fetched: list[httpx.Request] = []
    served = list(key_sets)

    def jwks(request: httpx.Request) -> httpx.Response:
        fetched.append(request)
        return httpx.Response(200, json=served.pop(0) if len(served) > 1 else served[0])

    fake.routes[("GET", "/.well-known/jwks.json")] = [jwks]
    return fetched


def test_the_console_fetches_its_jwks_once_and_again_after_a_rotation(
    fake: FakeConsole, first: Signer, second: Signer
) -> None:
    fetched = _serve_jwks(fake, _jwks(first), _jwks(first, second))
    console = _console(fake)
    assert console.verify_receipt(first.sign(), bindings=BINDINGS).key_id == "key-1"
    assert console.verify_receipt(first.sign()).key_id == "key-1"
    assert len(fetched) == 1
    assert str(fetched[0].url) == f"{BASE}/.well-known/jwks.json"
    console._keys.fetched_at -= 60  # a refetch for an unknown key waits a few seconds
    assert console.verify_receipt(second.sign()).key_id == "key-2"
    assert len(fetched) == 2


def test_the_console_passes_every_check_on(fake: FakeConsole, first: Signer) -> None:
    _serve_jwks(fake, _jwks(first))
    console = _console(fake)
    token = first.sign(vouched_by_runtime=["amount"])
    with pytest.raises(ReceiptNotApprovedByPerson):
        console.verify_receipt(token, bindings=BINDINGS)
    receipt = console.verify_receipt(token, bindings=BINDINGS, worlds=WORLDS, person_required=False)
    assert receipt.vouched_by_runtime == ("amount",)
    with pytest.raises(ReceiptDigestMismatch):
        console.verify_receipt(first.sign(), worlds={})


def test_a_key_still_unknown_after_a_refetch_fails(
    fake: FakeConsole, first: Signer, second: Signer
) -> None:
    _serve_jwks(fake, _jwks(first))
    with pytest.raises(ReceiptKeyUnknown):
        _console(fake).verify_receipt(second.sign())


def test_redeem_returns_a_typed_redemption(fake: FakeConsole) -> None:
    digest = bindings_digest(BINDINGS)
    answer = {
        "jti": "j1",
        "instance": INSTANCE_ID,
        "bindings_digest": digest,
        "redeemed_at": "2026-12-01T10:00:00+00:00",
    }
    fake.on("POST", "receipts/redeem/", answer)
    redemption = _console(fake).redeem("token", bindings_digest=digest)
    assert redemption == Redemption(
        jti="j1",
        instance_id=INSTANCE_ID,
        bindings_digest=digest,
        redeemed_at=datetime(2026, 12, 1, 10, tzinfo=UTC),
    )
    assert fake.bodies() == [{"receipt": "token", "bindings_digest": digest}]
    _console(fake).redeem("token")
    assert fake.bodies()[-1] == {"receipt": "token"}


@pytest.mark.parametrize(
    ("code", "error"), [("receipt_redeemed", ReceiptRedeemed), ("receipt_revoked", ReceiptRevoked)]
)
def test_a_second_redemption_raises_its_own_conflict(
    fake: FakeConsole, code: str, error: type[Conflict]
) -> None:
    fake.on("POST", "receipts/redeem/", (409, {"error": code, "detail": "no", "fields": {}}))
    with pytest.raises(error) as caught:
        _console(fake).redeem("token")
    assert isinstance(caught.value, Conflict) and caught.value.status == 409


def test_redeem_in_the_async_console(fake: FakeConsole, first: Signer) -> None:
    import asyncio

    from console_client import AsyncConsole

    fake.on("POST", "receipts/redeem/", {"jti": "j", "instance": INSTANCE_ID})
    _serve_jwks(fake, _jwks(first))

    async def run() -> tuple[Redemption, str]:
        async with AsyncConsole(BASE, KEY, transport=httpx.MockTransport(fake)) as console:
            receipt = await console.verify_receipt(first.sign(), bindings=BINDINGS)
            return await console.redeem(receipt.token), receipt.key_id

    redemption, kid = asyncio.run(run())
    assert (redemption.jti, kid) == ("j", "key-1")


# --- resolve: slots, audience, the receipt --------------------------------------------------


def test_resolve_names_no_slots_by_default_and_passes_slots_and_audience(
    console: Console, fake: FakeConsole
) -> None:
    fake.on("POST", "instances/", (200, ready({"iban": "NL91"}) | {"receipt": "tok"}))
    console.resolve("payments.refund", "alice", {"iban": "NL91"})
    console.resolve(
        "payments.refund", "alice", {"iban": "NL91"}, slots=["iban"], audience="refunds"
    )
    default, named = fake.bodies()
    assert "slots" not in default and "audience" not in default
    assert (named["slots"], named["audience"]) == (["iban"], "refunds")


def test_a_ready_plan_is_read_again_for_its_receipt(console: Console, fake: FakeConsole) -> None:
    bindings = {"iban": "NL91"}
    fake.on("POST", "instances/", (201, instance("open")))
    plan = {"id": INSTANCE_ID, "status": "ready", "bindings": bindings}
    fake.on("POST", f"instances/{INSTANCE_ID}/plan/", plan | {"bindings_digest": "x"})
    read = ready(bindings) | {"receipt": "tok", "receipt_state": "valid"}
    fake.on("GET", f"instances/{INSTANCE_ID}/", read)
    resolution = console.resolve("payments.refund", "alice", bindings)
    assert (resolution.receipt, resolution.receipt_state) == ("tok", "valid")
    assert resolution.verified_bindings() == bindings


def test_resolve_with_an_unknown_key_raises_the_consoles_400(
    console: Console, fake: FakeConsole
) -> None:
    body = {"error": "unknown_slot", "detail": "no slot ref", "fields": {"slots": ["ref"]}}
    fake.on("POST", "instances/", (400, body))
    with pytest.raises(BadRequest) as caught:
        console.resolve("payments.refund", "alice", {"iban": "NL91", "ref": "r1"})
    assert caught.value.error == "unknown_slot"
    assert len(fake.requests) == 1  # nothing planned after the refusal


def test_register_task_class_with_open_slots(console: Console, fake: FakeConsole) -> None:
    fake.on("PUT", "task-classes/claude-code.Bash/", {"key": "claude-code.Bash"})
    console.register_task_class("claude-code.Bash", slots=[], open_slots=True)
    assert fake.bodies()[0]["open_slots"] is True


def test_register_task_class_names_its_subject_only_when_given(
    console: Console, fake: FakeConsole
) -> None:
    fake.on("PUT", "task-classes/payments.refund/", {"key": "payments.refund"})
    console.register_task_class("payments.refund", slots=[{"key": "order"}], subject_key="order")
    console.register_task_class("payments.refund", slots=[{"key": "order"}])
    first, second = fake.bodies()
    assert first["subject_key"] == "order"
    assert "subject_key" not in second  # left out: the class keeps its subject


@pytest.mark.parametrize(
    ("state", "error"),
    [
        ("redeemed", ReceiptRedeemed),
        ("revoked", ReceiptRevoked),
        ("expired", ReceiptExpired),
        (None, ReceiptInvalid),
    ],
)
def test_a_ready_instance_without_its_token_names_why(
    state: str | None, error: type[ReceiptError]
) -> None:
    from console_client import Resolution

    payload = ready(BINDINGS) | {"receipt": None, "receipt_state": state}
    with pytest.raises(error):
        Resolution.from_payload(payload, BASE).usable_receipt()
    valid = ready(BINDINGS) | {"receipt": "tok", "receipt_state": "valid"}
    assert Resolution.from_payload(valid, BASE).usable_receipt() == "tok"


# --- a confirmation: verified, then redeemed here or handed on ------------------------------

REDEEMED = {"jti": "j", "instance": INSTANCE_ID, "bindings_digest": bindings_digest(BINDINGS)}


@pytest.mark.parametrize("redeem", ["agent", "tool"])
@pytest.mark.parametrize("state", ["valid", "redeemed", "raced", "revoked", "expired"])
def test_a_confirmation_over_every_receipt_state_and_redeem_mode(
    fake: FakeConsole, first: Signer, state: str, redeem: str
) -> None:
    """An unused receipt is verified, then redeemed by the agent or handed on for the tool
    server; a used one (or one used by a racing run between the read and the redemption) makes
    a replay, never an error; a revoked or expired one raises."""
    _serve_jwks(fake, _jwks(first))
    token = first.sign(aud="payments-service")
    held = {"valid": token, "raced": token}.get(state)
    payload = ready(BINDINGS) | {"receipt": held, "receipt_state": state}
    if state == "raced":
        payload["receipt_state"] = "valid"
        fake.on("POST", "receipts/redeem/", (409, {"error": "receipt_redeemed", "fields": {}}))
    else:
        fake.on("POST", "receipts/redeem/", REDEEMED)
    resolution = Resolution.from_payload(payload, BASE)
    console = _console(fake)
    if state in ("revoked", "expired"):
        with pytest.raises(ReceiptRevoked if state == "revoked" else ReceiptExpired):
            console.confirmation(resolution, audience="payments-service", redeem=redeem)
        return
    confirmation = console.confirmation(resolution, audience="payments-service", redeem=redeem)
    assert confirmation == BINDINGS and confirmation.instance_id == INSTANCE_ID
    redeemed_here = [r for r in fake.requests if r.url.path.endswith("/receipts/redeem/")]
    replay = state == "redeemed" or (state == "raced" and redeem == "agent")
    assert confirmation.replayed is replay
    assert confirmation.redeemed is (not replay and redeem == "agent")
    assert confirmation.receipt == (None if replay else token)
    assert len(redeemed_here) == (1 if state in ("valid", "raced") and redeem == "agent" else 0)


def test_a_confirmation_checks_the_audience_and_the_bindings_it_hands_over(
    fake: FakeConsole, first: Signer
) -> None:
    _serve_jwks(fake, _jwks(first))
    fake.on("POST", "receipts/redeem/", REDEEMED)
    token = first.sign()
    resolution = Resolution.from_payload(ready(BINDINGS) | {"receipt": token}, BASE)
    console = _console(fake)
    with pytest.raises(ReceiptAudienceMismatch):
        console.confirmation(resolution, audience="payments-service")
    with pytest.raises(DigestMismatch):  # a subset: not what the person confirmed
        console.confirmation(resolution, bindings={"amount": 120})
    with pytest.raises(ValueError, match="redeem must be one of"):
        console.confirmation(resolution, redeem="server")
    assert not any(r.url.path.endswith("/receipts/redeem/") for r in fake.requests)
