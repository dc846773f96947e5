"""Telling the runtime (webhook events) and the person (email) what happened to an instance.

Called from the services that change an instance, inside their transaction and under the
instance's lock, so what is told commits or rolls back with the change itself.
"""

from __future__ import annotations

import unicodedata
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import F, Min
from django.urls import reverse
from django.utils import timezone
from django_tasks import task

from beliefs.domain import webhooks as events
from beliefs.models import (
    Belief,
    EmailNotification,
    InstanceStatus,
    PersonSettings,
    Prompt,
    PromptState,
    TaskInstance,
)
from beliefs.services.webhooks import emit_event

STATUS_EVENTS = {
    InstanceStatus.AWAITING_USER: events.INSTANCE_AWAITING_USER,
    InstanceStatus.READY: events.INSTANCE_READY,
    InstanceStatus.CANCELLED: events.INSTANCE_CANCELLED,
    InstanceStatus.EXPIRED: events.INSTANCE_EXPIRED,
}
EMAIL_ATTEMPTS = 5


def instance_data(instance: TaskInstance) -> dict[str, Any]:
    return {
        "instance_id": str(instance.pk),
        "task_class": instance.task_class.key,
        "run_number": instance.run_number,
        "status": instance.status,
        "principal": instance.principal.get_username(),
    }


def _blocking_prompts(instance: TaskInstance) -> list[Prompt]:
    return list(
        instance.prompts.filter(state=PromptState.OPEN, blocking=True)
        .select_related("slot")
        .order_by("slot__position", "slot_id", "id")
    )


def _prompt_summaries(prompts: list[Prompt]) -> list[dict[str, Any]]:
    """What blocks, never the values: those stay between the console and the person."""
    return [
        {
            "prompt_id": p.pk,
            "slot": p.slot.key,
            "route": p.route,
            "rule": p.rule,
            "version": p.version,
            "expires_at": p.expires_at.isoformat() if p.expires_at else None,
        }
        for p in prompts
    ]


def _emit(instance: TaskInstance, type: str, **extra: Any) -> None:
    emit_event(
        type=type,
        runtime=instance.runtime,
        instance=instance,
        data={**instance_data(instance), **extra},
    )


def instance_status_changed(instance: TaskInstance, before: str) -> None:
    """The instance's status was settled; tell whom it concerns if it changed."""
    status = instance.status
    if status == before or status not in STATUS_EVENTS:
        return
    type = STATUS_EVENTS[InstanceStatus(status)]
    if status == InstanceStatus.AWAITING_USER:
        prompts = _blocking_prompts(instance)
        _emit(instance, type, blocking=len(prompts), prompts=_prompt_summaries(prompts))
        _email_person(instance, EmailNotification.Kind.AWAITING_USER)
    elif status == InstanceStatus.READY:
        receipt = instance.receipt
        _emit(
            instance,
            type,
            bindings=instance.bindings,
            bindings_digest=instance.bindings_digest,
            receipt=receipt.token if receipt is not None else None,
        )
    else:
        _emit(instance, type, reason=instance.status_reason)


def belief_vetoed(
    instance: TaskInstance, prompt: Prompt, belief: Belief | None, reason: str, was_ready: bool
) -> None:
    """A person vetoed an assumption. After `ready` the runtime may already have acted on it:
    `after_ready` says so."""
    _emit(
        instance,
        events.BELIEF_VETOED,
        slot=prompt.slot.key,
        belief_id=belief.pk if belief is not None else None,
        prompt_id=prompt.pk,
        reason=reason,
        after_ready=was_ready,
    )


def instance_warn_expiring(instance: TaskInstance) -> bool:
    """Once per instance: its first blocking prompt expires soon. Caller holds the lock."""
    if instance.status != InstanceStatus.AWAITING_USER:
        return False
    if instance.webhook_events.filter(type=events.INSTANCE_EXPIRING).exists():
        return False
    prompts = _blocking_prompts(instance)
    expires = min((p.expires_at for p in prompts if p.expires_at), default=None)
    _emit(
        instance,
        events.INSTANCE_EXPIRING,
        expires_at=expires.isoformat() if expires else None,
        blocking=len(prompts),
        prompts=_prompt_summaries(prompts),
    )
    _email_person(instance, EmailNotification.Kind.EXPIRING)
    return True


