"""Reading the audit log: a filtered page of events, and the choices its filters offer.

The log only grows, so nothing here reads all of it: the kinds come from an index probe per
kind, the actors from the latest events.
"""

from __future__ import annotations

from uuid import UUID

from django.db.models import QuerySet

from beliefs.domain.vocabulary import AuditKind
from beliefs.models import AuditEvent, TaskClass

# The actor filter offers the actors of this many latest events.
ACTIVITY_ACTORS_FROM = 2_000


def audit_events(
    *, task_class: str = "", actor: str = "", kind: str = "", instance: UUID | None = None
) -> QuerySet[AuditEvent]:
    """The events the audit log's filters select, newest first, with their task class; each
    filter left empty selects everything, and a kind ending in ".*" names a family. `instance`:
    the events of that one instance (its history)."""
    events = AuditEvent.objects.select_related("task_class").order_by("-created_at", "-id")
    if instance is not None:
        events = events.filter(instance_id=instance)
    if task_class:
        events = events.filter(task_class__key=task_class)
    if actor:
        events = events.filter(actor=actor)
    if kind.endswith(".*"):
        events = events.filter(kind__startswith=kind[:-1])
    elif kind:
        events = events.filter(kind=kind)
    return events


def task_class_keys() -> list[str]:
    """Every task class's key, in order: the task class filter's choices."""
    return list(TaskClass.objects.order_by("key").values_list("key", flat=True))


def audit_kinds() -> list[str]:
    """Every kind of audit event, in order: the kinds are an enum, so no read of the log."""
    return sorted(AuditKind)


def recent_actors(selected: str) -> list[str]:
    """The actors of the latest events, and the one selected (its filter must stay shown)."""
    # Read and deduplicated here: as a subquery, PostgreSQL would hash it and scan the log.
    actors = set(
        AuditEvent.objects.order_by("-created_at", "-id").values_list("actor", flat=True)[
            :ACTIVITY_ACTORS_FROM
        ]
    )
    if selected:
        actors.add(selected)
    return sorted(actors)
