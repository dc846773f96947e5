"""Expiry: a blocking prompt past its time to live expires its instance; nothing binds."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from beliefs.domain.vocabulary import AuditKind
from beliefs.models import (
    InstanceStatus,
    Prompt,
    PromptState,
    TaskInstance,
    any_overdue,
)
from beliefs.selectors.quorum import approval_due, approvals_overdue
from beliefs.services.audit import SYSTEM, audit
from beliefs.services.lifecycle import close_instance, lock_instance

# Why an instance expired: (its status reason, the audit's reason), per what ran out.
_PROMPT = ("a blocking prompt expired", "a blocking prompt was not answered before its TTL")
_APPROVALS = (
    "the approvals it needed did not all arrive in time",
    "the approvers group did not approve before the approval TTL",
)
_SIGNATURE = ("the signature was not given", "the passkey signature was not given before its TTL")


def expire_locked_if_due(
    instance: TaskInstance, now: datetime, open_prompts: Sequence[Prompt] | None = None
) -> bool:
    """Expire the locked instance if what it waits for ran out of time: a blocking prompt, its
    approvers or its signature; `open_prompts`, when the caller has
    already read them, saves asking the database."""
    if instance.signature_overdue(now):
        return _expire(instance, _SIGNATURE)
    if instance.status == InstanceStatus.AWAITING_APPROVAL:
        return approval_due(instance.pk, now) and _expire(instance, _APPROVALS)
    if instance.status != InstanceStatus.AWAITING_USER:
        return False
    if open_prompts is None:
        due = instance.prompts.overdue(now).exists()
    else:
        due = any_overdue(open_prompts, now)
    return due and _expire(instance, _PROMPT)


def _expire(instance: TaskInstance, why: tuple[str, str]) -> bool:
    status_reason, audit_reason = why
    close_instance(instance, InstanceStatus.EXPIRED, PromptState.EXPIRED, status_reason)
    audit(
        AuditKind.INSTANCE_EXPIRED, actor=SYSTEM, instance=instance, data={"reason": audit_reason}
    )
    return True


def expiry_due(
    instance: TaskInstance, now: datetime, prompts: Sequence[Prompt] | None = None
) -> bool:
    """Whether `instance_expire_if_due` would expire the instance now. `prompts`: all of its
    prompts (or at least its open ones) when the caller's read holds them, so that a read that
    finds nothing due needs no read of its own for the expiry; else they are asked for."""
    if instance.signature_overdue(now):  # never signed in time
        return True
    if instance.status == InstanceStatus.AWAITING_APPROVAL:
        return approval_due(instance.pk, now)
    if instance.status != InstanceStatus.AWAITING_USER:
        return False
    if prompts is not None:
        return any_overdue(prompts, now)
    return Prompt.objects.filter(instance=instance).overdue(now).exists()


def instance_expire_if_due(*, instance: TaskInstance, now: datetime | None = None) -> bool:
    """Lazy expiry, called whenever an instance is read. Cheap when nothing is due."""
    now = now or timezone.now()
    if not expiry_due(instance, now):
        return False
    with transaction.atomic():
        locked = lock_instance(instance)
        expired = expire_locked_if_due(locked, now)
    if expired:
        instance.refresh_from_db()
    return expired


def instances_expire(*, now: datetime | None = None) -> int:
    """Expire every instance with a blocking prompt past its TTL; returns how many."""
    now = now or timezone.now()
    ids = (
        Prompt.objects.overdue(now)
        .filter(instance__status=InstanceStatus.AWAITING_USER)
        .values_list("instance_id", flat=True)
        .distinct()
    )
    unsigned = TaskInstance.objects.signature_overdue(now).values_list("pk", flat=True)
    count = 0
    due = [*ids, *unsigned, *approvals_overdue(now)]
    for instance in TaskInstance.objects.filter(pk__in=due):
        with transaction.atomic():
            if expire_locked_if_due(lock_instance(instance), now):
                count += 1
    return count
