"""Which belief each slot of an instance binds, and how it routes: the reads planning,
the pages and the impact preview share."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from django.db.models import OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce

from beliefs.domain import policy
from beliefs.domain.policy import RiskClass, Source
from beliefs.domain.worlddiff import world_diff
from beliefs.models import (
    Belief,
    BeliefStatus,
    Decision,
    Slot,
    TaskInstance,
)


@dataclass(frozen=True)
class SlotState:
    """Everything routing and the pages need of one slot of one instance."""

    slot: Slot
    effective: policy.EffectiveRisk
    belief: Belief | None
    carried: bool
    routing: policy.Routing
    world_now: dict[str, Any] | None
    diff: list[dict[str, Any]]


# A belief's instance is loaded for its run number only: an earlier instance's world, plan and
# bindings are the largest columns in the database, and nothing that shows a belief reads them.
INSTANCE_HEAVY_FIELDS = ("world", "plan_items", "bindings")


def with_light_instance(queryset: QuerySet[Any], path: str = "instance") -> QuerySet[Any]:
    """`select_related(path)` without that instance's large JSON columns."""
    return queryset.select_related(path).defer(*(f"{path}__{f}" for f in INSTANCE_HEAVY_FIELDS))


def _newest(beliefs: QuerySet[Belief]) -> Subquery:
    return Subquery(beliefs.order_by("-acquired_at", "-id").values("pk")[:1])


def choose_beliefs_for(
    instances: Sequence[TaskInstance], slots: Iterable[Slot]
) -> dict[UUID, dict[int, tuple[Belief, bool]]]:
    """instance id -> slot id -> (belief, carried), for instances of the slots' task class.

    The rule: the newest active belief of the instance for the slot (current); else the newest
    active belief of the same principal for the slot from an earlier run (carried); newest is
    (acquired_at, id) descending. The instances need only pk, principal_id and run_number.

    One query, whose cost follows instances x slots and not the principal's history: for each
    (instance, slot) the database picks one belief id with at most two `LIMIT 1` probes of the
    index (principal, slot, status, acquired_at, id), and only the picked beliefs are loaded.
    A window function would rank, so read, every earlier belief; a stored pointer to the newest
    belief would have to be kept right by every write that changes a belief's status.
    """
    slot_ids = [s.pk for s in slots]
    chosen: dict[UUID, dict[int, tuple[Belief, bool]]] = {i.pk: {} for i in instances}
    if not slot_ids or not chosen:
        return chosen
    # One row per (slot, instance): the slots joined to these instances of their task class.
    run = "task_class__instances"
    active = Belief.objects.filter(slot_id=OuterRef("pk"), status=BeliefStatus.ACTIVE)
    current = active.filter(instance_id=OuterRef(f"{run}__id"))
    carried = active.filter(
        principal_id=OuterRef(f"{run}__principal_id"),
        instance__run_number__lt=OuterRef(f"{run}__run_number"),
    )
    picks = (
        Slot.objects.filter(pk__in=slot_ids, **{f"{run}__in": list(chosen)})
        .annotate(pick=Coalesce(_newest(current), _newest(carried)))
        .values("pick")
    )
    rows = with_light_instance(Belief.objects.filter(pk__in=picks)).order_by("-acquired_at", "-id")
    runs_of: dict[int, list[TaskInstance]] = defaultdict(list)
    for instance in instances:
        runs_of[instance.principal_id].append(instance)
    # Each pair's pick is among the rows, and any other row that fits a pair is another
    # candidate of the same rule, so older: newest first, the first fit is the pair's pick.
    for belief in rows:
        mine = chosen.get(belief.instance_id)
        if mine is not None and (belief.slot_id not in mine or mine[belief.slot_id][1]):
            mine[belief.slot_id] = (belief, False)
        for later in runs_of[belief.principal_id]:
            if belief.instance.run_number < later.run_number:
                chosen[later.pk].setdefault(belief.slot_id, (belief, True))
    return chosen


def choose_beliefs(instance: TaskInstance, slots: Iterable[Slot]) -> dict[int, tuple[Belief, bool]]:
    """slot id -> (belief, carried) for one instance: see `choose_beliefs_for`."""
    return choose_beliefs_for([instance], slots)[instance.pk]


def slot_effective_risk(slot: Slot) -> policy.EffectiveRisk:
    """Needs slot.decisions prefetched to stay at a constant number of queries."""
    return policy.effective_risk(
        RiskClass(slot.risk_class),
        [(d.key, RiskClass(d.risk_class)) for d in slot.decisions.all()],
        monotonic=slot.monotonic,
    )


def belief_facts(belief: Belief | None, carried: bool) -> policy.BeliefFacts | None:
    """What routing reads of the chosen belief (None: no belief was chosen)."""
    if belief is None:
        return None
    return policy.BeliefFacts(
        source=Source(belief.source),
        carried=carried,
        # An empty reference anchors nothing (R5), however it got stored.
        has_world_ref=bool(belief.world_ref),
    )


def slot_states(instance: TaskInstance) -> list[SlotState]:
    slots = list(instance.task_class.slots.order_by("position", "id"))
    # The decisions each slot feeds, as (key, class) pairs in the order a prefetch of
    # `slot.decisions` gives them (their default ordering): the first of equal levels names the
    # reason. Read as plain values: a model instance per link cost more than routing the slot.
    fed: dict[int, list[tuple[str, RiskClass]]] = defaultdict(list)
    links = (
        Decision.slots.through.objects.filter(slot_id__in=[s.pk for s in slots])
        .order_by("decision__task_class_id", "decision_id")
        .values_list("slot_id", "decision__key", "decision__risk_class")
    )
    for slot_id, key, risk in links:
        fed[slot_id].append((key, RiskClass(risk)))
    chosen = choose_beliefs(instance, slots)
    states = []
    for slot in slots:
        effective = policy.effective_risk(
            RiskClass(slot.risk_class), fed[slot.pk], monotonic=slot.monotonic
        )
        belief, carried = chosen.get(slot.pk, (None, False))
        facts = belief_facts(belief, carried)
        routing = policy.route(effective.risk, monotonic=slot.monotonic, belief=facts)
        world_now = instance.world.get(slot.key) if isinstance(instance.world, dict) else None
        diff = [
            e.to_dict()
            for e in world_diff(belief.world_ref if belief is not None else None, world_now)
        ]
        states.append(SlotState(slot, effective, belief, carried, routing, world_now, diff))
    return states


def belief_summary(belief: Belief | None, carried: bool) -> dict[str, Any] | None:
    if belief is None:
        return None
    return {
        "id": belief.pk,
        "source": belief.source,
        "instance": str(belief.instance_id),
        "run_number": belief.instance.run_number,
        "turn": belief.turn,
        "acquired_at": belief.acquired_at.isoformat(),
        "carried": carried,
        "world_ref": belief.world_ref,
    }