# --- email --------------------------------------------------------------------------------------


def email_enabled(user: Any) -> bool:
    if not getattr(user, "email", ""):
        return False
    prefs = PersonSettings.objects.filter(user=user).first()
    return prefs is None or prefs.email_notifications


def _email_person(instance: TaskInstance, kind: str) -> None:
    """Queue at most one email per instance and state (a unique constraint keeps it one)."""
    if not email_enabled(instance.principal):
        return
    note, created = EmailNotification.objects.get_or_create(
        instance=instance, kind=kind, defaults={"recipient": instance.principal}
    )
    if created:
        send_email.enqueue(note.pk)


def _plain(text: str) -> str:
    """Text from a runtime, safe for a mail header and honest in a mail body: control,
    formatting (bidi, zero-width) characters are shown as code points."""
    return "".join(
        f"⟨U+{ord(c):04X}⟩" if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") else c
        for c in text
    )


def compose(note: EmailNotification, now: datetime) -> tuple[str, str]:
    """Subject and body: the task, how many answers, the link. Never a value."""
    instance = note.instance
    task = _plain(instance.task_class.name or instance.task_class.key)[:150]
    blocking = instance.prompts.filter(state=PromptState.OPEN, blocking=True)
    count = blocking.count()
    answers = f"{count} answer{'' if count == 1 else 's'}"
    link = settings.CONSOLE_BASE_URL + reverse("instance", args=[instance.pk])
    account = settings.CONSOLE_BASE_URL + reverse("account")
    name = _plain(note.recipient.get_username())
    if note.kind == EmailNotification.Kind.EXPIRING:
        expires = blocking.aggregate(m=Min("expires_at"))["m"]
        left = max(int((expires - now).total_seconds() // 60), 0) if expires else 0
        subject = f"Expiring soon: {task}"
        lead = (
            f"“{task}” (run {instance.run_number}) still needs {answers} from you and expires "
            f"in about {left} minutes. After that nothing of it is carried out."
        )
    else:
        subject = f"Your answer is needed: {task}"
        lead = f"“{task}” (run {instance.run_number}) needs {answers} from you."
    body = (
        f"Hello {name},\n\n{lead}\n\nReview it here: {link}\n\n"
        "This email never contains the values themselves; you see them on the page, after "
        f"signing in.\nTurn these emails off on your account page: {account}\n"
    )
    return subject, body


@task()
def send_email(notification_id: int) -> str:
    """The worker's job: it names a notification; sending and its rules are below."""
    return email_send(notification_id)


def email_send(notification_id: int) -> str:
    """Send one queued email (a worker's job). Claimed first, so it goes out at most once."""
    claimed = EmailNotification.objects.filter(
        pk=notification_id, state=EmailNotification.State.PENDING
    ).update(state=EmailNotification.State.SENDING, attempts=F("attempts") + 1)
    if not claimed:
        return "not pending"
    note = EmailNotification.objects.select_related("instance__task_class", "recipient").get(
        pk=notification_id
    )
    if note.instance.status != InstanceStatus.AWAITING_USER or not email_enabled(note.recipient):
        note.state = EmailNotification.State.SKIPPED
        note.save(update_fields=["state"])
        return "skipped: no longer awaiting, or email turned off"
    subject, body = compose(note, timezone.now())
    try:
        send_mail(subject, body, None, [note.recipient.email])
    except Exception as exc:  # noqa: BLE001 - any mail failure is recorded and retried
        with transaction.atomic():
            note.last_error = f"{type(exc).__name__}: {exc}"[:500]
            if note.attempts < EMAIL_ATTEMPTS:
                note.state = EmailNotification.State.PENDING
                send_email.using(
                    run_after=timezone.now() + timedelta(minutes=note.attempts)
                ).enqueue(note.pk)
            else:
                note.state = EmailNotification.State.FAILED
            note.save(update_fields=["state", "last_error"])
        return f"failed: {note.last_error}"
    note.state = EmailNotification.State.SENT
    note.sent_at = timezone.now()
    note.save(update_fields=["state", "sent_at"])
    return "sent"
