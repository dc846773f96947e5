"""The straightforward ORM version of every read that the read layer writes as fixed SQL.

Each function here has the name and signature of a read that the read layer answers with
hand-written SQL (for its speed: see `beliefs/selectors/__init__.py`), and answers the same
through querysets, in as many queries as that takes. Nothing in the application calls these:
they say what the fast reads mean, and `tests/services/test_read_parity.py` holds each fast read
equal to its version here over generated data. A fast read that changes changes here too, or
that test fails.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, Unpack
from uuid import UUID

from django.contrib.auth.models import User
from django.db.models import Max, OuterRef, Q, Subquery
from django.utils import timezone

from beliefs.domain.attention import Sample
from beliefs.domain.policy import RiskClass, Route
from beliefs.domain.vocabulary import FRICTION_KINDS, INSIGHTS_RUNS_SHOWN, AuditKind
from beliefs.models import (
    AuditEvent,
    Belief,
    BeliefStatus,
    Decision,
    InstanceStatus,
    Prompt,
    PromptState,
    Runtime,
    RuntimeAPIKey,
    Slot,
    TaskInstance,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookEvent,
    any_overdue,
)
from beliefs.selectors.access import Owner, owned_instance
from beliefs.selectors.answering import LOOKED_AT, AnswerRead
from beliefs.selectors.beliefs import HistoryPool, SlotRow, history_pool, with_light_instance
from beliefs.selectors.insights import (
    WINDOW,
    Convergence,
    Fatigue,
    convergence_of,
    fatigue_of,
)
from beliefs.selectors.instances import InstanceRead, instance_payload, instance_prompts
from beliefs.selectors.outbox import Claimable
from beliefs.selectors.pages import DecisionView, PageRead
from beliefs.selectors.passkeys import FedDecision
from beliefs.selectors.quorum import approval_due


def usable_runtime_key(prefix: str) -> RuntimeAPIKey | None:
    """The unrevoked key with this prefix, with its runtime."""
    return RuntimeAPIKey.objects.get_usable_keys().filter(prefix=prefix).first()


def instance_to_plan(pk: Any, *, runtime_id: int | None, lock: bool) -> TaskInstance | None:
    """Locked with its task class and principal, or unlocked without its stored plan."""
    found = TaskInstance.objects.filter(pk=pk)
    if runtime_id is not None:
        found = found.filter(Owner.of(runtime_id=runtime_id).q())
    if lock:
        found = found.select_for_update(of=("self",), no_key=True).select_related(
            "task_class", "principal"
        )
    else:
        found = found.defer("plan_items")
    return next(iter(found), None)


def instance_read(
    instance_id: UUID, *, runtime_id: int | None = None, principal_id: int | None = None
) -> InstanceRead | None:
    """`instance_payload` of the owner's instance, and whether it is due to expire."""
    instance = owned_instance(
        instance_id, Owner.of(runtime_id=runtime_id, principal_id=principal_id)
    )
    if instance is None:
        return None
    payload = instance_payload(instance)
    now = timezone.now()
    due = instance.status == InstanceStatus.AWAITING_USER and any_overdue(
        instance.prompts.all(), now
    )
    if instance.status == InstanceStatus.AWAITING_SIGNATURE and instance.signature_due_at:
        due = instance.signature_due_at <= now
    if instance.status == InstanceStatus.AWAITING_APPROVAL:
        due = approval_due(instance.pk, now)
    return InstanceRead(payload=payload, expiry_due=due)


def _choice(instance: TaskInstance, slot_id: int, pool: HistoryPool) -> tuple[Belief, bool] | None:
    """The belief the slot binds for the instance, and whether it is carried: the newest active
    belief of the instance, else the newest active one of its principal from an earlier run
    whose runtime the instance's runtime carries from (newest: acquired_at, then id)."""
    active = (
        Belief.objects.filter(slot_id=slot_id, status=BeliefStatus.ACTIVE)
        .select_related("instance__runtime")
        .order_by("-acquired_at", "-id")
    )
    current = active.filter(instance_id=instance.pk).first()
    if current is not None:
        return current, False
    earlier = active.filter(
        principal_id=instance.principal_id, instance__run_number__lt=instance.run_number
    )
    for belief in earlier:
        if pool.carries(belief.instance.runtime_id, instance.runtime_id):
            return belief, True
    return None


