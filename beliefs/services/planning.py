"""Planning: route every slot, reconcile the prompts, settle the status and bindings."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from beliefs.domain import policy
from beliefs.domain.canonical import bindings_digest, canonical_json
from beliefs.domain.policy import RiskClass, Route
from beliefs.models import (
    InstanceStatus,
    Prompt,
    PromptState,
    TaskClass,
    TaskInstance,
)
from beliefs.selectors.beliefs import SlotState, belief_summary, slot_states
from beliefs.services.audit import Actor, audit
from beliefs.services.expiry import expire_locked_if_due
from beliefs.services.lifecycle import lock_instance, require_open
from beliefs.services.notify import instance_status_changed
from beliefs.services.retry import retry_on_race

DESIRED_FIELDS = [
    "route",
    "rule",
    "reason",
    "effective_risk",
    "risk_reason",
    "blocking",
    "belief_id",
    "prefill",
    "context_value",
    "world_ref",
    "world_now",
    "world_diff",
]


def _desired_prompt(state: SlotState) -> dict[str, Any]:
    routing, belief = state.routing, state.belief
    prefill = None
    context_value = None
    if belief is not None:
        if routing.route in (Route.CONFIRM, Route.SURFACED):
            prefill = belief.value
        elif routing.route is Route.ASK:
            context_value = belief.value  # read-only context, never pre-filled
    return {
        "route": routing.route.value,
        "rule": routing.rule.value,
        "reason": routing.reason,
        "effective_risk": state.effective.risk.value,
        "risk_reason": state.effective.reason,
        "blocking": routing.blocking,
        "belief_id": belief.pk if belief is not None else None,
        "prefill": prefill,
        "context_value": context_value,
        "world_ref": belief.world_ref if belief is not None else None,
        "world_now": state.world_now,
        "world_diff": state.diff,
    }


# What a re-versioned prompt changes: the desired content, its version, maybe its expiry.
REVISED_FIELDS = [*DESIRED_FIELDS, "version", "expires_at", "updated_at"]


def _prompt_matches(prompt: Prompt, desired: Mapping[str, Any]) -> bool:
    # Field by field in canonical JSON, as one document per side: JSON values delimit
    # themselves, so the two lists' texts are equal exactly when every field's text is, and a
    # slot costs two serialisations instead of two per field.
    return canonical_json([getattr(prompt, f) for f in desired]) == canonical_json(
        list(desired.values())
    )


def _held(state: SlotState, prompt: Prompt) -> SlotState:
    """The slot state with the route and risk of the blocking prompt it already has."""
    return dataclasses.replace(
        state,
        effective=policy.EffectiveRisk(RiskClass(prompt.effective_risk), prompt.risk_reason),
        routing=policy.Routing(Route(prompt.route), policy.Rule(prompt.rule), prompt.reason),
    )


def plan_locked(instance: TaskInstance, actor: Actor) -> list[dict[str, Any]]:
    """Route every slot, reconcile prompts, settle the status. Caller holds the instance lock.

    Idempotent: a prompt whose content would not change keeps its version; a prompt whose
    belief, route or world diff changed gets version + 1, so a response to what the person saw
    before is refused as stale.
    """
    now = timezone.now()
    status_before = instance.status
    states = slot_states(instance)
    open_prompts = {p.slot_id: p for p in instance.prompts.filter(state=PromptState.OPEN)}
    # Each slot's state and the prompt it keeps, and what changed; the writes are then made in
    # one statement per kind (supersede, create, re-version), whatever the number of slots.
    planned: list[tuple[SlotState, Prompt | None, str]] = []
    superseded: list[Prompt] = []
    created: list[Prompt] = []
    revised: list[Prompt] = []
    for state in states:
        prompt = open_prompts.get(state.slot.pk)
        if (
            prompt is not None
            and prompt.blocking
            and not state.routing.blocking
            and state.belief is not None
            and prompt.belief_id == state.belief.pk
        ):
            # The same belief now routes to something weaker: only a classification change can
            # do that, and a downgrade never releases what was already asked of a person:
            # the blocking prompt stands.
            state = _held(state, prompt)
        change = ""
        if state.routing.route is Route.SILENT:
            if prompt is not None:
                prompt.state = PromptState.SUPERSEDED
                superseded.append(prompt)
                planned.append((state, prompt, "superseded"))
                continue
        else:
            desired = _desired_prompt(state)
            if prompt is None:
                prompt = Prompt(
                    instance=instance,
                    slot=state.slot,
                    expires_at=now + settings.CONSOLE_PROMPT_TTL if desired["blocking"] else None,
                    **desired,
                )
                created.append(prompt)
                change = "created"
            elif not _prompt_matches(prompt, desired):
                became_blocking = desired["blocking"] and not prompt.blocking
                for field, value in desired.items():
                    setattr(prompt, field, value)
                prompt.version += 1
                if became_blocking:
                    prompt.expires_at = now + settings.CONSOLE_PROMPT_TTL
                prompt.updated_at = now
                revised.append(prompt)
                change = f"v{prompt.version}"
        planned.append((state, prompt, change))

    if superseded:
        Prompt.objects.filter(pk__in=[p.pk for p in superseded]).update(
            state=PromptState.SUPERSEDED, updated_at=now
        )
    if created:
        Prompt.objects.bulk_create(created)  # sets each prompt's pk (RETURNING on both)
    if revised:
        Prompt.objects.bulk_update(revised, REVISED_FIELDS)
    items = []
    changes = []
    for state, prompt, change in planned:
        if change and prompt is not None:
            changes.append({"slot": state.slot.key, "prompt": prompt.pk, "change": change})
        items.append(plan_item(state, None if change == "superseded" else prompt))

    blocking = sum(1 for item in items if item["prompt"] and item["prompt"]["blocking"])
    fields = ["plan_items", "planned_at", "status", "bindings", "bindings_digest", "updated_at"]
    instance.plan_items = items
    instance.planned_at = now
    if blocking:
        instance.status = InstanceStatus.AWAITING_USER
        instance.bindings = None
        instance.bindings_digest = ""
    else:
        bindings = {item["slot"]: item["value"] for item in items}
        instance.status = InstanceStatus.READY
        instance.bindings = bindings
        instance.bindings_digest = bindings_digest(bindings)
    instance.save(update_fields=fields)
    if changes or instance.status == InstanceStatus.READY:
        audit(
            "instance.planned",
            actor=actor,
            instance=instance,
            data={
                "status": instance.status,
                "blocking": blocking,
                "changes": changes,
                "bindings_digest": instance.bindings_digest,
            },
        )
    instance_status_changed(instance, status_before)
    return items


def plan_item(state: SlotState, prompt: Prompt | None) -> dict[str, Any]:
    route = state.routing.route
    value = None
    if state.belief is not None and route is not Route.ASK:
        value = state.belief.value
    return {
        "slot": state.slot.key,
        "label": state.slot.label,
        "route": route.value,
        "rule": state.routing.rule.value,
        "reason": state.routing.reason,
        "effective_risk": state.effective.risk.value,
        "risk_reason": state.effective.reason,
        "value": value,
        "belief": belief_summary(state.belief, state.carried),
        "world_diff": state.diff,
        "prompt": None
        if prompt is None
        else {
            "id": prompt.pk,
            "version": prompt.version,
            "state": prompt.state,
            "blocking": prompt.blocking,
        },
    }


@retry_on_race
@transaction.atomic
def instance_plan(*, instance: TaskInstance, actor: Actor) -> TaskInstance:
    """Plan an instance (idempotent). A ready instance keeps its final plan and bindings."""
    instance = lock_instance(instance)
    expire_locked_if_due(instance, timezone.now())
    if instance.status == InstanceStatus.READY:
        return instance
    require_open(instance, "plan")
    plan_locked(instance, actor)
    return instance


@transaction.atomic
def instances_replan_for_task_class(*, task_class: TaskClass, actor: Actor) -> int:
    """Re-plan every planned, open instance of a task class (after a classification upgrade).

    Ready instances keep their final bindings: a classification never binds retroactively.
    """
    count = 0
    # Only the instances' own rows, in one order (by id), so two re-plans cannot deadlock.
    for instance in (
        TaskInstance.objects.select_for_update(of=("self",), no_key=True)
        .filter(task_class=task_class, status=InstanceStatus.AWAITING_USER)
        .select_related("task_class", "principal")
        .order_by("pk")
    ):
        plan_locked(instance, actor)
        count += 1
    return count
