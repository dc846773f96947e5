"""Telling the runtime (webhook events) and the person (email) what happened to an instance.

Called from the services that change an instance, inside their transaction and under the
instance's lock, so what is told commits or rolls back with the change itself.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import Min
from django.urls import reverse
from django.utils import timezone

from beliefs.domain.vouch import bound_claims, vouched_by_runtime
from beliefs.domain.webhooks import EventType
from beliefs.mail import deadline as mail_deadline
from beliefs.models import (
    Belief,
    EmailNotification,
    InstanceStatus,
    OutgoingEmail,
    PersonSettings,
    Prompt,
    TaskInstance,
)
from beliefs.selectors import postgres
from beliefs.selectors.quorum import Quorum, quorum_of
from beliefs.services import outbox
from beliefs.services.webhooks.events import emit_event

STATUS_EVENTS = {
    InstanceStatus.AWAITING_USER: EventType.INSTANCE_AWAITING_USER,
    InstanceStatus.AWAITING_SIGNATURE: EventType.INSTANCE_AWAITING_SIGNATURE,
    InstanceStatus.AWAITING_APPROVAL: EventType.INSTANCE_AWAITING_APPROVAL,
    InstanceStatus.READY: EventType.INSTANCE_READY,
    InstanceStatus.CANCELLED: EventType.INSTANCE_CANCELLED,
    InstanceStatus.EXPIRED: EventType.INSTANCE_EXPIRED,
}
# Seconds before each retry of an email that could not be sent (an SMTP outage): 11 retries,
# 12 attempts, over about 17 hours (17 h 8 min); then it is marked failed.
EMAIL_RETRY_SECONDS: tuple[float, ...] = (
    60,
    2 * 60,
    5 * 60,
    10 * 60,
    20 * 60,
    30 * 60,
    3600,
    2 * 3600,
    3 * 3600,
    4 * 3600,
    6 * 3600,
)
# A digest names this many instances; the rest are counted and found in the inbox.
DIGEST_LISTED = 50


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
        instance.prompts.blocking_open()
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
        runtime_id=instance.runtime_id,
        instance=instance,
        data={**instance_data(instance), **extra},
    )


def instance_status_changed(
    instance: TaskInstance, before: str, blocking: list[Prompt] | None = None
) -> None:
    """The instance's status was settled; tell whom it concerns if it changed. `blocking`:
    its open blocking prompts with their slots, in the slots' order, when the caller holds
    them (planning does); else they are read."""
    status = instance.status
    if status == before or status not in STATUS_EVENTS:
        return
    type = STATUS_EVENTS[InstanceStatus(status)]
    if status == InstanceStatus.AWAITING_USER:
        prompts = _blocking_prompts(instance) if blocking is None else blocking
        _emit(instance, type, blocking=len(prompts), prompts=_prompt_summaries(prompts))
        _email_person(instance, EmailNotification.Kind.AWAITING_USER)
    elif status == InstanceStatus.AWAITING_SIGNATURE:
        # every answer is in; the person's passkey signature is awaited. The
        # digest, not the values: the runtime learns them once they are signed (ready).
        _emit(
            instance,
            type,
            awaiting="signature",
            bindings_digest=instance.bindings_digest,
            worlds_digest=instance.worlds_digest,
            signature_due_at=instance.signature_due_at.isoformat()
            if instance.signature_due_at
            else None,
        )
        _email_person(instance, EmailNotification.Kind.AWAITING_SIGNATURE)
    elif status == InstanceStatus.AWAITING_APPROVAL:
        # --- M-of-N approval: the group is asked ---
        quorum = quorum_of(instance, instance.bindings_digest)
        _emit(
            instance,
            type,
            bindings_digest=instance.bindings_digest,
            worlds_digest=instance.worlds_digest,
            quorum=quorum.payload(),
        )
        _email_approvers(instance, quorum, EmailNotification.Kind.AWAITING_APPROVAL)
    elif status == InstanceStatus.READY:
        receipt = instance.receipt
        _emit(
            instance,
            type,
            bindings=instance.bindings,
            bindings_digest=instance.bindings_digest,
            worlds_digest=instance.worlds_digest,
            bound=bound_claims(instance.plan_items or []),
            vouched_by_runtime=vouched_by_runtime(instance.plan_items or []),
            receipt=receipt.token if receipt is not None else None,
        )
    else:
        _emit(instance, type, reason=instance.status_reason)


# --- M-of-N approval --------------------------------------------------------------------------


APPROVAL_KINDS = frozenset(
    {EmailNotification.Kind.AWAITING_APPROVAL, EmailNotification.Kind.APPROVAL_EXPIRING}
)


def approval_recorded(instance: TaskInstance, quorum: Quorum) -> None:
    """One more approval arrived and some are still missing: the runtime hears who approved
    and how many are missing."""
    _emit(
        instance,
        EventType.INSTANCE_APPROVAL_RECORDED,
        bindings_digest=instance.bindings_digest,
        worlds_digest=instance.worlds_digest,
        quorum=quorum.payload(),
    )


def approvals_warn_expiring(instance: TaskInstance) -> bool:
    """The approvers' time runs out soon: remind those still asked (once per round), and tell
    the runtime (`instance.expiring`, once per instance). Caller holds the lock."""
    if instance.status != InstanceStatus.AWAITING_APPROVAL:
        return False
    quorum = quorum_of(instance, instance.bindings_digest)
    if quorum.round is None or quorum.round.warned_at is not None:
        return False
    quorum.round.warned_at = timezone.now()
    quorum.round.save(update_fields=["warned_at"])
    if not instance.webhook_events.filter(type=EventType.INSTANCE_EXPIRING).exists():
        _emit(
            instance,
            EventType.INSTANCE_EXPIRING,
            expires_at=quorum.round.expires_at.isoformat(),
            blocking=0,
            prompts=[],
            quorum=quorum.payload(),
        )
    _email_approvers(instance, quorum, EmailNotification.Kind.APPROVAL_EXPIRING)
    return True


def _email_approvers(instance: TaskInstance, quorum: Quorum, kind: str) -> None:
    """Each member still asked (not approved, not away) gets one email of this kind about the
    instance (the principal too, when a member who has not approved these values)."""
    for user in quorum_members(quorum.still_asked()):
        if email_enabled(user):
            _email_to(instance, kind, user)


def quorum_members(ids: Sequence[int]) -> list[User]:
    return list(User.objects.filter(pk__in=list(ids)).order_by("pk"))


# --- end M-of-N approval ---


def belief_vetoed(
    instance: TaskInstance, prompt: Prompt, belief: Belief | None, reason: str, was_ready: bool
) -> None:
    """A person vetoed an assumption. After `ready` the runtime may already have acted on it:
    `after_ready` says so."""
    _emit(
        instance,
        EventType.BELIEF_VETOED,
        slot=prompt.slot.key,
        belief_id=belief.pk if belief is not None else None,
        prompt_id=prompt.pk,
        reason=reason,
        after_ready=was_ready,
    )


def instance_warn_expiring(instance: TaskInstance) -> bool:
    """Once per instance: its first blocking prompt (or, awaiting a signature, the signature)
    is due soon. Caller holds the lock."""
    if instance.status not in InstanceStatus.waiting_for_person():
        return False
    if instance.webhook_events.filter(type=EventType.INSTANCE_EXPIRING).exists():
        return False
    prompts = _blocking_prompts(instance)
    expires = min((p.expires_at for p in prompts if p.expires_at), default=None)
    if instance.status == InstanceStatus.AWAITING_SIGNATURE:
        expires = instance.signature_due_at
    _emit(
        instance,
        EventType.INSTANCE_EXPIRING,
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
    """At most one email per instance and state (a unique constraint keeps it one), carried by
    the person's next email of that kind."""
    if not email_enabled(instance.principal):
        return
    _email_to(instance, kind, instance.principal)


