"""Retention and erasure: a person's values and world references removed from every row that
holds them, while the audit keeps who did what and the digests (`audit.digest_of`).

What holds a person's values: their beliefs (the value, its world reference, a veto's reason),
their instances' prompts (pre-fills, context, worlds, the answer and its reason), the responses,
the instances (the world, the plan's items, the bindings, the reason they closed) and the
webhook events those instances caused (the bindings of `instance.ready`, a closing reason).
Nothing else does: receipts, signatures and approvals hold digests, emails are rendered when
they are sent, and the audit has kept digests since migration 0035.

An erased row keeps its shape (a slot's key with a null value), so that a runtime reading an
erased instance gets its status and a clear `erased_at`, not an error.
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import reduce
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import JSONField, Q, Value
from django.utils import timezone

from beliefs.domain.vocabulary import AuditKind
from beliefs.errors import field_error
from beliefs.models import (
    AuditEvent,
    Belief,
    BeliefStatus,
    InstanceStatus,
    Prompt,
    PromptResponse,
    PromptState,
    Receipt,
    TaskClass,
    TaskInstance,
    WebhookEvent,
)
from beliefs.services.audit import SYSTEM, Actor, audit, audit_all, audit_replaced
from beliefs.services.changes import instance_changed
from beliefs.services.lifecycle import close_instance, lock_instance

# What a removed free text (a reason the person typed, why an instance closed) reads.
ERASED_TEXT = "(erased)"
# Why erasure cancels a person's unfinished instances (kept: it holds nothing of theirs).
ERASED_BY_REQUEST = "the person's data was erased at their request"
# How many instances one sweep erases at most, each in its own transaction.
RETENTION_BATCH = 200
# An instance's values are removed only once nothing more can happen to it.
FINISHED = (InstanceStatus.READY, InstanceStatus.CANCELLED, InstanceStatus.EXPIRED)
JSON_NULL = Value(None, JSONField())


def _nulled(mapping: Any) -> Any:
    """A `{key: value}` mapping with every value removed, its keys kept."""
    return dict.fromkeys(mapping) if isinstance(mapping, dict) else None


def _plan_item(item: Any) -> Any:
    if not isinstance(item, dict):
        return item
    item = {**item, "value": None, "world_diff": []}
    if isinstance(item.get("belief"), dict):
        item["belief"] = {**item["belief"], "world_ref": None}
    return item


def _payload(payload: Any) -> Any:
    """A webhook event's body with the values it carried removed (its types and ids kept)."""
    if not isinstance(payload, dict) or not isinstance(payload.get("data"), dict):
        return payload
    data = dict(payload["data"])
    if "bindings" in data:
        data["bindings"] = _nulled(data["bindings"])
    if data.get("reason") not in (None, "", ERASED_BY_REQUEST):
        data["reason"] = ERASED_TEXT
    return {**payload, "data": data}


def _erase_text(queryset: Any, name: str) -> int:
    return int(queryset.exclude(**{name: ""}).update(**{name: ERASED_TEXT}))


def _erase_instances(instances: list[TaskInstance], now: datetime) -> Counter[str]:
    """Remove the values of these (locked, finished) instances; per table, how many rows."""
    removed: Counter[str] = Counter()
    ids = [instance.pk for instance in instances]
    beliefs = Belief.objects.filter(instance_id__in=ids)
    removed["beliefs"] += beliefs.update(
        value=JSON_NULL, world_ref=None, status=BeliefStatus.ERASED
    )
    _erase_text(beliefs, "status_reason")
    prompts = Prompt.objects.filter(instance_id__in=ids)
    removed["prompts"] += prompts.update(
        prefill=None,
        context_value=None,
        world_ref=None,
        world_now=None,
        world_diff=[],
        response_value=None,
        updated_at=now,
    )
    _erase_text(prompts, "response_reason")
    responses = PromptResponse.objects.filter(prompt__instance_id__in=ids)
    removed["responses"] += responses.update(value=None)
    _erase_text(responses, "reason")
    for instance in instances:
        instance.updated_at = now  # a runtime polling the instance sees that it changed
        instance.world = {}
        instance.plan_items = [_plan_item(item) for item in instance.plan_items or []]
        instance.bindings = _nulled(instance.bindings)
        if instance.status_reason not in ("", ERASED_BY_REQUEST):
            instance.status_reason = ERASED_TEXT
        instance.erased_at = now
    TaskInstance.objects.bulk_update(
        instances, ["world", "plan_items", "bindings", "status_reason", "erased_at", "updated_at"]
    )
    removed["instances"] += len(instances)
    for instance in instances:  # a page or an agent waiting on one reads it again
        instance_changed(instance.pk)
    events = list(WebhookEvent.objects.filter(instance_id__in=ids).only("pk", "payload"))
    for event in events:
        event.payload = _payload(event.payload)
    WebhookEvent.objects.bulk_update(events, ["payload"], batch_size=500)
    removed["webhook_events"] += len(events)
    return removed


def _erased_events(instances: Iterable[TaskInstance], actor: Actor, why: dict[str, Any]) -> None:
    audit_all(
        [
            audit(AuditKind.INSTANCE_VALUES_ERASED, actor=actor, instance=i, data=why, save=False)
            for i in instances
        ]
    )


# --- erasure of one person, on request ---------------------------------------------------------


