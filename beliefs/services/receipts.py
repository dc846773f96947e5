"""Receipts: what a tool server checks before it executes an approved action.

When an instance becomes ready the console signs a receipt of exactly its bindings (their
digest, never the values), who answered what, for whom, until when. A tool server verifies it
offline against the published keys and the arguments it is about to execute, and either keeps
its own ledger of `jti`s or redeems it here, once. A veto after ready and a cancel revoke it.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from beliefs.domain.canonical import CANONICALIZATION
from beliefs.domain.vocabulary import MAX_LABEL_LENGTH, AuditKind
from beliefs.domain.vouch import bound_claims, vouched_by_runtime
from beliefs.errors import Conflict, InvalidInput, NotFound
from beliefs.models import (
    Prompt,
    PromptState,
    Receipt,
    RuntimeAPIKey,
    TaskInstance,
)
from beliefs.selectors.passkeys import action_decisions, signature_evidence, standing_signature
from beliefs.selectors.quorum import Requirement, approval_claim, quorum_of
from beliefs.services.audit import Actor, audit
from beliefs.services.changes import instance_changed
from beliefs.signing import ReceiptTokenInvalid, sign, verify

APPROVING_ACTIONS = ("confirm", "edit", "answer")
NEVER = datetime.max.replace(tzinfo=UTC)


def _audience(instance: TaskInstance) -> str:
    if instance.audience:
        return instance.audience
    return instance.runtime.name if instance.runtime is not None else "console"


def _approvals(
    instance: TaskInstance, prompts: Sequence[Prompt] | None = None
) -> list[dict[str, Any]]:
    """Who answered what: the instance's answered prompts (from `prompts`, its answered
    prompts with their slots, when the caller has read them), in the order they were
    answered."""
    if prompts is None:
        found = Prompt.objects.filter(instance=instance, state=PromptState.ANSWERED)
        prompts = list(found.select_related("slot"))
    answered = sorted(
        (p for p in prompts if p.state == PromptState.ANSWERED and p.action in APPROVING_ACTIONS),
        # (An answered prompt always has its time: an unset one, which only a hand-made row
        # could have, goes last, as PostgreSQL orders it.)
        key=lambda p: (p.responded_at is None, p.responded_at or NEVER, p.pk),
    )
    by = instance.principal.get_username()
    return [
        {
            "slot": p.slot.key,
            "action": p.action,
            "by": by,
            "at": p.responded_at.isoformat() if p.responded_at else None,
        }
        for p in answered
    ]


def _quorum(instance: TaskInstance, requirements: tuple[Requirement, ...] | None) -> dict[str, Any]:
    """M-of-N approval: every approver of exactly these bindings, under `quorum`
    (absent when no decision of the action has an approvers group)."""
    quorum = quorum_of(instance, instance.bindings_digest, requirements)
    if not quorum.required:
        return {}
    return {
        "quorum": {
            "approvers": [approval_claim(a) for a in quorum.approvals],
            "requirements": [
                {
                    "decision": r.decision,
                    "approvers_group": r.group,
                    "approvals_required": r.required,
                }
                for r in quorum.requirements
            ],
        }
    }


def receipt_issue(
    instance: TaskInstance,
    now: datetime,
    requirements: tuple[Requirement, ...] | None = None,
    *,
    decisions: list[str] | None = None,
    answered: Sequence[Prompt] | None = None,
    save: bool = True,
) -> Receipt:
    """Sign a receipt for a ready instance; the caller holds its lock. A live earlier receipt
    of the instance is revoked first (it was for what the instance bound before).
    `requirements`: the instance's approval requirements, and `decisions` the (sorted) keys of
    the decisions its action's slots feed, and `answered` its answered prompts with their
    slots, when the caller has read them.
    Without `save`, the instance's `receipt` is set but not saved: the caller saves it with
    the rest of what it writes to the instance (one UPDATE, not two)."""
    receipt_revoke(instance, "replaced by a new receipt", now)
    receipt = Receipt(
        instance=instance,
        audience=_audience(instance),
        bindings_digest=instance.bindings_digest,
        issued_at=now,
        expires_at=now + settings.CONSOLE_RECEIPT_TTL,
    )
    claims: dict[str, Any] = {}
    # --- passkey evidence: the person's device signed exactly these bindings ---
    # (Only an instance that waited for a signature has one: `signature_due_at` says so.)
    signature = standing_signature(instance.pk) if instance.signature_due_at else None
    if (
        signature is not None
        and signature.bindings_digest == instance.bindings_digest
        and signature.worlds_digest == instance.worlds_digest
    ):
        claims["passkey"] = signature_evidence(signature)
    # --- end passkey evidence ---
    receipt.token = sign(
        {
            **claims,
            "iss": settings.CONSOLE_BASE_URL,
            "sub": instance.principal.get_username(),
            "aud": receipt.audience,
            "jti": str(receipt.jti),
            "iat": int(now.timestamp()),
            "nbf": int(now.timestamp()),
            "exp": int(receipt.expires_at.timestamp()),
            "instance": str(instance.pk),
            "task_class": instance.task_class.key,
            "decisions": decisions if decisions is not None else list(action_decisions(instance)),
            "bindings_digest": instance.bindings_digest,
            "worlds_digest": instance.worlds_digest,
            "canonicalization": CANONICALIZATION,
            # Who vouched for each bound value; the irreversible ones no person confirmed in
            # the console are named, so that a verifier refuses them unless told otherwise.
            "bound": bound_claims(instance.plan_items or []),
            "vouched_by_runtime": vouched_by_runtime(instance.plan_items or []),
            "approvals": _approvals(instance, answered),
            **_quorum(instance, requirements),
        }
    )
    receipt.save(force_insert=True)
    instance.receipt = receipt
    if save:
        instance.save(update_fields=["receipt", "updated_at"])
    return receipt


def receipt_revoke(instance: TaskInstance, reason: str, now: datetime) -> bool:
    """Revoke the instance's live receipt, if it has one and it is not redeemed (a redeemed one
    was already executed: revoking it would change nothing). Caller holds the lock."""
    if instance.receipt_id is None:
        return False
    revoked = Receipt.objects.filter(
        pk=instance.receipt_id, revoked_at__isnull=True, redeemed_at__isnull=True
    ).update(revoked_at=now, revoked_reason=reason[:MAX_LABEL_LENGTH])
    return bool(revoked)


def receipt_state(receipt: Receipt | None, now: datetime) -> str | None:
    return receipt.state(now) if receipt is not None else None


# --- redeeming ------------------------------------------------------------------------------


class ReceiptRefused(InvalidInput):
    """A receipt that is not a valid one for this request: `code` says which check failed."""


class ReceiptConflict(Conflict):
    """A valid receipt that can no longer be redeemed (redeemed or revoked)."""


@dataclass(frozen=True)
class Redemption:
    receipt: Receipt
    instance_id: str


@transaction.atomic
def receipt_redeem(
    *, token: str, key: RuntimeAPIKey, bindings_digest: str | None = None
) -> Redemption:
    """Redeem a receipt once. The signature is checked against the published keys, the receipt
    must belong to the key's runtime (404 otherwise, as any other runtime's resource), be
    neither revoked nor expired, and match `bindings_digest` when one is given. One redemption
    per `jti` is a conditional UPDATE: of two racing redemptions exactly one wins."""
    try:
        claims = verify(token)
    except ReceiptTokenInvalid as exc:
        raise ReceiptRefused(
            f"This is not a receipt signed by this console ({exc}).", code="receipt_invalid"
        ) from None
    jti = _uuid_or_none(claims.get("jti"))
    receipt = None
    if jti is not None:
        receipt = (
            Receipt.objects.select_related("instance")
            .filter(pk=jti, instance__runtime_id=key.runtime_id)
            .first()
        )
    if receipt is None:
        raise NotFound("No such receipt.", code="not_found")
    now = timezone.now()
    if receipt.revoked_at is not None:
        raise ReceiptConflict(
            f"This receipt was revoked ({receipt.revoked_reason or 'no reason recorded'}): do "
            "not execute the action.",
            code="receipt_revoked",
        )
    if receipt.expires_at <= now:
        raise ReceiptRefused("This receipt has expired.", code="receipt_expired")
    if bindings_digest is not None and bindings_digest != receipt.bindings_digest:
        raise ReceiptRefused(
            "The arguments you would execute are not the ones approved: their digest differs "
            "from the receipt's.",
            code="digest_mismatch",
            fields={"bindings_digest": ["is not the receipt's bindings_digest"]},
        )
    won = Receipt.objects.filter(
        pk=receipt.pk, redeemed_at__isnull=True, revoked_at__isnull=True
    ).update(redeemed_at=now, redeemed_by=key)
    if not won:
        raise ReceiptConflict(
            "This receipt was already redeemed: the action was executed once already.",
            code="receipt_redeemed",
        )
    receipt.redeemed_at, receipt.redeemed_by = now, key
    # The instance read shows the receipt's state; this changes it without the instance's lock.
    instance_changed(receipt.instance_id)
    audit(
        AuditKind.RECEIPT_REDEEMED,
        actor=Actor(key=key),
        instance=receipt.instance,
        subject=str(receipt.jti),
        data={"jti": str(receipt.jti), "bindings_digest": receipt.bindings_digest},
    )
    return Redemption(receipt=receipt, instance_id=str(receipt.instance_id))


def _uuid_or_none(value: Any) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except (ValueError, TypeError):
        return None
