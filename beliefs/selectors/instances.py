"""Reads of instances, prompts and task classes that the pages and the API share, each with its
joins already chosen, and the JSON shapes the API answers with."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any
from uuid import UUID

from django.contrib.auth.models import User
from django.db.models import Count, Model, Q, QuerySet
from django.utils import timezone

from beliefs.errors import NotFound, PermissionDenied
from beliefs.models import (
    Belief,
    InstanceStatus,
    Prompt,
    PromptState,
    Receipt,
    Runtime,
    Slot,
    TaskClass,
    TaskClassShare,
    TaskInstance,
    blocking_open_q,
    is_blocking_open,
    is_overdue,
)
from beliefs.selectors import rows
from beliefs.selectors.beliefs import belief_summary, slot_effective_risk, with_light_instance


def _instances() -> QuerySet[TaskInstance]:
    return TaskInstance.objects.select_related("task_class", "principal")


def instance_prompts(instance: TaskInstance) -> list[Prompt]:
    """With slot and belief; of the belief's instance, only what `belief_summary` shows."""
    prompts = instance.prompts.select_related("slot", "belief", "belief__instance__runtime")
    return list(
        with_light_instance(prompts, "belief__instance").order_by("slot__position", "slot_id", "id")
    )


def open_prompts(instance: TaskInstance) -> list[Prompt]:
    return [p for p in instance_prompts(instance) if p.state == PromptState.OPEN]


def prompts_for_user(user: User, state: str | None = None) -> QuerySet[Prompt]:
    qs: QuerySet[Prompt] = Prompt.objects.filter(instance__principal=user).select_related(
        "slot", "instance__task_class", "belief", "belief__instance__runtime"
    )
    qs = with_light_instance(with_light_instance(qs, "instance"), "belief__instance")
    if state:
        qs = qs.filter(state=state)
    return qs.order_by("-created_at", "-id")


def inbox_instances(user: User, now: datetime | None = None) -> QuerySet[TaskInstance]:
    """The user's instances awaiting them, newest first, with counts of blocking prompts; with
    `now`, only those still waiting then (`TaskInstanceQuerySet.waiting`, with `next_expiry`)."""
    mine = TaskInstance.objects.select_related("task_class", "principal").filter(principal=user)
    awaiting = (
        mine.waiting(now) if now is not None else mine.filter(status=InstanceStatus.AWAITING_USER)
    )
    return awaiting.annotate(
        blocking_count=Count("prompts", filter=blocking_open_q("prompts__")),
        assumption_count=Count(
            "prompts", filter=Q(prompts__state=PromptState.OPEN, prompts__blocking=False)
        ),
    ).order_by("-created_at")


def task_class_with_slots(key: str) -> TaskClass:
    task_class = (
        TaskClass.objects.prefetch_related("slots__decisions", "decisions__slots")
        .filter(key=key)
        .first()
    )
    if task_class is None:
        raise NotFound(f"No task class {key!r}.", code="unknown_task_class")
    return task_class


def task_class_payload(task_class: TaskClass) -> dict[str, Any]:
    """Needs `task_class_with_slots`' prefetches."""
    slots = []
    for slot in task_class.slots.all():
        effective = slot_effective_risk(slot)
        slots.append(
            {
                "key": slot.key,
                "label": slot.label,
                "value_type": slot.value_type,
                "choices": slot.choices,
                "scope_order": slot.scope_order,
                "monotonic": slot.monotonic,
                "risk_class": slot.risk_class,
                "suggested_risk": slot.suggested_risk or None,
                "effective_risk": effective.risk.value,
                "risk_reason": effective.reason,
                "decisions": [d.key for d in slot.decisions.all()],
                "declared": slot.declared,
                "retired": slot.retired_at is not None,
            }
        )
    decisions = [
        {
            "key": d.key,
            "label": d.label,
            "risk_class": d.risk_class,
            "slots": [s.key for s in d.slots.all()],
        }
        for d in task_class.decisions.all()
    ]
    return {
        "key": task_class.key,
        "name": task_class.name,
        "open_slots": task_class.open_slots,
        "slots": slots,
        "decisions": decisions,
    }


