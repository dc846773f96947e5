"""The signature gate of planning: whether a settled instance still waits for its
person's passkey signature, the wait's deadline, and voiding a signature the instance outgrew.

Planning calls these under the instance's lock; signing itself (the challenge, verifying the
assertion) is `services.passkeys`, which plans again once a signature stands.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from django.conf import settings

from beliefs.domain.vocabulary import MAX_LABEL_LENGTH, AuditKind
from beliefs.models import InstanceStatus, SignatureAttempt, TaskInstance
from beliefs.selectors.passkeys import signature_holds, signature_required
from beliefs.services.audit import SYSTEM, audit


def awaits_signature(
    instance: TaskInstance,
    bindings_digest: str,
    requiring: Callable[[], list[str]] | None = None,
    worlds_digest: str = "",
) -> bool:
    """Every blocking prompt is answered: must it still wait for a signature of exactly
    `bindings_digest` bound with `worlds_digest`? (The ready gate's last step, after the
    approvals.) `requiring`: the keys of the action's decisions that require a signature, read
    when first needed."""
    return signature_required(instance, requiring) and not signature_holds(
        instance, bindings_digest, worlds_digest
    )


def signature_wait_begin(instance: TaskInstance, now: datetime) -> None:
    """The instance has just settled as awaiting a signature: from the first time, it has
    until `signature_due_at` (then it expires, as a prompt does). Caller holds the lock and
    saves the instance."""
    if instance.status == InstanceStatus.AWAITING_SIGNATURE and instance.signature_due_at is None:
        instance.signature_due_at = now + settings.CONSOLE_SIGNATURE_TTL


def signatures_void(instance: TaskInstance, reason: str, now: datetime) -> int:
    """Void the instance's standing signature and its unused attempts: what was signed (or
    shown to be signed) is no longer what the instance would bind. Caller holds the lock."""
    standing = SignatureAttempt.objects.filter(
        instance=instance, verified_at__isnull=False, voided_at__isnull=True
    ).update(voided_at=now, voided_reason=reason[:MAX_LABEL_LENGTH])
    SignatureAttempt.objects.filter(
        instance=instance, verified_at__isnull=True, voided_at__isnull=True
    ).update(voided_at=now, voided_reason=reason[:MAX_LABEL_LENGTH])
    if standing:
        audit(
            AuditKind.INSTANCE_SIGNATURE_VOIDED,
            actor=SYSTEM,
            instance=instance,
            data={"reason": reason},
        )
    return standing
