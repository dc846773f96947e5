"""A person's responses to prompts: confirm, edit, answer, reject, veto."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import Max, Q
from django.utils import timezone

from beliefs.domain.canonical import canonical_json
from beliefs.domain.policy import Source
from beliefs.domain.vocabulary import ACTIONS_BY_ROUTE, MAX_TEXT_LENGTH, TYPED_ACTIONS, Action
from beliefs.errors import (
    Conflict,
    IdempotencyKeyMismatch,
    InvalidInput,
    NotFound,
    StaleVersion,
    field_error,
)
from beliefs.models import (
    Belief,
    BeliefStatus,
    InstanceStatus,
    Prompt,
    PromptResponse,
    PromptState,
    Slot,
    TaskInstance,
)
from beliefs.services.audit import Actor, audit
from beliefs.services.expiry import instance_expire_if_due
from beliefs.services.lifecycle import close_instance, lock_instance, require_open
from beliefs.services.planning import plan_locked
from beliefs.services.retry import retry_on_race


@dataclass(frozen=True)
class RespondResult:
    prompt: Prompt
    instance: TaskInstance
    replayed: bool  # True when an identical earlier response was returned, nothing written


def _check_value(slot: Slot, value: Any, field: str = "value") -> Any:
    if isinstance(value, str):
        value = value.strip()
        if len(value) > MAX_TEXT_LENGTH:
            raise field_error(field, f"must be at most {MAX_TEXT_LENGTH} characters")
    if value is None or value == "":
        raise field_error(field, "is required")
    if slot.value_type == Slot.ValueType.NUMBER:
        if isinstance(value, str):
            try:
                value = float(value) if any(c in value for c in ".eE") else int(value)
            except ValueError:
                raise field_error(field, "must be a number") from None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise field_error(field, "must be a number")
        if isinstance(value, float) and not math.isfinite(value):
            raise field_error(field, "must be a finite number")
    elif slot.value_type == Slot.ValueType.BOOLEAN:
        if isinstance(value, str) and value.lower() in {"true", "yes", "false", "no"}:
            value = value.lower() in {"true", "yes"}
        if not isinstance(value, bool):
            raise field_error(field, "must be true or false")
    elif slot.value_type in (Slot.ValueType.STRING, Slot.ValueType.DATE):
        if not isinstance(value, str):
            raise field_error(field, "must be text")
        if slot.value_type == Slot.ValueType.DATE:
            try:
                datetime.strptime(value, "%Y-%m-%d")  # noqa: DTZ007 - a calendar date, no time
            except ValueError:
                raise field_error(field, "must be a date written YYYY-MM-DD") from None
    if slot.scope_order and value not in slot.scope_order:
        raise field_error(field, f"must be one of {', '.join(slot.scope_order)}")
    if slot.choices and value not in slot.choices:
        raise field_error(field, f"must be one of {', '.join(map(str, slot.choices))}")
    return value


def earlier_grant(prompt: Prompt) -> Any:
    """The grant an escalation is measured against: the context value, but only where the
    person gave it. A tool's or a model's value is a guess, not a grant; measured against it,
    a poisoned 'admin' would let the person type 'admin' once. None: any grant escalates.
    """
    belief = prompt.belief
    if belief is None or belief.source != Source.USER.value:
        return None
    return prompt.context_value


def escalates(slot: Slot, earlier: Any, value: Any) -> bool:
    """Does `value` rank above the earlier grant in the slot's scope order?"""
    order = slot.scope_order or []
    if value not in order:
        return False
    if earlier not in order:
        return True  # nothing to compare with: treat any grant as an escalation
    return order.index(value) > order.index(earlier)


def _same_response(response: PromptResponse, action: str, value: Any) -> bool:
    if response.action != action:
        return False
    if action in TYPED_ACTIONS:
        return canonical_json(response.value) == canonical_json(value)
    return True


def _checked_or_raw(slot: Slot, action: str, value: Any) -> Any:
    """A repeated typed value as it would have been stored, or as sent when it is not valid
    (then it cannot equal what was stored)."""
    if action not in TYPED_ACTIONS:
        return value
    try:
        return _check_value(slot, value)
    except InvalidInput:
        return value


def _same_request(
    response: PromptResponse, prompt: Prompt, action: str, version: int, value: Any, reason: str
) -> bool:
    """Is this the request that was answered with `response`: the same action, version, typed
    value and reason? An Idempotency-Key stands for one request, not for any request."""
    return (
        response.version == version
        and response.reason == reason
        and _same_response(response, action, _checked_or_raw(prompt.slot, action, value))
    )


