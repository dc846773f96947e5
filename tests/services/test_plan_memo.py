"""A re-plan answered from the plan remembered for it (`plan_memo`) answers exactly what working
the plan out again would: after every kind of change to what planning reads, and as time
passes a world reference's `valid_until` or the day of a date that must lie ahead."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine

from beliefs.models import Belief, Decision, Runtime, Slot, TaskInstance
from beliefs.services import plan_memo, planning
from tests.support.api import API, Driver, by_slot

pytestmark = pytest.mark.django_db

# Ten seconds before midnight (UTC): the day changes within the memo's longest hold.
T0 = datetime(2026, 12, 6, 23, 59, 50, tzinfo=UTC)
CLASS = "memo.transfer"


@pytest.fixture
def clock() -> Iterator[Any]:
    with time_machine.travel(T0, tick=False) as traveller:
        yield traveller


@pytest.fixture
def run2(api: Driver, clock: Any) -> str:
    """Run 2 of a transfer, planned: the recipient carried into a CONFIRM with a world diff,
    the reference into a CONFIRM (its meaning valid for 20 s more), the date into a CONFIRM
    (today: still allowed), the note an assumption."""
    keys = ["recipient", "reference", "run_on", "note"]
    api.register(
        CLASS,
        slots=[
            {"key": "recipient", "label": "Recipient"},
            {"key": "reference"},
            {"key": "run_on", "value_type": "date", "future": True},
            {"key": "note"},
        ],
        decisions=[{"key": "pay", "slots": keys[:3]}, {"key": "log", "slots": ["note"]}],
        risks={"recipient": "irreversible", "reference": "irreversible", "note": "reversible"},
        decision_risks={"pay": "irreversible", "log": "reversible"},
    )
    until = (T0 + timedelta(seconds=20)).isoformat()
    first = [
        {"slot": "recipient", "value": "Ada", "source": "user", "world_ref": {"iban": 1}},
        {
            "slot": "reference",
            "value": "R-1",
            "source": "user",
            "world_ref": {"valid_until": until},
        },
        {"slot": "run_on", "value": T0.date().isoformat(), "source": "user", "world_ref": {"d": 1}},
        {"slot": "note", "value": "rent", "source": "user"},
    ]
    api.plan(api.open(CLASS, beliefs=first))
    instance_id = api.open(CLASS, world={"recipient": {"iban": 2}, "run_on": {"d": 1}})
    plan = api.plan(instance_id)
    assert plan["status"] == "awaiting_user"
    return instance_id


def _plan(api: Driver, instance_id: str) -> dict[str, Any]:
    response = api.runtime.post_json(f"{API}/instances/{instance_id}/plan/")
    assert response.status_code == 200, response.content
    return response.json()


def test_an_unchanged_re_plan_is_answered_from_the_memo(
    api: Driver, run2: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _plan(api, run2)  # found current: remembered
    monkeypatch.setattr(planning, "_reconcile", _refuse)
    assert _plan(api, run2) == first  # nothing routed again


def _refuse(*args: Any, **kwargs: Any) -> Any:  # noqa: ANN401
    raise AssertionError("routed again: the memo was not used")


def _new_note(api: Driver, run2: str, clock: Any) -> None:
    body = {"slot": "note", "value": "school", "source": "tool"}
    assert api.runtime.post_json(f"{API}/instances/{run2}/beliefs/", body).status_code == 201


def _slot_risk(api: Driver, run2: str, clock: Any) -> None:
    Slot.objects.filter(key="note", task_class__key=CLASS).update(risk_class="irreversible")


def _decision_risk(api: Driver, run2: str, clock: Any) -> None:
    Decision.objects.filter(key="log", task_class__key=CLASS).update(risk_class="irreversible")


def _world(api: Driver, run2: str, clock: Any) -> None:
    world = {"recipient": {"iban": 3}, "run_on": {"d": 1}}
    response = api.runtime.put_json(f"{API}/instances/{run2}/world/", {"world": world})
    assert response.status_code == 200, response.json()


def _retired(api: Driver, run2: str, clock: Any) -> None:
    Belief.objects.filter(slot__key="note").exclude(instance_id=run2).update(status="superseded")


def _runtime_renamed(api: Driver, run2: str, clock: Any) -> None:
    Runtime.objects.filter(instances__pk=run2).update(name="renamed")


def _label(api: Driver, run2: str, clock: Any) -> None:
    Slot.objects.filter(key="recipient", task_class__key=CLASS).update(label="Payee")


def _answered(api: Driver, run2: str, clock: Any) -> None:
    confirmed = api.respond(api.prompt(run2, "recipient"), "confirm", acknowledged=["iban"])
    assert confirmed.status_code == 200, confirmed.json()


def _meaning_expired(api: Driver, run2: str, clock: Any) -> None:
    clock.shift(timedelta(seconds=5))  # 15 s later: within the meaning's time
    assert by_slot(_plan(api, run2))["reference"]["route"] == "CONFIRM"
    clock.shift(timedelta(seconds=10))  # 25 s after T0: past `valid_until`


def _next_day(api: Driver, run2: str, clock: Any) -> None:
    clock.move_to(T0 + timedelta(seconds=12))  # 00:00:02 the next day: run_on is past


def _world_in_the_database(api: Driver, run2: str, clock: Any) -> None:
    """The instance's row alone changes (no service, so no re-plan under the lock)."""
    TaskInstance.objects.filter(pk=run2).update(
        world={"recipient": {"iban": 4}, "run_on": {"d": 1}}
    )


