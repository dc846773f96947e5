"""The world diff is shown, never decisive: planning routes a slot the same whether or not the
world changed since its belief was acquired, and shows exactly what changed."""

from __future__ import annotations

import itertools

import pytest
from django.contrib.auth.models import User

from beliefs import selectors
from beliefs.domain.policy import RiskClass, Source
from beliefs.selectors.beliefs import SlotState
from beliefs.services.audit import SYSTEM
from tests.builders import (
    open_instance,
    register,
)

WORLD_REF = {"account": "DE89 3704", "bank": {"bic": "COBADEFF"}}
WORLD_NOW_CHANGED = {"account": "DE02 1203", "bank": {"bic": "COBADEFF"}}
COMBINATIONS = list(itertools.product(RiskClass, Source, (False, True), (False, True)))


def _state(
    risk: RiskClass, source: Source, carried: bool, monotonic: bool, world: dict
) -> SlotState:
    key = (
        f"t.{risk.value}.{source.value}.{carried}.{monotonic}.{len(str(world))}.{world['account']}"
    )
    register(
        key,
        actor=SYSTEM,
        slots=[{"key": "s", "label": "S"}],
        risks={"s": risk.value},
        monotonic=("s",) if monotonic else (),
    )
    belief = {"slot": "s", "value": "v", "source": source.value, "turn": 1, "world_ref": WORLD_REF}
    if carried:
        open_instance(task_class_key=key, principal="alice", beliefs=[belief], actor=SYSTEM)
        instance = open_instance(
            task_class_key=key, principal="alice", world={"s": world}, actor=SYSTEM
        )
    else:
        instance = open_instance(
            task_class_key=key,
            principal="alice",
            world={"s": world},
            beliefs=[belief],
            actor=SYSTEM,
        )
    (state,) = selectors.slot_states(instance)
    assert state.carried == carried
    return state


@pytest.mark.parametrize(("risk", "source", "carried", "monotonic"), COMBINATIONS)
def test_it_routes_the_same_whether_or_not_the_world_changed(
    alice: User, risk: RiskClass, source: Source, carried: bool, monotonic: bool
) -> None:
    same = _state(risk, source, carried, monotonic, WORLD_REF)
    changed = _state(risk, source, carried, monotonic, WORLD_NOW_CHANGED)

    assert (same.routing.route, same.routing.rule) == (changed.routing.route, changed.routing.rule)
    assert {e["change"] for e in same.diff} == {"unchanged"}
    assert [e["key"] for e in changed.diff if e["change"] != "unchanged"] == ["account"]