def _email_to(instance: TaskInstance, kind: str, recipient: Any) -> None:
    note, created = EmailNotification.objects.get_or_create(
        instance=instance, kind=kind, recipient=recipient
    )
    if created:
        note.email = _email_for(note.recipient, kind)
        note.save(update_fields=["email"])


# The key space of the advisory lock below ("MAIL"), apart from any other advisory lock.
_EMAIL_LOCK = 0x4D41494C


def _lock_emails_of(recipient: Any) -> None:
    """One person's emails are chosen one transaction at a time, so two instances starting to
    wait at once join one email instead of starting two. An advisory lock, not the user's row:
    the caller holds an instance's lock, and opens lock the user row first. Nothing waits for
    another lock while holding this one (only the person's pending email, which a worker holds
    for a moment), so it cannot close a cycle. (SQLite serialises writers.)"""
    postgres.lock_until_commit(_EMAIL_LOCK, recipient.pk)


def _email_for(recipient: Any, kind: str) -> OutgoingEmail:
    """The email that will tell the person: the one not yet sent, or a new one, due one digest
    window after their previous one (or now). So the first of a burst goes out at once and the
    rest together, at most one email of a kind per window."""
    _lock_emails_of(recipient)
    emails = OutgoingEmail.objects.filter(recipient=recipient, kind=kind)
    # Locked: a worker cannot claim it until this notification is committed with it.
    waiting = emails.select_for_update().filter(state=OutgoingEmail.State.PENDING).first()
    if waiting is not None:
        return waiting
    now = timezone.now()
    last = emails.order_by("-not_before").first()
    not_before = max(now, last.not_before + settings.CONSOLE_EMAIL_DIGEST_WINDOW) if last else now
    email = OutgoingEmail.objects.create(
        recipient=recipient, kind=kind, not_before=not_before, next_attempt_at=not_before
    )
    outbox.announce(outbox.EMAILS)
    return email