CHANGES: dict[str, Callable[[Driver, str, Any], None]] = {
    "a belief recorded": _new_note,
    "a slot classified": _slot_risk,
    "a decision classified": _decision_risk,
    "the world updated": _world,
    "the world changed in the database alone": _world_in_the_database,
    "the carried belief retired": _retired,
    "its run's runtime renamed": _runtime_renamed,
    "a slot relabelled": _label,
    "a prompt answered": _answered,
    "a world reference's meaning expired": _meaning_expired,
    "the day changed under a future date": _next_day,
}


@pytest.mark.parametrize("change", CHANGES, ids=list(CHANGES))
def test_a_re_plan_after_a_change_answers_as_planning_afresh(
    api: Driver, run2: str, clock: Any, change: str
) -> None:
    before = _plan(api, run2)
    assert _plan(api, run2) == before
    CHANGES[change](api, run2, clock)
    after = _plan(api, run2)
    plan_memo.forget()
    afresh = _plan(api, run2)
    assert after == afresh
    # Each change changes the plan: an answer from the memo of before would have failed.
    assert after != before, change


def test_a_ready_or_gated_plan_is_not_remembered(api: Driver, run2: str) -> None:
    plan_memo.forget()
    prompts = [api.prompt(run2, slot) for slot in ("recipient", "reference", "run_on")]
    for prompt in prompts:
        if prompt["route"] == "CONFIRM":
            changed = [entry["key"] for entry in prompt["world_diff"]]
            response = api.respond(prompt, "confirm", acknowledged=changed)
        else:
            value = prompt["context_value"]
            response = api.respond(prompt, "answer", value=value, value_confirmation=value)
        assert response.status_code == 200, response.json()
    instance = TaskInstance.objects.get(pk=run2)
    assert instance.status != "awaiting_user"
    _plan(api, run2)
    _plan(api, run2)
    assert run2 not in {str(key) for key in plan_memo._memos}


def test_the_memo_keeps_at_most_its_bounds(api: Driver, run2: str) -> None:
    _plan(api, run2)
    memo = plan_memo._memos[TaskInstance.objects.get(pk=run2).pk]
    plan_memo.forget()
    for n in range(plan_memo.KEPT + 5):
        plan_memo.remember(n, memo.inputs, [], T0, memo.items[:1], memo.text)
    assert len(plan_memo._memos) == plan_memo.KEPT  # by count: the first asked for went
    assert 0 not in plan_memo._memos and plan_memo.KEPT + 4 in plan_memo._memos
    plan_memo.forget()
    big = memo.items * (plan_memo.KEPT_SLOTS // len(memo.items) // 3 + 1)  # over a third
    for n in range(4):
        plan_memo.remember(n, memo.inputs, [], T0, big, memo.text)
    assert list(plan_memo._memos) == [2, 3]  # by slots: two fit
    assert plan_memo.kept_slots() == 2 * len(big) <= plan_memo.KEPT_SLOTS
    plan_memo.remember(3, memo.inputs, [], T0, memo.items, memo.text)  # again, smaller
    assert plan_memo.kept_slots() == len(big) + len(memo.items)


def test_the_memo_compares_every_column_the_unlocked_read_loads() -> None:
    from beliefs.selectors.instances import _UNLOCKED_COLUMNS

    # A column the read loads but the memo did not compare would go unseen when it changed.
    assert tuple(name for _, name in _UNLOCKED_COLUMNS) == plan_memo._INSTANCE_NAMES
