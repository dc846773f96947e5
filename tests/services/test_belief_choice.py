"""The belief each slot binds is the same as the straightforward rule's, over random
histories: current first, else the newest carried from an earlier run of the same principal and
task class opened by a runtime whose values this run's runtime may carry (its own, or both in the
class's history pool: the owner and the runtimes it shares history with); vetoed and superseded
beliefs never chosen."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from beliefs.models import (
    Belief,
    BeliefStatus,
    Runtime,
    Slot,
    TaskClass,
    TaskClassShare,
    TaskInstance,
)
from beliefs.selectors.beliefs import choose_beliefs, choose_beliefs_for
from tests.examples import examples

pytestmark = pytest.mark.django_db

T0 = datetime(2025, 1, 1, tzinfo=datetime.now().astimezone().tzinfo)
RUNS = 4  # per principal and task class
SLOTS = 2  # of the class under test; the other class has one slot

# One belief: principal 0 or 1, task class 0 or 1, run, slot, status, and a coarse clock so
# that many beliefs share an acquired_at and the id must break the tie.
belief_spec = st.tuples(
    st.integers(0, 1),
    st.integers(0, 1),
    st.integers(1, RUNS),
    st.integers(0, SLOTS - 1),
    st.sampled_from([BeliefStatus.ACTIVE] * 3 + [BeliefStatus.VETOED, BeliefStatus.SUPERSEDED]),
    st.integers(0, 3),
)


def reference(
    instance: TaskInstance,
    slots: list[Slot],
    beliefs: list[Belief],
    runs: dict[Any, TaskInstance],
    pool: set[int],
) -> dict[int, tuple[int, bool]]:
    """Today's rule, read straight off the list of every belief. `pool`: the ids of the class's
    owner and of the runtimes it shares its history with."""

    def may_carry(earlier: TaskInstance) -> bool:
        if earlier.runtime_id == instance.runtime_id:  # None and None too: the same "runtime"
            return True
        return earlier.runtime_id in pool and instance.runtime_id in pool

    def newest(candidates: list[Belief]) -> Belief | None:
        return max(candidates, key=lambda b: (b.acquired_at, b.pk), default=None)

    chosen = {}
    for slot in slots:
        active = [b for b in beliefs if b.slot_id == slot.pk and b.status == BeliefStatus.ACTIVE]
        current = newest([b for b in active if b.instance_id == instance.pk])
        if current is not None:
            chosen[slot.pk] = (current.pk, False)
            continue
        carried = newest(
            [
                b
                for b in active
                if runs[b.instance_id].principal_id == instance.principal_id
                and runs[b.instance_id].task_class_id == instance.task_class_id
                and runs[b.instance_id].run_number < instance.run_number
                and may_carry(runs[b.instance_id])
            ]
        )
        if carried is not None:
            chosen[slot.pk] = (carried.pk, True)
    return chosen


def ids(chosen: dict[int, tuple[Belief, bool]]) -> dict[int, tuple[int, bool]]:
    return {slot: (belief.pk, carried) for slot, (belief, carried) in chosen.items()}


@pytest.mark.fuzz
@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    specs=st.lists(belief_spec, max_size=40),
    shuffle=st.randoms(use_true_random=False),
    # Each run's runtime: none, the owner, a runtime sharing history, or one not sharing it.
    run_runtimes=st.lists(st.sampled_from([None, 0, 1, 2]), min_size=16, max_size=16),
    owned=st.booleans(),
    shared_history=st.booleans(),
)
def test_the_chosen_belief_per_slot_is_todays_rule(
    alice: User,
    mallory: User,
    specs: list[tuple[Any, ...]],
    shuffle: Any,
    run_runtimes: list[int | None],
    owned: bool,
    shared_history: bool,
) -> None:
    with transaction.atomic():
        principals = [alice, mallory]
        runtimes = [Runtime.objects.create(name=f"r{i}") for i in range(3)]
        classes = [
            TaskClass.objects.create(
                key=f"c{i}", name=f"c{i}", owner=runtimes[0] if owned else None
            )
            for i in range(2)
        ]
        for c in classes:
            TaskClassShare.objects.create(task_class=c, runtime=runtimes[1], history=shared_history)
            TaskClassShare.objects.create(task_class=c, runtime=runtimes[2], history=False)
        pool = {runtimes[0].pk} if owned else set()
        if shared_history:
            pool.add(runtimes[1].pk)
        slots = [
            [Slot.objects.create(task_class=c, key=f"s{j}", label="s") for j in range(n)]
            for c, n in zip(classes, (SLOTS, 1), strict=True)
        ]
        keys = [(p, c, r) for p in range(2) for c in range(2) for r in range(1, RUNS + 1)]
        runs = {
            (p, c, r): TaskInstance.objects.create(
                task_class=classes[c],
                principal=principals[p],
                run_number=r,
                runtime=None if which is None else runtimes[which],
                action_slots=[s.key for s in slots[c]],
            )
            for (p, c, r), which in zip(keys, run_runtimes, strict=True)
        }
        rows = [
            Belief(
                instance=runs[(p, c, r)],
                runtime=runs[(p, c, r)].runtime,
                principal=principals[p],
                slot=slots[c][s % len(slots[c])],
                value=[p, c, r, s],
                source="tool",
                acquired_at=T0 + timedelta(seconds=clock),
                status=status,
            )
            for p, c, r, s, status, clock in specs
        ]
        shuffle.shuffle(rows)  # ids in an order unrelated to runs or clocks
        beliefs = Belief.objects.bulk_create(rows)
        by_pk = {i.pk: i for i in runs.values()}
        under_test = [i for (_, c, _), i in runs.items() if c == 0]

        for instance in under_test:
            expected = reference(instance, slots[0], beliefs, by_pk, pool)
            assert ids(choose_beliefs(instance, slots[0])) == expected, instance
        # Every open instance at once, as the impact preview reads them.
        together = choose_beliefs_for(under_test, slots[0])
        for instance in under_test:
            expected = reference(instance, slots[0], beliefs, by_pk, pool)
            assert ids(together[instance.pk]) == expected
        transaction.set_rollback(True)


def test_a_chosen_beliefs_instance_comes_without_its_large_columns(alice: User) -> None:
    task_class = TaskClass.objects.create(key="c", name="c")
    slot = Slot.objects.create(task_class=task_class, key="s", label="s")
    run1 = TaskInstance.objects.create(
        task_class=task_class, principal=alice, run_number=1, world={"s": {"big": "x" * 1000}}
    )
    run2 = TaskInstance.objects.create(
        task_class=task_class, principal=alice, run_number=2, action_slots=["s"]
    )
    Belief.objects.create(
        instance=run1, principal=alice, slot=slot, value=1, source="user", acquired_at=T0
    )
    ((belief, carried),) = choose_beliefs(run2, [slot]).values()
    assert carried and belief.instance.run_number == 1
    assert belief.instance.get_deferred_fields() >= {"world", "plan_items", "bindings"}
