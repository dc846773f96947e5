"""Reads of passkeys and of instances' signatures."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, cast
from uuid import UUID

from django.contrib.auth.models import Group, User
from django.db.models import Model
from webauthn.helpers import parse_cbor

from beliefs.domain.passkeys import b64url, cose_to_jwk
from beliefs.errors import NotFound
from beliefs.models import Decision, Passkey, SignatureAttempt, Slot, TaskInstance
from beliefs.selectors import rows
from beliefs.selectors.shapes import (
    PasskeyPublicJSON,
    PersonPasskeysJSON,
    SignatureEvidenceJSON,
    SignatureJSON,
)


def decisions_requiring_signature(instance: TaskInstance) -> list[str]:
    """The keys of the decisions the action's slots feed that require a signature."""
    return [key for key, signed in action_decisions(instance).items() if signed]


@dataclass(frozen=True)
class FedDecision:
    """A decision the action's slots feed, as the ready gates and the receipt read it."""

    key: str
    label: str
    requires_signature: bool
    approvals_required: int
    approvers_id: int | None  # its approvers group (M-of-N approval), if it has one
    approvers_name: str | None


_FED_COLUMNS: rows.Fields = (
    (Decision, "key"),
    (Decision, "label"),
    (Decision, "requires_signature"),
    (Decision, "approvals_required"),
    (Decision, "approvers_id"),
    (Group, "name"),
    (Slot, "key"),
)


@cache
def _fed_sql(vendor: str) -> str:
    """The decisions of a task class (the first parameter) that a slot of the action feeds (the
    second: the action's keys, a JSON list), by id, each once per such slot, with its approvers
    group's name and the slot's key."""
    col = rows.column
    through: type[Model] = Decision.slots.through
    fields = ", ".join(col(Decision, name) for _, name in _FED_COLUMNS[:5])
    return (
        f"SELECT {fields}, {col(Group, 'name')}, {col(Slot, 'key')} FROM {rows.table(Decision)}"
        f" LEFT OUTER JOIN {rows.table(Group)} ON {col(Group, 'id')} = {col(Decision, 'approvers')}"
        f" INNER JOIN {rows.table(through)} ON {col(through, 'decision')} = {col(Decision, 'id')}"
        f" INNER JOIN {rows.table(Slot)} ON {col(Slot, 'id')} = {col(through, 'slot')}"
        f" WHERE {col(Decision, 'task_class')} = %s"
        f" AND {rows.named_in(col(Slot, 'key'), vendor)} ORDER BY {col(Decision, 'id')}"
    )


def decisions_fed(instance: TaskInstance) -> list[FedDecision]:
    """The decisions the action's slots feed, by id (one query of fixed SQL, which every
    answer that readies an instance runs: named, with its figure, in the read layer's
    docstring; its ORM version is in `tests/oracles.py`): what `action_decisions` and
    `quorum.requirements_of` are read from."""
    params = [instance.task_class_id, rows.keys_param(instance.action_slots)]
    fed: dict[str, FedDecision] = {}
    for *decision, _ in rows.fetch(_fed_sql(rows.vendor()), params, _FED_COLUMNS):
        if decision[0] not in fed:  # once, however many of the action's slots feed it
            fed[decision[0]] = FedDecision(*decision)
    return list(fed.values())


def action_decisions(
    instance: TaskInstance, fed: Sequence[FedDecision] | None = None
) -> dict[str, bool]:
    """The decisions the action's slots feed, by key, each with whether it requires a
    signature, sorted by key: what `decisions_requiring_signature` and the receipt's decisions
    are read from. `fed`: `decisions_fed(instance)`, when the caller has read it."""
    found = fed if fed is not None else decisions_fed(instance)
    return dict(sorted((d.key, d.requires_signature) for d in found))


def signature_required(
    instance: TaskInstance, requiring: Callable[[], list[str]] | None = None
) -> bool:
    """Must the person sign before the instance is ready? Once asked, always (a downgrade of
    the decision binds nothing back); else when a decision of the action requires it.
    `requiring`: `decisions_requiring_signature` of the instance, as the caller reads it."""
    if instance.signature_due_at is not None:
        return True
    return bool(requiring() if requiring is not None else decisions_requiring_signature(instance))


def standing_signature(instance_id: Any) -> SignatureAttempt | None:
    """The instance's verified, not voided signature, if it has one."""
    return (
        SignatureAttempt.objects.filter(
            instance_id=instance_id, verified_at__isnull=False, voided_at__isnull=True
        )
        .select_related("passkey", "user")
        .first()
    )