def choose_beliefs_for(
    instances: Sequence[TaskInstance], slots: Iterable[Slot]
) -> dict[UUID, dict[int, tuple[Belief, bool]]]:
    """instance id -> slot id -> (belief, carried), for instances of the slots' task class."""
    slots = list(slots)
    chosen: dict[UUID, dict[int, tuple[Belief, bool]]] = {i.pk: {} for i in instances}
    if not slots:
        return chosen
    pool = history_pool(slots[0].task_class_id)
    for instance in instances:
        for slot in slots:
            choice = _choice(instance, slot.pk, pool)
            if choice is not None:
                chosen[instance.pk][slot.pk] = choice
    return chosen


def slot_rows(instance: TaskInstance) -> list[SlotRow]:
    """Every unretired slot of the instance's action in the class's order, with the decisions
    it feeds (in their default order) and the belief it binds."""
    slots = (
        Slot.objects.filter(
            task_class_id=instance.task_class_id,
            retired_at__isnull=True,
            key__in=list(instance.action_slots),
        )
        .prefetch_related("decisions")
        .order_by("position", "id")
    )
    pool = history_pool(instance.task_class_id)
    out = []
    for slot in slots:
        choice = _choice(instance, slot.pk, pool)
        belief, carried = choice if choice is not None else (None, False)
        fed = [(d.key, RiskClass(d.risk_class)) for d in slot.decisions.all()]
        person = any(d.person_confirms for d in slot.decisions.all())
        out.append(SlotRow(slot, fed, belief, carried, person))
    return out


def open_prompts_of(instance: TaskInstance) -> list[Prompt]:
    """The instance's open prompts, by id."""
    return list(
        Prompt.objects.filter(instance_id=instance.pk, state=PromptState.OPEN).order_by("id")
    )


def convergence() -> list[Convergence]:
    """Instances and their blocking prompts per (task class, run) over the latest WINDOW
    planned instances of the first runs."""
    window = (
        TaskInstance.objects.filter(planned_at__isnull=False, run_number__lte=INSIGHTS_RUNS_SHOWN)
        .order_by("-planned_at")
        .values_list("task_class_id", "run_number", "blocking_asked")[:WINDOW]
    )
    totals: dict[tuple[int, int], tuple[int, int]] = {}
    for task_class_id, run_number, asked in window:
        instances, prompts = totals.get((task_class_id, run_number), (0, 0))
        totals[(task_class_id, run_number)] = (instances + 1, prompts + asked)
    return convergence_of(totals)


def _world_changed(diff: Any) -> bool:
    """An entry of the diff is anything but unchanged (one without "change" counts)."""
    return any(not isinstance(e, dict) or e.get("change") != "unchanged" for e in diff or [])


def fatigue() -> Fatigue:
    """Over the latest WINDOW answered blocking prompts."""
    latest = Prompt.objects.filter(
        blocking=True, state=PromptState.ANSWERED, responded_at__isnull=False
    ).order_by("-responded_at")[:WINDOW]
    return fatigue_of(
        (p.dwell_seconds, p.route, p.action, _world_changed(p.world_diff)) for p in latest
    )