def task_class_for_owner(key: str, runtime_id: int) -> TaskClass:
    """The task class, for the sharing endpoints: 404 for no such class, 403 for a runtime that
    does not own it (classes are public by key, so their existence is not a secret)."""
    task_class = TaskClass.objects.select_related("owner").filter(key=key).first()
    if task_class is None:
        raise NotFound(f"No task class {key!r}.", code="unknown_task_class")
    if task_class.owner_id != runtime_id:
        raise PermissionDenied(
            f"Task class {key!r} belongs to another runtime: only its owner sees and changes "
            "whom it is shared with.",
            code="not_owner",
        )
    return task_class


def share_payload(share: TaskClassShare) -> dict[str, Any]:
    return {
        "runtime": share.runtime.name,
        "history": share.history,
        "created_at": share.created_at.isoformat(),
        "updated_at": share.updated_at.isoformat(),
    }


def shares_payload(task_class: TaskClass) -> dict[str, Any]:
    shares = TaskClassShare.objects.filter(task_class=task_class).select_related("runtime")
    return {
        "task_class": task_class.key,
        "owner": task_class.owner.name if task_class.owner is not None else None,
        "shares": [share_payload(s) for s in shares.order_by("runtime__name")],
    }


def prompt_detail(prompt: Prompt) -> dict[str, Any]:
    """A prompt as the API shows it; needs slot and belief__instance selected."""
    belief = prompt.belief
    return {
        "id": prompt.pk,
        "instance": str(prompt.instance_id),
        "slot": prompt.slot.key,
        "label": prompt.slot.label,
        "route": prompt.route,
        "rule": prompt.rule,
        "reason": prompt.reason,
        "effective_risk": prompt.effective_risk,
        "risk_reason": prompt.risk_reason,
        "blocking": prompt.blocking,
        "state": prompt.state,
        "version": prompt.version,
        "prefill": prompt.prefill,
        "context_value": prompt.context_value,
        "belief": belief_summary(belief, carried=prompt.carried),
        "world_ref": prompt.world_ref,
        "world_now": prompt.world_now,
        "world_diff": prompt.world_diff,
        "action": prompt.action or None,
        "response_value": prompt.response_value,
        "reason_given": prompt.response_reason or None,
        "expires_at": prompt.expires_at.isoformat() if prompt.expires_at else None,
        "shown_at": prompt.shown_at.isoformat() if prompt.shown_at else None,
        "responded_at": prompt.responded_at.isoformat() if prompt.responded_at else None,
    }


def _receipt_fields(token: str | None, state: str | None) -> dict[str, Any]:
    """The instance read's receipt: the token only while it can be used."""
    return {"receipt": token if state == "valid" else None, "receipt_state": state}


def instance_payload(instance: TaskInstance) -> dict[str, Any]:
    prompts = instance_prompts(instance)
    blocking = sum(1 for p in prompts if p.is_blocking_open)
    receipt = instance.receipt
    state = receipt.state(timezone.now()) if receipt is not None else None
    return {
        "id": str(instance.pk),
        "task_class": instance.task_class.key,
        "principal": instance.principal.get_username(),
        "run_number": instance.run_number,
        "slots": instance.action_slots,
        "status": instance.status,
        "status_reason": instance.status_reason or None,
        "blocking": blocking,
        "world": instance.world,
        "bindings": instance.bindings,
        "bindings_digest": instance.bindings_digest or None,
        **_receipt_fields(receipt.token if receipt is not None else None, state),
        "plan": instance.plan_items,
        "prompts": [prompt_detail(p) for p in prompts],
        "planned_at": instance.planned_at.isoformat() if instance.planned_at else None,
        "created_at": instance.created_at.isoformat(),
        "updated_at": instance.updated_at.isoformat(),
    }


def plan_payload(instance: TaskInstance) -> dict[str, Any]:
    blocking = sum(
        1
        for item in instance.plan_items
        if item["prompt"] and is_blocking_open(item["prompt"]["state"], item["prompt"]["blocking"])
    )
    return {
        "id": str(instance.pk),
        "instance": str(instance.pk),
        "slots": instance.action_slots,
        "status": instance.status,
        "blocking": blocking,
        "bindings": instance.bindings,
        "bindings_digest": instance.bindings_digest or None,
        "items": instance.plan_items,
    }