def signature_holds(
    instance: TaskInstance, bindings_digest: str, worlds_digest: str | None = None
) -> bool:
    """A standing signature of exactly these bindings, bound with these worlds (by default the
    instance's)."""
    if worlds_digest is None:
        worlds_digest = instance.worlds_digest
    signature = standing_signature(instance.pk)
    return (
        signature is not None
        and signature.bindings_digest == bindings_digest
        and signature.worlds_digest == worlds_digest
    )


def active_passkeys(user: Any) -> list[Passkey]:
    return list(Passkey.objects.filter(user=user, removed_at__isnull=True).order_by("created_at"))


def has_passkey(user: Any) -> bool:
    return Passkey.objects.filter(user=user, removed_at__isnull=True).exists()


def passkey_by_credential(credential_id: str) -> Passkey | None:
    return (
        Passkey.objects.filter(credential_id=credential_id, removed_at__isnull=True)
        .select_related("user")
        .first()
    )


def signature_evidence(attempt: SignatureAttempt) -> SignatureEvidenceJSON:
    """What a verifier needs to check, without the console, that this person's device signed
    these bindings: the assertion's parts (base64url, as WebAuthn's JSON gives them), the nonce,
    and what the challenge was made of."""
    assertion = attempt.assertion or {}
    # Cast: a verified assertion has every part, and `worlds_digest` is left out where empty.
    return cast(
        SignatureEvidenceJSON,
        {
            "instance": str(attempt.instance_id),
            "bindings_digest": attempt.bindings_digest,
            **({"worlds_digest": attempt.worlds_digest} if attempt.worlds_digest else {}),
            "nonce": attempt.nonce,
            "challenge": b64url(bytes.fromhex(attempt.challenge)),
            "credential_id": assertion.get("credential_id"),
            "authenticator_data": assertion.get("authenticator_data"),
            "client_data_json": assertion.get("client_data_json"),
            "signature": assertion.get("signature"),
            "user_handle": assertion.get("user_handle"),
            "rp_id": attempt.rp_id,
            "origin": attempt.origin,
            "by": attempt.user.get_username(),
            "signed_at": attempt.verified_at.isoformat() if attempt.verified_at else None,
        },
    )


def instance_signature(instance_id: Any, required: bool) -> SignatureJSON | None:
    """The instance read's `signature`: None where none is required; else whether it is
    signed, and the evidence of the standing signature."""
    if not required:
        return None
    standing = standing_signature(instance_id)
    return {
        "required": True,
        "signed": standing is not None,
        "assertion": signature_evidence(standing) if standing is not None else None,
    }


def passkey_public(passkey: Passkey) -> PasskeyPublicJSON:
    cose = bytes(passkey.public_key)
    try:
        jwk: dict[str, Any] | None = cose_to_jwk(parse_cbor(cose))
    except (ValueError, TypeError, KeyError):
        jwk = None
    return {
        "credential_id": passkey.credential_id,
        "public_key_cose": b64url(cose),
        "public_key_jwk": jwk,
        "created_at": passkey.created_at.isoformat(),
        "last_used_at": passkey.last_used_at.isoformat() if passkey.last_used_at else None,
        "removed_at": passkey.removed_at.isoformat() if passkey.removed_at else None,
        "active": passkey.active,
    }


def person_passkeys_for_runtime(username: str, runtime_id: int) -> PersonPasskeysJSON:
    """A person's passkey public keys, for a runtime that opened at least one instance for
    them; NotFound (404) otherwise, whether the person exists or not. Removed passkeys are
    listed too (with `removed_at`): the signatures they made stay verifiable. Passkey names
    are the person's own words for their devices and are not shown."""
    user = User.objects.filter(**{User.USERNAME_FIELD: username}).first()
    if (
        user is None
        or not TaskInstance.objects.filter(principal=user, runtime_id=runtime_id).exists()
    ):
        raise NotFound("No such person.", code="not_found")
    passkeys = Passkey.objects.filter(user=user).order_by("created_at", "id")
    return {"username": username, "passkeys": [passkey_public(p) for p in passkeys]}


def signature_attempt_for(attempt_id: UUID, instance_id: Any) -> SignatureAttempt | None:
    return SignatureAttempt.objects.filter(pk=attempt_id, instance_id=instance_id).first()
