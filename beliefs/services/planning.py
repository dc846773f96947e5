"""Planning: route every slot, reconcile the prompts, settle the status and bindings."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import datetime
from typing import Any, cast

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from beliefs.domain import policy
from beliefs.domain.canonical import bindings_digest, canonical_json, json_digest, text_digest
from beliefs.domain.policy import RiskClass, Route
from beliefs.domain.vocabulary import AuditKind
from beliefs.domain.vouch import items_worlds_digest, vouched_by_runtime
from beliefs.models import (
    InstanceStatus,
    Prompt,
    PromptState,
    RecordedVia,
    RuntimeAPIKey,
    TaskClass,
    TaskInstance,
    any_overdue,
)
from beliefs.selectors.beliefs import (
    SlotState,
    belief_summary,
    open_prompts_of,
    slot_rows_raw,
    slot_states,
)
from beliefs.selectors.passkeys import action_decisions, decisions_fed
from beliefs.selectors.quorum import Requirement, requirements_of
from beliefs.selectors.shapes import PlanItemJSON, WorldDiffJSON
from beliefs.services import plan_memo
from beliefs.services.audit import Actor, audit
from beliefs.services.changes import instance_changed
from beliefs.services.expiry import expire_locked_if_due
from beliefs.services.lifecycle import locked_with_open_prompts, read_instance, require_open
from beliefs.services.notify import instance_status_changed
from beliefs.services.quorum import awaits_approval, quorum_gate
from beliefs.services.receipts import receipt_issue, receipt_revoke
from beliefs.services.retry import retry_on_race
from beliefs.services.signatures import (  # the passkey signature gate
    awaits_signature,
    signature_wait_begin,
    signatures_void,
)

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
        if routing.route in (Route.CONFIRM, Route.SURFACED, Route.SILENT):
            prefill = belief.value
        elif routing.route is Route.ASK:
            context_value = belief.value  # read-only context, never pre-filled
    # Route, rule and risk are str enums: each is its own value, as the JSON and the columns
    # take it (the `value` property costs more than the rest of a line here, per slot).
    return {
        "route": routing.route,
        "rule": routing.rule,
        "reason": routing.reason,
        "effective_risk": state.effective.risk,
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
REVISED_FIELDS = [*DESIRED_FIELDS, "content_digest", "version", "expires_at", "updated_at"]


def content_digest(desired: Mapping[str, Any]) -> str:
    """`Prompt.content_digest` of a prompt holding `desired`: the SHA-256 of the canonical JSON
    of its `DESIRED_FIELDS` values, in that order. Two prompts' contents have the same digest
    exactly when each field's canonical JSON is the same (a list's JSON text is read back
    unambiguously), so comparing digests is comparing the fields."""
    return json_digest([desired[field] for field in DESIRED_FIELDS])


def reported_for_person(state: SlotState) -> bool:
    """An irreversible value bound without asking on the runtime's report of the person's
    answer (R2 of a value the runtime recorded): the person is shown it afterwards, with a
    veto, through a prompt that does not block."""
    belief = state.belief
    return (
        state.routing.rule is policy.Rule.ANSWERED_THIS_RUN
        and state.effective.risk is RiskClass.IRREVERSIBLE
        and belief is not None
        and belief.recorded_via == RecordedVia.RUNTIME
    )


def _held(state: SlotState, prompt: Prompt) -> SlotState:
    """The slot state with the route and risk of the blocking prompt it already has."""
    return dataclasses.replace(
        state,
        effective=policy.EffectiveRisk(
            RiskClass(prompt.effective_risk), policy.RiskReason.from_text(prompt.risk_reason)
        ),
        routing=policy.Routing(Route(prompt.route), policy.Rule(prompt.rule), prompt.reason),
    )


@dataclasses.dataclass
class _Reconciled:
    """What planning would do, decided before anything is written."""

    # Each slot's state, the prompt it keeps and what changed ("", "created", "superseded",
    # "v<n>"): the writes are made in one statement per kind, whatever the number of slots.
    planned: list[tuple[SlotState, Prompt | None, str]]
    superseded: list[Prompt]
    created: list[Prompt]
    revised: list[Prompt]
    # How many more of the instance's prompts are blocking afterwards (`blocking_asked`).
    blocking_delta: int = 0

    @property
    def writes_prompts(self) -> bool:
        return bool(self.superseded or self.created or self.revised)


def _reconcile(
    instance: TaskInstance,
    open_prompts: Sequence[Prompt],
    now: datetime,
    raw: list[tuple[Any, ...]] | None = None,
) -> _Reconciled:
    """Route every slot and match the result against the open prompts, writing nothing.
    `raw`: the slots' query's rows, where the caller has read them (`slot_rows_raw`)."""
    open_by_slot = {p.slot_id: p for p in open_prompts}
    done = _Reconciled([], [], [], [])
    for state in slot_states(instance, now, raw):
        prompt = open_by_slot.get(state.slot.pk)
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
        reported = state.routing.route is Route.SILENT and reported_for_person(state)
        if reported and prompt is not None and prompt.route != Route.SILENT:
            # A question released by the runtime's report stays counted as asked: it is
            # superseded, and the value is listed for a veto by a prompt of its own.
            prompt.state = PromptState.SUPERSEDED
            done.superseded.append(prompt)
            prompt = None
        if state.routing.route is Route.SILENT and not reported:
            if prompt is not None:
                prompt.state = PromptState.SUPERSEDED
                done.superseded.append(prompt)
                done.planned.append((state, prompt, "superseded"))
                continue
        else:
            desired = _desired_prompt(state)
            digest = content_digest(desired)
            if prompt is None:
                prompt = Prompt(
                    instance=instance,
                    slot=state.slot,
                    expires_at=now + settings.CONSOLE_PROMPT_TTL if desired["blocking"] else None,
                    content_digest=digest,
                    **desired,
                )
                done.created.append(prompt)
                done.blocking_delta += desired["blocking"]
                change = "created"
            elif prompt.content_digest != digest:
                became_blocking = desired["blocking"] and not prompt.blocking
                done.blocking_delta += desired["blocking"] - prompt.blocking
                for field, value in desired.items():
                    setattr(prompt, field, value)
                prompt.content_digest = digest
                prompt.version += 1
                if became_blocking:
                    prompt.expires_at = now + settings.CONSOLE_PROMPT_TTL
                prompt.updated_at = now
                done.revised.append(prompt)
                change = f"v{prompt.version}"
        done.planned.append((state, prompt, change))
    return done


@dataclasses.dataclass(frozen=True)
class Settled:
    """What a plan's items settle into: the status, and once nothing blocks the bindings with
    their digest and the digest of the worlds the irreversible ones were bound with."""

    status: InstanceStatus
    bindings: dict[str, Any] | None = None
    digest: str = ""
    worlds: str = ""


def _settle(
    items: Sequence[PlanItemJSON],
    instance: TaskInstance,
    actor: Actor | None = None,
    requirements: Callable[[], tuple[Requirement, ...]] | None = None,
    decisions: Callable[[], dict[str, bool]] | None = None,
) -> Settled:
    """The status, bindings and bindings digest a plan's items give, through the ready gates
    in order: an open blocking prompt (awaiting_user); missing approvals for these exact
    bindings (awaiting_approval); the person's missing passkey signature (awaiting_signature);
    else ready. With `actor` (planning under the lock) the approval gate records what it
    settles (services/quorum.py); without, it only reads. `requirements`: the instance's
    approval requirements, and `decisions` its action's decisions (`action_decisions`), each
    read once for the whole plan (the receipt names them too)."""
    if any(item["prompt"] and item["prompt"]["blocking"] for item in items):
        return Settled(InstanceStatus.AWAITING_USER)
    bindings = {item["slot"]: item["value"] for item in items}
    digest = bindings_digest(bindings)
    worlds = items_worlds_digest(items)
    # The group's approvals of exactly these bindings, bound with these worlds.
    if actor is not None:
        read = requirements() if requirements is not None else None
        missing = quorum_gate(instance, digest, actor, timezone.now(), read, worlds)
    else:
        missing = awaits_approval(instance, digest, worlds)
    if missing:
        return Settled(InstanceStatus.AWAITING_APPROVAL, bindings, digest, worlds)
    # The bindings and their worlds wait for the person's passkey signature.
    if awaits_signature(instance, digest, _signed(decisions) if decisions else None, worlds):
        return Settled(InstanceStatus.AWAITING_SIGNATURE, bindings, digest, worlds)
    return Settled(InstanceStatus.READY, bindings, digest, worlds)


def _signed(decisions: Callable[[], dict[str, bool]]) -> Callable[[], list[str]]:
    """The keys of `decisions` that require a signature (`decisions_requiring_signature`)."""
    return lambda: [key for key, signed in decisions().items() if signed]


def _is_current(instance: TaskInstance, plan_digest: str, status: str) -> bool:
    """The instance already holds exactly the plan of this digest (and was planned before)."""
    return (
        instance.planned_at is not None
        and status == instance.status
        and plan_digest == instance.plan_digest
    )


def current_plan(
    instance: TaskInstance, open_prompts: Sequence[Prompt]
) -> tuple[list[PlanItemJSON], str] | None:
    """The plan the instance holds and its canonical JSON, when planning it now would write
    nothing: every open prompt stays as it is, no prompt is needed or released, and routing
    gives the stored plan (by its digest). None when planning would change anything. Reads
    only. A plan found current is remembered against what it was worked out from
    (`plan_memo`), and answered again while that is unchanged."""
    now = timezone.now()
    raw = slot_rows_raw(instance)
    seen = plan_memo.inputs(instance, open_prompts, raw)
    known = plan_memo.recall(instance.pk, seen, now)
    if known is not None:
        return known.items, known.text
    done = _reconcile(instance, open_prompts, now, raw)
    if done.writes_prompts:
        return None
    items = [plan_item(state, prompt) for state, prompt, _ in done.planned]
    text = canonical_json(items)
    status = _settle(items, instance).status
    if not _is_current(instance, text_digest(text), status):
        return None
    if status == InstanceStatus.AWAITING_USER:  # settled by a blocking prompt: nothing else read
        plan_memo.remember(instance.pk, seen, [s for s, _, _ in done.planned], now, items, text)
    return items, text


@dataclasses.dataclass(frozen=True)
class PlanResult:
    """What planning answers with: the instance as it now is, its plan's `items`, and their
    canonical JSON where planning has just encoded them (for their digest), so that the plan's
    answer writes that text instead of encoding the items again (None: not encoded here)."""

    instance: TaskInstance
    text: str | None = None

    @property
    def items(self) -> list[PlanItemJSON]:
        """The plan's items, one per slot: the instance's (read on first use where planning
        left the stored plan unread, as for a ready instance)."""
        items: list[PlanItemJSON] = self.instance.plan_items
        return items


def plan_locked(
    instance: TaskInstance,
    actor: Actor,
    open_prompts: Sequence[Prompt] | None = None,
    *,
    answered: Sequence[Prompt] | None = None,
) -> PlanResult:
    """Route every slot, reconcile prompts, settle the status. Caller holds the instance lock.

    Idempotent: a prompt whose content would not change keeps its version; a prompt whose
    belief, route or world diff changed gets version + 1, so a response to what the person saw
    before is refused as stale. `open_prompts` and `answered`, the instance's open and answered
    prompts (with their slots), when the caller has read them: else they are read here, the
    answered ones only for a receipt.
    """
    now = timezone.now()
    status_before = instance.status
    if open_prompts is None:
        open_prompts = open_prompts_of(instance)
    done = _reconcile(instance, open_prompts, now)
    if done.superseded:
        Prompt.objects.filter(pk__in=[p.pk for p in done.superseded]).update(
            state=PromptState.SUPERSEDED, updated_at=now
        )
    if done.created:
        Prompt.objects.bulk_create(done.created)  # sets each prompt's pk (RETURNING on both)
    if done.revised:
        Prompt.objects.bulk_update(done.revised, REVISED_FIELDS)
    items = []
    changes = []
    for state, prompt, change in done.planned:
        if change and prompt is not None:
            changes.append({"slot": state.slot.key, "prompt": prompt.pk, "change": change})
        items.append(plan_item(state, None if change == "superseded" else prompt))
    if changes and instance.signature_due_at is not None:
        # --- passkey signature gate: a change of what the person saw voids it
        # (only an instance that has waited for a signature can hold one) ---
        signatures_void(instance, "the action changed after it was signed", now)
    # Read at most once, and only once nothing blocks: by the approval gate, the signature
    # gate and the receipt a ready instance gets.
    fed = functools.cache(lambda: decisions_fed(instance))
    requirements = functools.cache(lambda: requirements_of(instance, fed()))
    decisions = functools.cache(lambda: action_decisions(instance, fed()))
    settled = _settle(items, instance, actor, requirements, decisions)
    status = settled.status
    blocking = sum(1 for item in items if item["prompt"] and item["prompt"]["blocking"])
    # A re-plan that changes nothing writes nothing: `planned_at` is when the plan was made or
    # last changed, and a runtime that plans again while it waits sees the same body (and
    # ETag) until something does change.
    text = canonical_json(items)
    plan_digest = text_digest(text)
    unchanged = not changes and _is_current(instance, plan_digest, status)
    instance.plan_items = items  # unchanged: the stored plan, as planning made it again
    receipt = None
    if not unchanged:
        instance.plan_digest = plan_digest
        instance.planned_at = now
        instance.status, instance.bindings = status, settled.bindings
        instance.bindings_digest, instance.worlds_digest = settled.digest, settled.worlds
        instance.blocking_asked += done.blocking_delta
        signature_wait_begin(instance, now)  # from the first wait, its deadline
        fields = [
            "signature_due_at",
            "plan_items",
            "plan_digest",
            "planned_at",
            "status",
            "bindings",
            "bindings_digest",
            "worlds_digest",
            "blocking_asked",
            "updated_at",
        ]
        if status == InstanceStatus.READY and status_before != InstanceStatus.READY:
            # (Becoming ready always changes the plan's status, so it is never `unchanged`.)
            # Its receipt is written first, and the instance names it in the same UPDATE.
            receipt = receipt_issue(
                instance,
                now,
                requirements(),
                decisions=list(decisions()),
                answered=answered,
                save=False,
            )
            fields.append("receipt")
        instance.save(update_fields=fields)
    if status_before == InstanceStatus.READY and instance.status != InstanceStatus.READY:
        # A veto after ready reopened it: what the receipt approved no longer stands.
        receipt_revoke(instance, "reopened by a veto after ready", now)
    if changes or instance.status == InstanceStatus.READY:
        audit(
            AuditKind.INSTANCE_PLANNED,
            actor=actor,
            instance=instance,
            data={
                "status": instance.status,
                "blocking": blocking,
                "changes": changes,
                "bindings_digest": instance.bindings_digest,
                "worlds_digest": instance.worlds_digest,
                **(
                    {"vouched_by_runtime": vouched_by_runtime(items)}
                    if instance.status == InstanceStatus.READY
                    else {}
                ),
                **({"receipt": str(receipt.jti)} if receipt is not None else {}),
            },
        )
    instance_status_changed(instance, status_before, _blocking_open(open_prompts, done))
    return PlanResult(instance, text)


def _blocking_open(open_prompts: Sequence[Prompt], done: _Reconciled) -> list[Prompt] | None:
    """The instance's open blocking prompts once `done` is written, with their slots, in the
    slots' order (as `notify` would read them): the open ones read before, as reconciling left
    them, and the new ones. None when an open prompt is for a slot planning did not route
    (one no longer in the action): then they are read."""
    slots = {state.slot.pk: state.slot for state, _, _ in done.planned}
    still_open = [p for p in (*open_prompts, *done.created) if p.state == PromptState.OPEN]
    if any(p.slot_id not in slots for p in still_open):
        return None
    blocking = [p for p in still_open if p.blocking]
    for prompt in blocking:
        prompt.slot = slots[prompt.slot_id]
    return sorted(blocking, key=lambda p: (p.slot.position, p.slot_id, p.pk))


def plan_item(state: SlotState, prompt: Prompt | None) -> PlanItemJSON:
    route = state.routing.route
    value = None
    if state.belief is not None and route is not Route.ASK:
        value = state.belief.value
    return {
        "slot": state.slot.key,
        "label": state.slot.label,
        "route": route,  # a str enum, as in `_desired_prompt`
        "rule": state.routing.rule,
        "reason": state.routing.reason,
        "effective_risk": state.effective.risk,
        "risk_reason": state.effective.reason,
        "value": value,
        "belief": belief_summary(state.belief, state.carried),
        # `DiffEntry.to_dict` writes each change's keys: the core does not know the shapes.
        "world_diff": cast(list[WorldDiffJSON], state.diff),
        "prompt": None
        if prompt is None
        else {
            "id": prompt.pk,
            "version": prompt.version,
            "state": prompt.state,
            "blocking": prompt.blocking,
        },
    }


def instance_plan(*, instance: TaskInstance, actor: Actor) -> TaskInstance:
    """Plan an instance (idempotent) and answer it as it now is. A ready instance keeps its
    final plan and bindings."""
    return _plan(actor, instance.pk).instance


def instance_plan_for_runtime(*, instance_id: Any, key: RuntimeAPIKey) -> PlanResult:
    """Plan the instance if the key's runtime opened it (404 otherwise, as any other read).

    The lookup is planning's own read of the instance: it is read once, not twice.
    """
    return _plan(Actor(key=key), instance_id, key.runtime_id)


def _plan(actor: Actor, pk: Any, runtime_id: int | None = None) -> PlanResult:
    # Planning again while nothing has changed, the commonest call (a runtime asking again
    # while it waits for a person), is answered from reads alone: no transaction, no lock, no
    # write. This path can only answer with the plan the instance already holds, never bind:
    # a first plan, any change, an expiry due and a closed instance all take the locked path.
    instance = read_instance(pk=pk, runtime_id=runtime_id)
    if instance.status == InstanceStatus.READY:
        return PlanResult(instance)
    if instance.is_open and instance.planned_at is not None:
        # Read only where they can answer: a ready, closed or never planned instance's would
        # be read again under the lock, or not at all.
        open_prompts = open_prompts_of(instance)
        due = any_overdue(open_prompts, timezone.now())
        current = None if due else current_plan(instance, open_prompts)
        if current is not None:
            # The stored plan, by its digest: not read.
            instance.plan_items, text = current
            return PlanResult(instance, text)
    return _plan_under_lock(actor, pk, runtime_id)


@retry_on_race
def _plan_under_lock(actor: Actor, pk: Any, runtime_id: int | None) -> PlanResult:
    with transaction.atomic():
        instance, open_prompts = locked_with_open_prompts(pk=pk, runtime_id=runtime_id)
        expire_locked_if_due(instance, timezone.now(), open_prompts)
        result = PlanResult(instance)
        if instance.is_open:
            result = plan_locked(instance, actor, open_prompts)
    # After the commit, so that an expiry found above is recorded even though planning is
    # refused: a ready instance answers with its final plan, a closed one with 409.
    if instance.status != InstanceStatus.READY:
        require_open(instance, "plan")
    return result


@transaction.atomic
def instances_replan_for_task_class(
    *,
    task_class: TaskClass,
    actor: Actor,
    statuses: Collection[InstanceStatus] | None = None,
) -> int:
    """Re-plan every planned, open instance of a task class (after a classification upgrade),
    or only those in `statuses` (those waiting for approvers, after fewer approvals are asked).

    Ready instances keep their final bindings: a classification never binds retroactively.
    """
    count = 0
    # Only the instances' own rows, in one order (by id), so two re-plans cannot deadlock.
    for instance in (
        TaskInstance.objects.select_for_update(of=("self",), no_key=True)
        .filter(task_class=task_class, status__in=statuses or InstanceStatus.planned_open())
        .select_related("task_class", "principal")
        .order_by("pk")
    ):
        instance_changed(instance.pk)  # locked here, not by `lock_instance`
        plan_locked(instance, actor)
        count += 1
    return count
