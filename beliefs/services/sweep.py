"""The periodic sweep each worker runs: expiry, expiry warnings, stalled deliveries and emails,
retention."""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from beliefs.domain.webhooks import EventType
from beliefs.models import InstanceStatus, Prompt, TaskInstance
from beliefs.selectors.quorum import approvals_expiring
from beliefs.services.erasure import retention_apply
from beliefs.services.expiry import instances_expire
from beliefs.services.lifecycle import lock_instance
from beliefs.services.notify import approvals_warn_expiring, emails_resume, instance_warn_expiring
from beliefs.services.webhooks.delivery import deliveries_resume


def instances_warn_expiring(*, now: datetime | None = None) -> int:
    """Warn (once per instance) where a blocking prompt has less than
    CONSOLE_EXPIRY_WARNING left; returns how many were warned."""
    now = now or timezone.now()
    ids = (
        Prompt.objects.blocking_open()
        .filter(
            expires_at__gt=now,
            expires_at__lte=now + settings.CONSOLE_EXPIRY_WARNING,
            instance__status=InstanceStatus.AWAITING_USER,
        )
        .exclude(instance__webhook_events__type=EventType.INSTANCE_EXPIRING)
        .values_list("instance_id", flat=True)
        .distinct()
    )
    unsigned = (  # awaiting a signature that is due soon
        TaskInstance.objects.filter(
            status=InstanceStatus.AWAITING_SIGNATURE,
            signature_due_at__gt=now,
            signature_due_at__lte=now + settings.CONSOLE_EXPIRY_WARNING,
        )
        .exclude(webhook_events__type=EventType.INSTANCE_EXPIRING)
        .values_list("pk", flat=True)
    )
    count = 0
    for instance in TaskInstance.objects.filter(pk__in=[*ids, *unsigned]):
        with transaction.atomic():
            if instance_warn_expiring(lock_instance(instance)):
                count += 1
    # M-of-N approval: the approvers are reminded the same way.
    approving = approvals_expiring(now, settings.CONSOLE_EXPIRY_WARNING)
    for instance in TaskInstance.objects.filter(pk__in=approving):
        with transaction.atomic():
            if approvals_warn_expiring(lock_instance(instance)):
                count += 1
    return count


def sweep(*, now: datetime | None = None) -> dict[str, int]:
    """Safe to run from several workers at once: each step locks or claims what it changes."""
    now = now or timezone.now()
    return {
        "expired": instances_expire(now=now),
        "warned": instances_warn_expiring(now=now),
        "deliveries_resumed": deliveries_resume(now=now),
        "emails_resumed": emails_resume(now=now),
        "values_erased": retention_apply(now=now),
    }
