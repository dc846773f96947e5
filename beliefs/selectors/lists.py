"""The API's lists: a runtime's instances and the task classes it may use, newest first."""

from __future__ import annotations

from django.db.models import Exists, OuterRef, Prefetch, Q, QuerySet

from beliefs.domain.policy import RiskClass
from beliefs.models import Runtime, Slot, TaskClass, TaskClassShare, TaskInstance
from beliefs.selectors.shapes import InstanceSummaryJSON, TaskClassSummaryJSON


def instances_of_runtime(
    runtime_id: int, *, status: str | None = None, principal: str | None = None
) -> QuerySet[TaskInstance]:
    """The instances the runtime opened (through any of its keys), newest first; with `status`
    or `principal` (a username), only those. Read off `instance_by_runtime`."""
    found = TaskInstance.objects.filter(runtime_id=runtime_id)
    if status is not None:
        found = found.filter(status=status)
    if principal is not None:
        found = found.filter(principal__username=principal)
    return found.select_related("task_class", "principal").order_by("-created_at", "-id")


def instance_summary(instance: TaskInstance) -> InstanceSummaryJSON:
    return {
        "id": str(instance.pk),
        "task_class": instance.task_class.key,
        "principal": instance.principal.username,
        "run_number": instance.run_number,
        "status": instance.status,
        "status_reason": instance.status_reason or None,
        "created_at": instance.created_at.isoformat(),
        "updated_at": instance.updated_at.isoformat(),
    }


def task_classes_for(reader: Runtime | None) -> QuerySet[TaskClass]:
    """The task classes `reader` (a runtime) may read: its own, those shared with it and those
    nobody owns yet, as `task_class_with_slots` lets it read each; every class for a person
    (None). Newest change first, with their slots."""
    found = TaskClass.objects.prefetch_related(
        Prefetch("slots", queryset=Slot.objects.order_by("pk"))
    )
    if reader is not None:
        shared = TaskClassShare.objects.filter(task_class=OuterRef("pk"), runtime=reader)
        found = found.filter(Q(owner__isnull=True) | Q(owner=reader) | Exists(shared))
    return found.order_by("-updated_at", "-id")


def task_class_summary(task_class: TaskClass, reader: Runtime | None) -> TaskClassSummaryJSON:
    """Needs `task_classes_for`' prefetch."""
    slots = list(task_class.slots.all())
    return {
        "key": task_class.key,
        "name": task_class.name,
        "open_slots": task_class.open_slots,
        "owned": reader is not None and task_class.owner_id == reader.pk,
        "slots": [slot.key for slot in slots],
        "unclassified": [s.key for s in slots if s.risk_class == RiskClass.UNCLASSIFIED],
        "updated_at": task_class.updated_at.isoformat(),
    }