def _next_turn(instance: TaskInstance) -> int:
    return (instance.beliefs.aggregate(m=Max("turn"))["m"] or 0) + 1


@retry_on_race
def prompt_respond(
    *,
    prompt_id: int,
    user: AbstractBaseUser,
    action: Action | str,
    version: int,
    value: Any = None,
    value_confirmation: Any = None,
    reason: str = "",
    idempotency_key: str | None = None,
) -> RespondResult:
    """A person's answer to one prompt of their own instance (input validated at the edge)."""
    found = (
        Prompt.objects.filter(pk=prompt_id, instance__principal=user)
        .select_related("instance")
        .first()
    )
    if found is None:
        raise NotFound("No such prompt.", code="not_found")
    # Expiry is settled first, in a transaction of its own, so that the refusal of a late
    # answer does not roll the instance's expiry back with it.
    instance_expire_if_due(instance=found.instance)
    return _prompt_respond(
        found=found,
        user=user,
        action=Action(action),
        version=version,
        value=value,
        value_confirmation=value_confirmation,
        reason=reason,
        idempotency_key=idempotency_key,
    )


@transaction.atomic
def _prompt_respond(
    *,
    found: Prompt,
    user: AbstractBaseUser,
    action: Action,
    version: int,
    value: Any,
    value_confirmation: Any,
    reason: str,
    idempotency_key: str | None,
) -> RespondResult:
    instance = lock_instance(found.instance)
    prompt = Prompt.objects.select_related("slot", "belief").get(pk=found.pk)
    actor = Actor(user=user)

    if idempotency_key:
        earlier = PromptResponse.objects.filter(
            responded_by=user, idempotency_key=idempotency_key
        ).first()
        if earlier is not None:
            if earlier.prompt_id != prompt.pk:
                raise Conflict(
                    "This Idempotency-Key was already used for another prompt.",
                    code="idempotency_key_reused",
                )
            if not _same_request(earlier, prompt, action, version, value, reason):
                raise IdempotencyKeyMismatch(
                    "This Idempotency-Key was already used for a different answer to this "
                    "prompt (action, value, reason or version). The first answer stands; "
                    "send a new key for a new answer.",
                    extra={"prompt": prompt_payload(prompt)},
                )
            return RespondResult(prompt, instance, replayed=True)

    # An identical repeat of a response already taken returns it again and writes nothing.
    earlier = PromptResponse.objects.filter(prompt=prompt, version=version).first()
    if earlier is not None:
        if _same_response(earlier, action, _checked_or_raw(prompt.slot, action, value)):
            return RespondResult(prompt, instance, replayed=True)
        raise Conflict(
            "This prompt was already answered; your answer was not recorded.",
            code="already_answered",
            extra={"prompt": prompt_payload(prompt)},
        )

    if prompt.state != PromptState.OPEN:  # expiry was settled by prompt_respond just before
        raise Conflict(
            f"This prompt is no longer open (it is {prompt.state}); nothing was recorded.",
            code=f"prompt_{prompt.state}",
            extra={"prompt": prompt_payload(prompt)},
        )
    if version != prompt.version:
        raise StaleVersion(
            "What you answered has changed since you saw it (the value or the world it refers "
            "to). Nothing was recorded; review the fresh form and answer again.",
            extra={"prompt": prompt_payload(prompt)},
        )
    allowed = ACTIONS_BY_ROUTE[prompt.route]
    if action not in allowed:
        raise field_error("action", f"a {prompt.route} prompt takes {', '.join(allowed)}")
    if action == Action.VETO and instance.status not in (
        InstanceStatus.AWAITING_USER,
        InstanceStatus.READY,
    ):
        raise Conflict(f"The instance is {instance.status}.", code=f"instance_{instance.status}")
    if action != Action.VETO:
        require_open(instance, "answer")

    new_value = None
    if action == "confirm":
        new_value = prompt.prefill
    elif action in ("edit", "answer"):
        new_value = _check_value(prompt.slot, value)
        grant = earlier_grant(prompt)
        if (
            prompt.slot.monotonic
            and prompt.slot.scope_order
            and escalates(prompt.slot, grant, new_value)
        ):
            again = (
                value_confirmation.strip()
                if isinstance(value_confirmation, str)
                else value_confirmation
            )
            if again != new_value:
                raise field_error(
                    "value_confirmation",
                    (
                        f"{new_value!r} grants more than the earlier {grant!r}"
                        if grant is not None
                        else f"{new_value!r} is a new grant"
                    )
                    + ": type it a second time to confirm the escalation",
                )

    try:
        with transaction.atomic():
            response = PromptResponse.objects.create(
                prompt=prompt,
                version=prompt.version,
                action=action,
                value=new_value,
                reason=reason,
                responded_by=user,
                idempotency_key=idempotency_key or None,
            )
    except IntegrityError:
        raise Conflict(
            "Someone answered this prompt at the same moment; nothing more was recorded.",
            code="already_answered",
        ) from None

    now = timezone.now()
    prompt.action = action
    prompt.response_reason = reason
    prompt.responded_at = now
    data: dict[str, Any] = {"action": action, "version": prompt.version, "reason": reason}

    if action in ("confirm", "edit", "answer"):
        world_seen = prompt.world_now if prompt.world_now is not None else prompt.world_ref
        Belief.objects.filter(
            instance=instance, slot=prompt.slot, status=BeliefStatus.ACTIVE
        ).update(status=BeliefStatus.SUPERSEDED, status_reason=f"{action} by {user}")
        belief = Belief.objects.create(
            instance=instance,
            principal_id=instance.principal_id,
            slot=prompt.slot,
            value=new_value,
            source=Source.USER.value,
            turn=_next_turn(instance),
            acquired_at=now,
            world_ref=world_seen,
        )
        response.belief = belief
        response.save(update_fields=["belief"])
        prompt.state = PromptState.ANSWERED
        prompt.response_value = new_value
        prompt.save()
        data.update({"value": new_value, "belief": belief.pk, "world_ref": world_seen})
        audit(
            f"prompt.{action}",
            actor=actor,
            instance=instance,
            prompt=prompt,
            subject=prompt.slot.key,
            data=data,
        )
        plan_locked(instance, actor)
    elif action == "reject":
        prompt.state = PromptState.REJECTED
        prompt.save()
        close_instance(
            instance, InstanceStatus.CANCELLED, PromptState.CANCELLED, reason or "rejected"
        )
        audit(
            "prompt.reject",
            actor=actor,
            instance=instance,
            prompt=prompt,
            subject=prompt.slot.key,
            data=data,
        )
    else:  # veto
        vetoed = prompt.belief
        if vetoed is not None:
            vetoed.status = BeliefStatus.VETOED
            vetoed.status_reason = reason or f"vetoed by {user}"
            vetoed.save(update_fields=["status", "status_reason"])
            # Older active beliefs for the slot must not step in silently: retire them too.
            Belief.objects.filter(
                Q(acquired_at__lt=vetoed.acquired_at)
                | Q(acquired_at=vetoed.acquired_at, pk__lt=vetoed.pk),
                principal_id=instance.principal_id,
                slot=prompt.slot,
                status=BeliefStatus.ACTIVE,
            ).update(status=BeliefStatus.SUPERSEDED, status_reason="an assumption was vetoed")
        prompt.state = PromptState.VETOED
        prompt.save()
        data["belief"] = vetoed.pk if vetoed is not None else None
        audit(
            "prompt.veto",
            actor=actor,
            instance=instance,
            prompt=prompt,
            subject=prompt.slot.key,
            data=data,
        )
        plan_locked(instance, actor)
    instance.refresh_from_db()
    return RespondResult(prompt, instance, replayed=False)


def prompt_payload(prompt: Prompt) -> dict[str, Any]:
    """The fresh form of a prompt, for a refused response to show."""
    return {
        "id": prompt.pk,
        "slot": prompt.slot.key,
        "route": prompt.route,
        "rule": prompt.rule,
        "version": prompt.version,
        "state": prompt.state,
        "blocking": prompt.blocking,
        "prefill": prompt.prefill,
        "world_diff": prompt.world_diff,
    }


def prompts_mark_shown(*, prompts: Iterable[Prompt], user: AbstractBaseUser) -> int:
    """Record when each prompt was first shown to its principal (dwell time starts there)."""
    ids = [p.pk for p in prompts if p.shown_at is None and p.state == PromptState.OPEN]
    if not ids:
        return 0
    now = timezone.now()
    count = Prompt.objects.filter(
        pk__in=ids, shown_at__isnull=True, instance__principal=user
    ).update(shown_at=now)
    for prompt in prompts:
        if prompt.pk in ids:
            prompt.shown_at = now
    return count
