"""Which belief each slot of an instance binds, and how it routes: the reads planning,
the pages and the impact preview share."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from beliefs.domain import policy
from beliefs.domain.policy import RiskClass, Source
from beliefs.domain.worlddiff import world_diff
from beliefs.models import (
    Belief,
    BeliefStatus,
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


def choose_beliefs(instance: TaskInstance, slots: Iterable[Slot]) -> dict[int, tuple[Belief, bool]]:
    """slot id -> (belief, carried): current first, else the newest carried.

    One query: the principal's active beliefs for this class up to this run, newest first.
    """
    slot_ids = [s.pk for s in slots]
    rows = (
        Belief.objects.filter(
            principal_id=instance.principal_id,
            slot_id__in=slot_ids,
            status=BeliefStatus.ACTIVE,
            instance__run_number__lte=instance.run_number,
        )
        .select_related("instance")
        .order_by("-acquired_at", "-id")
    )
    current: dict[int, Belief] = {}
    carried: dict[int, Belief] = {}
    for belief in rows:
        bucket = carried if belief.carried_into(instance.pk) else current
        bucket.setdefault(belief.slot_id, belief)
    chosen: dict[int, tuple[Belief, bool]] = {sid: (b, True) for sid, b in carried.items()}
    chosen.update({sid: (b, False) for sid, b in current.items()})
    return chosen


def slot_effective_risk(slot: Slot) -> policy.EffectiveRisk:
    """Needs slot.decisions prefetched to stay at a constant number of queries."""
    return policy.effective_risk(
        RiskClass(slot.risk_class),
        [(d.key, RiskClass(d.risk_class)) for d in slot.decisions.all()],
        monotonic=slot.monotonic,
    )


def slot_states(instance: TaskInstance) -> list[SlotState]:
    slots = list(instance.task_class.slots.prefetch_related("decisions").order_by("position", "id"))
    chosen = choose_beliefs(instance, slots)
    states = []
    for slot in slots:
        effective = slot_effective_risk(slot)
        belief, carried = chosen.get(slot.pk, (None, False))
        facts = (
            None
            if belief is None
            else policy.BeliefFacts(
                source=Source(belief.source),
                carried=carried,
                # An empty reference anchors nothing (R5), however it got stored.
                has_world_ref=bool(belief.world_ref),
            )
        )
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
