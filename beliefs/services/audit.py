"""Who acts, and the audit event every write leaves in its own transaction."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User

from beliefs.domain.canonical import json_digest
from beliefs.domain.vocabulary import AuditKind, runtime_label
from beliefs.models import (
    AuditEvent,
    Prompt,
    Runtime,
    RuntimeAPIKey,
    TaskClass,
    TaskInstance,
)


@dataclass(frozen=True)
class Actor:
    """Who is acting: a person, a runtime (through one of its keys), or the system."""

    user: User | None = None
    key: RuntimeAPIKey | None = None

    @classmethod
    def person(cls, user: object) -> Actor:
        """The signed-in person behind a request (admin and pages are behind a login)."""
        assert isinstance(user, User), "only a signed-in person acts as a person"
        return cls(user=user)

    @property
    def runtime(self) -> Runtime | None:
        return self.key.runtime if self.key is not None else None

    @property
    def label(self) -> str:
        if self.user is not None:
            return self.user.get_username()
        if self.key is not None:
            return runtime_label(self.key.runtime.name)
        return "system"


SYSTEM = Actor()


def digest_of(value: Any) -> str:
    """What the audit keeps of a person's value, world reference or typed reason: the SHA-256
    of its canonical JSON. It proves what was bound without holding it, so retention and
    erasure (services/erasure.py) remove values without touching the append-only log."""
    return "sha256:" + json_digest(value)


def audit(
    kind: AuditKind,
    *,
    actor: Actor,
    task_class: TaskClass | None = None,
    instance: TaskInstance | None = None,
    prompt: Prompt | None = None,
    subject: str = "",
    data: Mapping[str, Any] | None = None,
    save: bool = True,
) -> AuditEvent:
    """The audit event of a write, saved; with `save=False` it is returned unsaved, for
    `audit_all` to write several in one statement."""
    event = AuditEvent(
        kind=kind,
        actor=actor.label,
        actor_user=actor.user,
        actor_key_name=actor.key.name if actor.key is not None else "",
        actor_key_prefix=actor.key.prefix if actor.key is not None else None,
        task_class=task_class or (instance.task_class if instance is not None else None),
        instance_id=instance.pk if instance is not None else None,
        prompt_id=prompt.pk if prompt is not None else None,
        subject=subject,
        data=dict(data or {}),
    )
    if save:
        event.save()
    return event


def audit_replaced(
    kind: AuditKind,
    before: Any,
    after: Any,
    *,
    actor: Actor,
    task_class: TaskClass | None = None,
    instance: TaskInstance | None = None,
    subject: str = "",
) -> AuditEvent:
    """The audit event of a value replaced by another, saved: its data is what the value was
    and what it is now (the before and after that the activity page shows as the change).
    Only for settings and names: a person's values go in as `digest_of`."""
    return audit(
        kind,
        actor=actor,
        task_class=task_class,
        instance=instance,
        subject=subject,
        data={"before": before, "after": after},
    )


def audit_all(events: list[AuditEvent]) -> None:
    """Write several events (made with `audit(..., save=False)`) in one statement, in order."""
    AuditEvent.objects.bulk_create(events)