def claimable_deliveries(**ask: Unpack[Claimable]) -> list[WebhookDelivery]:
    """The deliveries `ask` names, oldest first, with their event and endpoint, locked
    (skipping those locked elsewhere)."""
    found = (
        WebhookDelivery.objects.filter(
            state=WebhookDelivery.State.PENDING, next_attempt_at__lte=ask["due_at"]
        )
        .select_related("event", "endpoint")
        .order_by("next_attempt_at", "id")
        .select_for_update(skip_locked=True, of=("self",))
    )
    if (only := ask.get("only")) is not None:
        found = found.filter(pk=only)
    if (endpoint_id := ask.get("endpoint_id")) is not None:
        found = found.filter(endpoint_id=endpoint_id)
    endpoints, runtimes = ask.get("left_out_endpoints", ()), ask.get("left_out_runtimes", ())
    if endpoints or runtimes:
        found = found.exclude(Q(endpoint_id__in=endpoints) | Q(endpoint__runtime_id__in=runtimes))
    return list(found[: ask["limit"]])


def prompt_to_answer(instance_id: Any, prompt_id: int, *, principal_id: int) -> Prompt | None:
    """The principal's prompt of that instance, with its slot and its instance's status."""
    owner = Owner.of(principal_id=principal_id)
    found = Prompt.objects.filter(owner.q("instance__"), pk=prompt_id, instance_id=instance_id)
    return found.select_related("slot", "instance").first()


def answer_under_lock(prompt_id: int, *, principal_id: int) -> AnswerRead | None:
    """The prompt's instance locked, with task class, principal and runtime, if it is this
    principal's; its open and answered prompts and this one, by id, with slot and belief."""
    owner = Owner.of(principal_id=principal_id)
    instance_id = (
        Prompt.objects.filter(owner.q("instance__"), pk=prompt_id)
        .values_list("instance_id", flat=True)
        .first()
    )
    if instance_id is None:
        return None
    instance = (
        TaskInstance.objects.select_for_update(of=("self",), no_key=True)
        .select_related("task_class", "principal", "runtime")
        .get(pk=instance_id)
    )
    prompts = list(
        with_light_instance(
            Prompt.objects.filter(Q(state__in=LOOKED_AT) | Q(pk=prompt_id), instance=instance)
            .select_related("slot", "belief", "belief__instance__runtime")
            .order_by("id"),
            "belief__instance",
        )
    )
    (prompt,) = [p for p in prompts if p.pk == prompt_id]
    last_turn = instance.beliefs.aggregate(m=Max("turn"))["m"] or 0
    return AnswerRead(instance, prompt, prompts, last_turn)


def instance_page(instance_id: Any, *, principal_id: int) -> PageRead | None:
    """The principal's instance with task class, principal and receipt, its prompts in the
    page's order, and when its latest belief was recorded."""
    latest = Subquery(
        Belief.objects.filter(instance=OuterRef("pk"))
        .order_by()
        .values("instance")
        .annotate(at=Max("created_at"))
        .values("at")
    )
    instance = (
        TaskInstance.objects.select_related("task_class", "principal", "receipt")
        .annotate(beliefs_at=latest)
        .filter(Owner.of(principal_id=principal_id).q(), pk=instance_id)
        .first()
    )
    if instance is None:
        return None
    return PageRead(instance, instance_prompts(instance), instance.beliefs_at)


def instance_decisions(instance: TaskInstance) -> list[DecisionView]:
    """The decisions of the instance's class, by id, each with its slots' keys."""
    decisions = Decision.objects.filter(task_class_id=instance.task_class_id).order_by("id")
    return [
        DecisionView(d.key, d.label, frozenset(s.key for s in d.slots.all()))
        for d in decisions.prefetch_related("slots")
    ]


def next_waiting(user: User, now: datetime, after: TaskInstance) -> TaskInstance | None:
    """The person's newest other instance still waiting for them at `now`, with its class."""
    mine = TaskInstance.objects.select_related("task_class").filter(principal=user)
    return mine.waiting(now).exclude(pk=after.pk).order_by("-created_at").first()


def _confirmations(principal_id: int) -> Any:
    return Prompt.objects.filter(
        instance__principal_id=principal_id,
        route=Route.CONFIRM,
        effective_risk=RiskClass.IRREVERSIBLE,
        state=PromptState.ANSWERED,
        responded_at__isnull=False,
    ).order_by("-responded_at", "-id")


