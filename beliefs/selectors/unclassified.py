"""What waits for a classifier: every task class with its counts, and the unclassified slots
and decisions, first come first."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

from django.db.models import Count, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce

from beliefs.domain.policy import RiskClass
from beliefs.models import Decision, RiskChangeRequest, Slot, TaskClass

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations

UNCLASSIFIED = RiskClass.UNCLASSIFIED.value


class TaskClassCounts(TypedDict):
    slot_count: int
    decision_count: int
    unclassified_slots: int
    unclassified_decisions: int
    pending_count: int


def task_classes_counted() -> QuerySet[WithAnnotations[TaskClass, TaskClassCounts]]:
    """Every task class by key, in one query, with `slot_count`, `decision_count`, how many of
    each are unclassified (`unclassified_slots`, `unclassified_decisions`) and its pending
    four-eyes requests (`pending_count`)."""
    return TaskClass.objects.annotate(
        slot_count=Count("slots", distinct=True),
        unclassified_slots=Count("slots", filter=Q(slots__risk_class=UNCLASSIFIED), distinct=True),
        unclassified_decisions=Count(
            "decisions", filter=Q(decisions__risk_class=UNCLASSIFIED), distinct=True
        ),
        decision_count=Count("decisions", distinct=True),
        pending_count=Coalesce(
            Subquery(
                RiskChangeRequest.objects.filter(
                    task_class=OuterRef("pk"), state=RiskChangeRequest.State.PENDING
                )
                .values("task_class")
                .annotate(n=Count("id"))
                .values("n")
            ),
            0,
        ),
    ).order_by("key")


def unclassified_slots(limit: int) -> list[Slot]:
    """The first `limit` unclassified slots, by task class and position, with their class."""
    queue = (
        Slot.objects.filter(risk_class=UNCLASSIFIED)
        .select_related("task_class")
        .order_by("task_class__key", "position", "id")
    )
    return list(queue[:limit])


def unclassified_decisions(limit: int) -> list[Decision]:
    """The first `limit` unclassified decisions, by task class, with their class."""
    queue = (
        Decision.objects.filter(risk_class=UNCLASSIFIED)
        .select_related("task_class")
        .order_by("task_class__key", "id")
    )
    return list(queue[:limit])
