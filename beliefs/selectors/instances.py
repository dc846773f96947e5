"""Reads of instances, prompts and task classes that the pages and the API share, each with its
joins already chosen, and the JSON shapes the API answers with."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db.models import Count, Q, QuerySet

from beliefs.errors import NotFound
from beliefs.models import InstanceStatus, Prompt, PromptState, TaskClass, TaskInstance
from beliefs.selectors.beliefs import belief_summary, slot_effective_risk, with_light_instance


def _instances() -> QuerySet[TaskInstance]:
    return TaskInstance.objects.select_related("task_class", "principal")


def instance_prompts(instance: TaskInstance) -> list[Prompt]:
    """With slot and belief; of the belief's instance, only what `belief_summary` shows."""
    prompts = instance.prompts.select_related("slot", "belief")
    return list(
        with_light_instance(prompts, "belief__instance").order_by("slot__position", "slot_id", "id")
    )


def open_prompts(instance: TaskInstance) -> list[Prompt]:
    return [p for p in instance_prompts(instance) if p.state == PromptState.OPEN]


def prompts_for_user(user: User, state: str | None = None) -> QuerySet[Prompt]:
    qs: QuerySet[Prompt] = Prompt.objects.filter(instance__principal=user).select_related(
        "slot", "instance__task_class", "belief"
    )
    qs = with_light_instance(with_light_instance(qs, "instance"), "belief__instance")
    if state:
        qs = qs.filter(state=state)
    return qs.order_by("-created_at", "-id")


def inbox_instances(user: User) -> QuerySet[TaskInstance]:
    """The user's instances awaiting them, newest first, with counts of blocking prompts."""
    return (
        _instances()
        .filter(principal=user, status=InstanceStatus.AWAITING_USER)
        .annotate(
            blocking_count=Count(
                "prompts", filter=Q(prompts__state=PromptState.OPEN, prompts__blocking=True)
            ),
            assumption_count=Count(
                "prompts", filter=Q(prompts__state=PromptState.OPEN, prompts__blocking=False)
            ),
        )
        .order_by("-created_at")
    )


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
    return {"key": task_class.key, "name": task_class.name, "slots": slots, "decisions": decisions}


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


def instance_payload(instance: TaskInstance) -> dict[str, Any]:
    prompts = instance_prompts(instance)
    blocking = sum(1 for p in prompts if p.state == PromptState.OPEN and p.blocking)
    return {
        "id": str(instance.pk),
        "task_class": instance.task_class.key,
        "principal": instance.principal.get_username(),
        "run_number": instance.run_number,
        "status": instance.status,
        "status_reason": instance.status_reason or None,
        "blocking": blocking,
        "world": instance.world,
        "bindings": instance.bindings,
        "bindings_digest": instance.bindings_digest or None,
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
        if item["prompt"]
        and item["prompt"]["blocking"]
        and item["prompt"]["state"] == PromptState.OPEN
    )
    return {
        "instance": str(instance.pk),
        "status": instance.status,
        "blocking": blocking,
        "bindings": instance.bindings,
        "bindings_digest": instance.bindings_digest or None,
        "items": instance.plan_items,
    }