def recent_confirmations(principal_id: int, limit: int) -> list[Sample]:
    """The principal's latest answered irreversible confirmations, newest first."""
    found = _confirmations(principal_id).values_list("action", "shown_at", "responded_at")
    return [
        Sample(
            kept=action == "confirm",
            dwell_s=(responded - shown).total_seconds() if shown and responded else None,
        )
        for action, shown, responded in found[: max(limit, 0)]
    ]


def friction_raised(principal_id: int) -> bool:
    """Whether the person's latest change of friction raised it."""
    latest = (
        AuditEvent.objects.filter(actor_user_id=principal_id, kind__in=list(FRICTION_KINDS))
        .order_by("-created_at", "-id")
        .values_list("kind", flat=True)
        .first()
    )
    return latest == AuditKind.ATTENTION_FRICTION_RAISED


def confirmations_and_friction(principal_id: int, limit: int) -> tuple[list[Sample], bool]:
    return recent_confirmations(principal_id, limit), friction_raised(principal_id)


def next_event_sequence(instance_id: Any) -> int:
    """The number of the instance's next webhook event."""
    last = WebhookEvent.objects.filter(instance_id=instance_id).aggregate(m=Max("sequence"))["m"]
    return (last or 0) + 1


def receiving_endpoints(runtime_id: int) -> list[WebhookEndpoint]:
    """The runtime's active endpoints, not deleted, by id."""
    return list(
        WebhookEndpoint.objects.filter(
            runtime_id=runtime_id, deleted_at__isnull=True, active=True
        ).order_by("id")
    )


def decisions_fed(instance: TaskInstance) -> list[FedDecision]:
    """The decisions of the instance's class that a slot of its action feeds, by id."""
    found = (
        Decision.objects.filter(
            task_class_id=instance.task_class_id, slots__key__in=list(instance.action_slots)
        )
        .distinct()
        .order_by("id")
        .values_list(
            "key",
            "label",
            "requires_signature",
            "approvals_required",
            "approvers_id",
            "approvers__name",
        )
    )
    return [FedDecision(*row) for row in found]


def declared_slots(task_class_id: int) -> dict[str, Slot]:
    """The class's declared slots not retired, by position then id, by key."""
    found = Slot.objects.filter(task_class_id=task_class_id, declared=True, retired_at=None)
    return {slot.key: slot for slot in found.order_by("position", "id")}


def opening_counts(
    principal_id: int, runtime_id: int | None, task_class_id: int
) -> tuple[int, int]:
    """The person's open instances from the runtime, and their last run number of the class."""
    mine = TaskInstance.objects.filter(principal_id=principal_id)
    open_count = mine.filter(runtime_id=runtime_id, status__in=InstanceStatus.open()).count()
    last = mine.filter(task_class_id=task_class_id).aggregate(m=Max("run_number"))["m"]
    return open_count, last or 0


def lanes_in_flight(
    now: datetime, runtime_ids: Sequence[int] | None = None
) -> list[tuple[int, int, str]]:
    """The lanes being sent (their lease still running at `now`): (runtime, endpoint,
    claimed_by), each once."""
    found = WebhookDelivery.objects.filter(
        state=WebhookDelivery.State.SENDING, lease_until__gte=now
    )
    if runtime_ids is not None:
        found = found.filter(endpoint__runtime_id__in=runtime_ids)
    return list(
        found.order_by().values_list("endpoint__runtime_id", "endpoint_id", "claimed_by").distinct()
    )


def lock_runtimes(runtime_ids: Sequence[int]) -> list[int]:
    """Lock the runtimes' rows in id order (no key update); the ids of those that exist."""
    return list(
        Runtime.objects.select_for_update(no_key=True)
        .filter(pk__in=sorted(runtime_ids))
        .order_by("pk")
        .values_list("pk", flat=True)
    )