# --- the instance read, in two fixed queries ---------------------------------------------------
#
# A runtime polls its instance while it waits for a person: the read is the API's most frequent
# request. It answers with exactly `instance_payload`'s body, from one query for the instance
# (with its task class key and principal's name) and one for its prompts (with slot, belief and
# the belief's run number), read with fixed SQL.

_INSTANCE_COLUMNS: tuple[tuple[type[Model], str], ...] = (
    *(
        (TaskInstance, name)
        for name in (
            "id",
            "run_number",
            "action_slots",
            "status",
            "status_reason",
            "world",
            "bindings",
            "bindings_digest",
            "plan_items",
            "planned_at",
            "created_at",
            "updated_at",
        )
    ),
    (TaskClass, "key"),
    (User, User.USERNAME_FIELD),
    (Receipt, "token"),
    (Receipt, "expires_at"),
    (Receipt, "revoked_at"),
    (Receipt, "redeemed_at"),
)
# fmt: off
_PROMPT_COLUMNS: tuple[tuple[type[Model], str], ...] = (
    *(
        (Prompt, name)
        for name in [  # in the order `_prompt_row_detail` unpacks them
            "id", "instance_id", "route", "rule", "reason", "effective_risk", "risk_reason",
            "blocking", "state", "version", "prefill", "context_value", "world_ref", "world_now",
            "world_diff", "action", "response_value", "response_reason", "expires_at",
            "shown_at", "responded_at",
        ]
    ),
    (Slot, "key"),
    (Slot, "label"),
    *(
        (Belief, name)
        for name in (
            "id", "source", "recorded_via", "instance_id", "turn", "acquired_at", "world_ref"
        )
    ),
    (TaskInstance, "run_number"),
    (Runtime, "name"),
)
# fmt: on
_EXPIRES_AT = _PROMPT_COLUMNS.index((Prompt, "expires_at"))


@cache
def _instance_sql(owner: str) -> str:
    instance = rows.column  # of the instance's own table, the one the WHERE names
    return (
        "SELECT "
        + ", ".join(rows.column(m, n) for m, n in _INSTANCE_COLUMNS)
        + f" FROM {rows.table(TaskInstance)}"
        + f" INNER JOIN {rows.table(TaskClass)}"
        + f" ON {rows.column(TaskClass, 'id')} = {instance(TaskInstance, 'task_class')}"
        + f" INNER JOIN {rows.table(User)}"
        + f" ON {rows.column(User, 'id')} = {instance(TaskInstance, 'principal')}"
        + f" LEFT OUTER JOIN {rows.table(Receipt)}"
        + f" ON {rows.column(Receipt, 'jti')} = {instance(TaskInstance, 'receipt')}"
        + f" WHERE {instance(TaskInstance, 'id')} = %s AND {instance(TaskInstance, owner)} = %s"
    )