def _plain(text: str) -> str:
    """Text from a runtime, safe for a mail header and honest in a mail body: control,
    formatting (bidi, zero-width) characters are shown as code points."""
    return "".join(
        f"⟨U+{ord(c):04X}⟩" if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") else c
        for c in text
    )


def _about(note: EmailNotification, now: datetime) -> dict[str, Any]:
    """One waiting instance as an email tells it: task, run, how many answers, minutes left,
    the link. Never a value."""
    instance = note.instance
    if note.kind in APPROVAL_KINDS:
        round_ = quorum_of(instance, instance.bindings_digest).round
        expires = round_.expires_at if round_ is not None else None
        return {
            "task": _plain(instance.task_class.name or instance.task_class.key)[:150],
            "run": instance.run_number,
            "answers": "your approval",
            "left": max(int((expires - now).total_seconds() // 60), 0) if expires else 0,
            "link": settings.CONSOLE_BASE_URL + reverse("approval", args=[instance.pk]),
            "principal": _plain(instance.principal.get_username())[:150],
        }
    blocking = instance.prompts.blocking_open()
    count = blocking.count()
    expires = blocking.aggregate(m=Min("expires_at"))["m"]
    if instance.status == InstanceStatus.AWAITING_SIGNATURE:  # its signature's due
        expires = instance.signature_due_at
    return {
        "task": _plain(instance.task_class.name or instance.task_class.key)[:150],
        "run": instance.run_number,
        # awaiting a signature, what it needs is that
        "answers": "your passkey signature"
        if instance.status == InstanceStatus.AWAITING_SIGNATURE
        else f"{count} answer{'' if count == 1 else 's'}",
        "left": max(int((expires - now).total_seconds() // 60), 0) if expires else 0,
        "link": settings.CONSOLE_BASE_URL + reverse("instance", args=[instance.pk]),
    }


def compose(kind: str, notes: Sequence[EmailNotification], now: datetime) -> tuple[str, str]:
    """Subject and body: for each instance the task, how many answers, the link; never a
    value. One instance reads as it always did; several make a digest."""
    if kind in APPROVAL_KINDS:
        return _compose_approval(kind, notes, now)
    expiring = kind == EmailNotification.Kind.EXPIRING
    if kind == EmailNotification.Kind.AWAITING_SIGNATURE:
        return _compose_signature(notes, now)
    n = len(notes)
    items = [_about(note, now) for note in notes[:DIGEST_LISTED]]  # two queries each
    account = settings.CONSOLE_BASE_URL + reverse("account")
    name = _plain(notes[0].recipient.get_username())
    if n == 1:
        (item,) = items
        task = item["task"]
        if expiring:
            subject = f"Expiring soon: {task}"
            lead = (
                f"“{task}” (attempt {item['run']}) still needs {item['answers']} from you and "
                f"expires in about {item['left']} minutes. After that nothing of it is carried "
                "out."
            )
        else:
            subject = f"Your answer is needed: {task}"
            lead = f"“{task}” (attempt {item['run']}) needs {item['answers']} from you."
        lead += f"\n\nReview it here: {item['link']}"
    else:
        if expiring:
            subject = f"Expiring soon: {n} tasks need your answer"
            lead = f"{n} tasks still need your answer and expire soon; after that nothing of "
            lead += "them is carried out:\n"
            lines = [
                f"- “{i['task']}” (attempt {i['run']}): {i['answers']}, expires in about "
                f"{i['left']} minutes: {i['link']}"
                for i in items
            ]
        else:
            subject = f"Your answer is needed: {n} tasks"
            lead = f"{n} tasks need your answer:\n"
            lines = [
                f"- “{i['task']}” (attempt {i['run']}): {i['answers']}: {i['link']}" for i in items
            ]
        lead += "\n" + "\n".join(lines)
        if n > DIGEST_LISTED:
            inbox = settings.CONSOLE_BASE_URL + reverse("inbox")
            lead += f"\n… and {n - DIGEST_LISTED} more, in your inbox: {inbox}"
    body = (
        f"Hello {name},\n\n{lead}\n\n"
        "This email never contains the values themselves; you see them on the page, after "
        f"signing in.\nTurn these emails off on your account page: {account}\n"
    )
    return subject, body


def _compose_signature(notes: Sequence[EmailNotification], now: datetime) -> tuple[str, str]:
    """Every answer is in and the person's passkey signature is awaited."""
    items = [_about(note, now) for note in notes[:DIGEST_LISTED]]
    account = settings.CONSOLE_BASE_URL + reverse("account")
    name = _plain(notes[0].recipient.get_username())
    n = len(notes)
    if n == 1:
        subject = f"Your signature is needed: {items[0]['task']}"
        lead = (
            f"Your answers to “{items[0]['task']}” (attempt {items[0]['run']}) are in. It goes "
            "ahead only once you sign it with your passkey: review and sign it here: "
            f"{items[0]['link']}"
        )
    else:
        subject = f"Your signature is needed: {n} tasks"
        lead = f"{n} tasks go ahead only once you sign them with your passkey:\n\n"
        lead += "\n".join(f"- “{i['task']}” (attempt {i['run']}): {i['link']}" for i in items)
    body = (
        f"Hello {name},\n\n{lead}\n\n"
        f"No passkey yet? Add one on your account page first: {account}\n"
        "This email never contains the values themselves; you see them on the page, after "
        f"signing in.\nTurn these emails off on your account page: {account}\n"
    )
    return subject, body


def _compose_approval(
    kind: str, notes: Sequence[EmailNotification], now: datetime
) -> tuple[str, str]:
    """An approver's email: whose action, the link to approve or reject it; never a value."""
    expiring = kind == EmailNotification.Kind.APPROVAL_EXPIRING
    items = [_about(note, now) for note in notes[:DIGEST_LISTED]]
    name = _plain(notes[0].recipient.get_username())
    account = settings.CONSOLE_BASE_URL + reverse("account")
    lines = []
    for i in items:
        line = f"- “{i['task']}” (attempt {i['run']}) for {i['principal']}: {i['link']}"
        if expiring:
            line += f" (expires in about {i['left']} minutes)"
        lines.append(line)
    n = len(notes)
    if expiring:
        subject = (
            f"Approval expiring soon: {items[0]['task']}"
            if n == 1
            else (f"Approvals expiring soon: {n} actions")
        )
        lead = "These actions still need your approval and expire soon; after that nothing "
        lead += "of them is carried out:"
    else:
        subject = (
            f"Your approval is needed: {items[0]['task']}"
            if n == 1
            else (f"Your approval is needed: {n} actions")
        )
        lead = "You are one of the approvers of these actions; approve or reject each one:"
    body = (
        f"Hello {name},\n\n{lead}\n" + "\n".join(lines) + "\n\n"
        "This email never contains the values themselves; you see them on the page, after "
        f"signing in.\nTurn these emails off on your account page: {account}\n"
    )
    return subject, body


def _email_schedule() -> Sequence[float]:
    return settings.CONSOLE_EMAIL_RETRY_SECONDS or EMAIL_RETRY_SECONDS


def _email_lease() -> timedelta:
    return timedelta(seconds=settings.CONSOLE_EMAIL_LEASE_SECONDS)


def emails_claim(*, worker: str, limit: int, due_by: datetime | None = None) -> list[OutgoingEmail]:
    """Claim up to `limit` due emails for one attempt each (one transaction: read in a batch
    with SKIP LOCKED, claimed with one UPDATE)."""
    if limit <= 0:
        return []
    now = timezone.now()
    with transaction.atomic():
        due_at = min(now, due_by) if due_by is not None else now
        pks = list(outbox.due(OutgoingEmail, now=due_at).values_list("pk", flat=True)[:limit])
        outbox.claim_many(OutgoingEmail, pks, lease=_email_lease(), now=now, claimed_by=worker)
    return list(
        OutgoingEmail.objects.select_related("recipient").filter(
            pk__in=pks, state=OutgoingEmail.State.SENDING, claimed_by=worker
        )
    )


def emails_next_due() -> datetime | None:
    """When the next pending email falls due (None: none pending)."""
    return OutgoingEmail.objects.filter(state=OutgoingEmail.State.PENDING).aggregate(
        m=Min("next_attempt_at")
    )["m"]


def email_send(email_id: int, *, worker: str = "job") -> str:
    """Claim one email and send it (see `email_attempt`)."""
    now = timezone.now()
    if not outbox.claim(OutgoingEmail, email_id, lease=_email_lease(), now=now, claimed_by=worker):
        return "not due"
    return email_attempt(OutgoingEmail.objects.select_related("recipient").get(pk=email_id))


# The status an instance must still be in for its notification of each kind to be told.
_TOLD_WHILE: dict[str, str] = {
    EmailNotification.Kind.AWAITING_USER: InstanceStatus.AWAITING_USER,
    EmailNotification.Kind.EXPIRING: "",  # while it waits for its person, either way
    EmailNotification.Kind.AWAITING_SIGNATURE: InstanceStatus.AWAITING_SIGNATURE,
    EmailNotification.Kind.AWAITING_APPROVAL: InstanceStatus.AWAITING_APPROVAL,
    EmailNotification.Kind.APPROVAL_EXPIRING: InstanceStatus.AWAITING_APPROVAL,
}


def _still_told(note: EmailNotification) -> bool:
    """Is the instance still in the state its notification tells of?"""
    status = note.instance.status
    wanted = _TOLD_WHILE.get(note.kind, status)
    return status == wanted if wanted else status in InstanceStatus.waiting_for_person()


def email_attempt(email: OutgoingEmail) -> str:
    """Send one claimed email, on the outbox's state machine: claimed under a lease, so it
    goes out at most once per attempt; retried over hours when SMTP is down; taken up again by
    the sweep when the worker died mid-send."""
    notes = list(
        email.notifications.select_related("instance__task_class", "recipient").order_by("id")
    )
    told = [n for n in notes if _still_told(n)]
    if not told or not email_enabled(email.recipient):
        with transaction.atomic():
            finished = outbox.finish(email, done=OutgoingEmail.State.SKIPPED, schedule=())
            if finished.recorded:
                _notes_end(notes, [], email, finished.state)
        return "skipped: no longer awaiting, or email turned off"
    subject, body = compose(email.kind, told, timezone.now())
    error = ""
    try:
        with mail_deadline(settings.CONSOLE_EMAIL_DEADLINE_SECONDS) as watch:
            send_mail(subject, body, None, [email.recipient.email])
    except Exception as exc:  # noqa: BLE001 - any mail failure is recorded and retried
        error = f"{type(exc).__name__}: {exc}"[:500]
        if watch.expired:
            error = f"DeadlineExceeded: sending took longer than {watch.seconds:g} s ({error})"
    sent: dict[str, Any] = {} if error else {"sent_at": timezone.now()}
    with transaction.atomic():
        finished = outbox.finish(
            email,
            done=None if error else OutgoingEmail.State.SENT,
            error=error,
            schedule=_email_schedule(),
            **sent,
        )
        if finished.recorded:
            _notes_end(notes, told, email, finished.state)
    return finished.text


def _notes_end(
    notes: Sequence[EmailNotification],
    told: Sequence[EmailNotification],
    email: OutgoingEmail,
    state: str,
) -> None:
    """The notifications follow their email: the ones it told are sent (or failed, or pending
    again), the others skipped (no longer waiting when it went)."""
    email.refresh_from_db()
    told_ids = {n.pk for n in told}
    State = EmailNotification.State  # noqa: N806
    for note in notes:
        note.state = state if note.pk in told_ids else State.SKIPPED
        note.attempts = email.attempts
        note.last_error = email.last_error
        note.sent_at = email.sent_at if note.state == State.SENT else None
    EmailNotification.objects.bulk_update(notes, ["state", "attempts", "last_error", "sent_at"])


def emails_resume(*, now: datetime | None = None) -> int:
    """Take up emails whose worker died mid-send (lease run out)."""
    return outbox.resume(
        OutgoingEmail,
        now=now or timezone.now(),
        schedule=_email_schedule(),
    )