@dataclass
class Erasure:
    """What `person_erase` removed (rows per table) and what it kept, each with its reason."""

    username: str
    cancelled: int = 0
    removed: Counter[str] = field(default_factory=Counter)
    kept: list[tuple[str, str]] = field(default_factory=list)

    def as_data(self) -> dict[str, Any]:
        return {
            "person": self.username,
            "cancelled": self.cancelled,
            "removed": dict(sorted(self.removed.items())),
            "kept": [{"what": what, "why": why} for what, why in self.kept],
        }


@transaction.atomic
def person_erase(*, user: User, actor: Actor) -> Erasure:
    """Remove every value, world reference and typed reason of `user` from every table. Their
    unfinished instances are cancelled first (the runtime is told, as for any cancellation):
    without their values they could not go on. Audited, once for the person and once per
    instance; the audit itself only ever held digests, so nothing in it changes."""
    erasure = Erasure(username=user.get_username())
    instances = list(
        TaskInstance.objects.filter(principal=user).order_by("pk").values_list("pk", flat=True)
    )
    locked = [lock_instance(TaskInstance(pk=pk)) for pk in instances]
    for instance in locked:
        if instance.is_open:
            close_instance(
                instance, InstanceStatus.CANCELLED, PromptState.CANCELLED, ERASED_BY_REQUEST
            )
            audit(
                AuditKind.INSTANCE_CANCELLED,
                actor=actor,
                instance=instance,
                data={"reason": ERASED_BY_REQUEST},
            )
            erasure.cancelled += 1
    now = timezone.now()
    erasure.removed = _erase_instances(locked, now)
    # Beliefs of the person outside their own instances (none are written today): all of them.
    erasure.removed["beliefs"] += (
        Belief.objects.filter(principal=user)
        .exclude(status=BeliefStatus.ERASED)
        .update(value=JSON_NULL, world_ref=None, status=BeliefStatus.ERASED)
    )
    _erased_events(locked, actor, {"why": "person", "person": user.get_username()})
    erasure.kept = _kept(user, instances)
    audit(
        AuditKind.PERSON_ERASED,
        actor=actor,
        subject=user.get_username(),
        data=erasure.as_data(),
    )
    return erasure


def _kept(user: User, instances: list[Any]) -> list[tuple[str, str]]:
    events = AuditEvent.objects.filter(Q(actor_user=user) | Q(instance_id__in=instances)).count()
    receipts = Receipt.objects.filter(instance_id__in=instances).count()
    return [
        (
            f"the account {user.get_username()!r}, its roles and its single sign-on identities",
            "the audit names people by their username; deactivate or delete the account in "
            "the admin if the person leaves",
        ),
        (
            f"{len(instances)} instances (ids, task class, status, times, slot keys)",
            "a runtime that reads one gets its status, not an error",
        ),
        (
            f"{events} audit events",
            "the audit is append-only and keeps who did what, with digests of the values, "
            "never the values",
        ),
        (
            f"{receipts} receipts, and the signatures and approvals",
            "they hold digests and the username, never values: a receipt still verifies",
        ),
    ]


# --- retention ---------------------------------------------------------------------------------


@transaction.atomic
def task_class_set_retention(*, task_class: TaskClass, days: int | None, actor: Actor) -> TaskClass:
    """Keep a class's finished instances' values `days` days after their last change (None:
    until erased on request). Audited."""
    if days is not None and (isinstance(days, bool) or not isinstance(days, int) or days < 1):
        raise field_error("retention_days", "must be a whole number of days, at least 1")
    task_class = TaskClass.objects.select_for_update().get(pk=task_class.pk)
    if task_class.retention_days == days:
        return task_class
    before, task_class.retention_days = task_class.retention_days, days
    task_class.save(update_fields=["retention_days", "updated_at"])
    audit_replaced(
        AuditKind.TASK_CLASS_RETENTION_CHANGED,
        before,
        days,
        actor=actor,
        task_class=task_class,
        subject=task_class.key,
    )
    return task_class


def retention_due(now: datetime) -> Q | None:
    """Instances whose class keeps values for a period that has passed since they last changed,
    finished, and not erased yet; None when no class has a retention period."""
    periods = TaskClass.objects.filter(retention_days__isnull=False).values_list(
        "pk", "retention_days"
    )
    due = [
        Q(task_class_id=pk, updated_at__lt=now - timedelta(days=days or 0)) for pk, days in periods
    ]
    if not due:
        return None
    return reduce(operator.or_, due) & Q(erased_at__isnull=True, status__in=FINISHED)


def retention_apply(*, now: datetime | None = None, batch: int = RETENTION_BATCH) -> int:
    """Remove the values of up to `batch` instances past their class's retention period, each in
    its own transaction (re-checked under its lock); returns how many. Safe to run from several
    workers at once."""
    now = now or timezone.now()
    due = retention_due(now)
    if due is None:
        return 0
    erased = 0
    oldest = TaskInstance.objects.filter(due).order_by("updated_at").values_list("pk", flat=True)
    for pk in oldest[:batch]:
        with transaction.atomic():
            instance = lock_instance(TaskInstance(pk=pk))
            if instance.erased_at is not None or instance.status not in FINISHED:
                continue
            days = instance.task_class.retention_days
            if days is None or instance.updated_at >= now - timedelta(days=days):
                continue
            _erase_instances([instance], now)
            _erased_events([instance], SYSTEM, {"why": "retention", "retention_days": days})
            erased += 1
    return erased