@cache
def _prompts_sql() -> str:
    # The belief's instance is joined under an alias: the prompt's own instance is not joined.
    columns = [rows.column(m, n) for m, n in _PROMPT_COLUMNS[:-2]]
    columns.append(rows.column(TaskInstance, "run_number", alias="belief_instance"))
    columns.append(rows.column(Runtime, "name", alias="belief_runtime"))
    return (
        "SELECT "
        + ", ".join(columns)
        + f" FROM {rows.table(Prompt)}"
        + f" INNER JOIN {rows.table(Slot)}"
        + f" ON {rows.column(Slot, 'id')} = {rows.column(Prompt, 'slot')}"
        + f" LEFT OUTER JOIN {rows.table(Belief)}"
        + f" ON {rows.column(Belief, 'id')} = {rows.column(Prompt, 'belief')}"
        + f" LEFT OUTER JOIN {rows.table(TaskInstance, alias='belief_instance')}"
        + f" ON {rows.column(TaskInstance, 'id', alias='belief_instance')}"
        + f" = {rows.column(Belief, 'instance')}"
        + f" LEFT OUTER JOIN {rows.table(Runtime, alias='belief_runtime')}"
        + f" ON {rows.column(Runtime, 'id', alias='belief_runtime')}"
        + f" = {rows.column(TaskInstance, 'runtime', alias='belief_instance')}"
        + f" WHERE {rows.column(Prompt, 'instance')} = %s"
        + f" ORDER BY {rows.column(Slot, 'position')}, {rows.column(Slot, 'id')},"
        + f" {rows.column(Prompt, 'id')}"
    )


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def _prompt_row_detail(row: list[Any]) -> dict[str, Any]:
    """`prompt_detail` of one row of `_prompts_sql`."""
    (
        pk, instance_id, route, rule, reason, effective_risk, risk_reason, blocking, state,
        version, prefill, context_value, world_ref, world_now, world_diff, action,
        response_value, response_reason, expires_at, shown_at, responded_at, slot_key,
        slot_label, belief_id, source, recorded_via, belief_instance, turn, acquired_at,
        belief_world_ref, run_number, runtime_name,
    ) = row  # fmt: skip
    belief = None
    if belief_id is not None:
        belief = {
            "id": belief_id,
            "source": source,
            "recorded_via": recorded_via,
            "runtime": runtime_name,
            "instance": str(belief_instance),
            "run_number": run_number,
            "turn": turn,
            "acquired_at": acquired_at.isoformat(),
            "carried": belief_instance != instance_id,
            "world_ref": belief_world_ref,
        }
    return {
        "id": pk,
        "instance": str(instance_id),
        "slot": slot_key,
        "label": slot_label,
        "route": route,
        "rule": rule,
        "reason": reason,
        "effective_risk": effective_risk,
        "risk_reason": risk_reason,
        "blocking": blocking,
        "state": state,
        "version": version,
        "prefill": prefill,
        "context_value": context_value,
        "belief": belief,
        "world_ref": world_ref,
        "world_now": world_now,
        "world_diff": world_diff,
        "action": action or None,
        "response_value": response_value,
        "reason_given": response_reason or None,
        "expires_at": _iso(expires_at),
        "shown_at": _iso(shown_at),
        "responded_at": _iso(responded_at),
    }


@dataclass(frozen=True)
class InstanceRead:
    payload: dict[str, Any]
    # A blocking prompt is past its time to live: the instance must expire before anyone
    # reads it, which the services do (and then `instance_payload` answers).
    expiry_due: bool


def instance_read(
    instance_id: UUID, *, runtime_id: int | None = None, principal_id: int | None = None
) -> InstanceRead | None:
    """`instance_payload` of the instance if this runtime opened it, or if this person is its
    principal (exactly one of the two); None for anyone else or no such instance."""
    if (runtime_id is None) == (principal_id is None):
        raise ValueError("give exactly one of runtime_id and principal_id")
    owner, owner_id = (
        ("runtime", runtime_id) if runtime_id is not None else ("principal", principal_id)
    )
    found = rows.fetch(
        _instance_sql(owner),
        [rows.prepare(TaskInstance, "id", instance_id), owner_id],
        _INSTANCE_COLUMNS,
    )
    if not found:
        return None
    (
        pk, run_number, slots, status, status_reason, world, bindings, digest, plan_items,
        planned_at, created_at, updated_at, task_class_key, username, token, receipt_expires,
        revoked_at, redeemed_at,
    ) = found[0]  # fmt: skip
    prompt_rows = rows.fetch(
        _prompts_sql(), [rows.prepare(Prompt, "instance", pk)], _PROMPT_COLUMNS
    )
    prompts = [_prompt_row_detail(row) for row in prompt_rows]
    now = timezone.now()
    due = status == InstanceStatus.AWAITING_USER and any(
        is_overdue(p["state"], p["blocking"], row[_EXPIRES_AT], now)
        for p, row in zip(prompts, prompt_rows, strict=True)
    )
    blocking = sum(1 for p in prompts if is_blocking_open(p["state"], p["blocking"]))
    state = None
    if token is not None:
        state = Receipt(
            expires_at=receipt_expires, revoked_at=revoked_at, redeemed_at=redeemed_at
        ).state(now)
    payload = {
        "id": str(pk),
        "task_class": task_class_key,
        "principal": username,
        "run_number": run_number,
        "slots": slots,
        "status": status,
        "status_reason": status_reason or None,
        "blocking": blocking,
        "world": world,
        "bindings": bindings,
        "bindings_digest": digest or None,
        **_receipt_fields(token, state),
        "plan": plan_items,
        "prompts": prompts,
        "planned_at": _iso(planned_at),
        "created_at": created_at.isoformat(),
        "updated_at": updated_at.isoformat(),
    }
    return InstanceRead(payload=payload, expiry_due=due)
