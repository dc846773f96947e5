"""The impact preview: open instances re-routed in memory with hypothetical classes."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from beliefs.domain.classes import (
    Change,
    Classes,
    DecisionClass,
    SlotClass,
    SlotRun,
    Snapshot,
    impact_of,
)
from beliefs.domain.policy import BeliefFacts, Source, route
from beliefs.domain.policy import RiskClass as R
from beliefs.models import AuditEvent, Prompt, Slot, TaskInstance
from beliefs.selectors.classification import impact_snapshot
from beliefs.services.classification import classification_impact
from tests.builders import answered_run, open_prompt_or_none, run, shop

ANSWERS_WITH_WRAP = {
    "item_sku": "A",
    "shipping_address": "x",
    "delivery_speed": "std",
    "gift_wrap": True,
}
CARRIED_NO_REF = BeliefFacts(source=Source.USER, carried=True, has_world_ref=False)
CURRENT_TOOL = BeliefFacts(source=Source.TOOL, carried=False, has_world_ref=False)
CURRENT_USER = BeliefFacts(source=Source.USER, carried=False, has_world_ref=False)


def snapshot(runs: list[tuple[str, str, BeliefFacts | None]]) -> Snapshot:
    classes = Classes(
        slots=(
            SlotClass("a", R.REVERSIBLE, False),
            SlotClass("b", R.POLICY, False),
            SlotClass("c", R.COSMETIC, False),
        ),
        decisions=(DecisionClass("d", R.POLICY, frozenset({"a", "b"})),),
    )
    return Snapshot(
        classes=classes,
        open_instances=len({i for i, _, _ in runs}),
        planned_instances=0,
        runs=tuple(SlotRun(i, k, f) for i, k, f in runs),
    )


def test_it_counts_prompts_that_become_blocking_and_how() -> None:
    snap = snapshot(
        [
            ("i1", "a", CARRIED_NO_REF),  # SURFACED -> ASK (R5)
            ("i1", "b", CURRENT_TOOL),  # SURFACED -> CONFIRM (R4)
            ("i2", "a", CURRENT_TOOL),  # SURFACED -> CONFIRM
            ("i2", "b", CURRENT_USER),  # SILENT either way (R2)
            ("i3", "c", CARRIED_NO_REF),  # not fed by d: SILENT either way
        ]
    )
    impact = impact_of(snap, [Change("decision", "d", "risk_class", R.IRREVERSIBLE)])
    assert (impact.open_instances, impact.instances_altered, impact.prompts_altered) == (3, 2, 3)
    assert (impact.become_blocking, impact.stop_blocking) == (3, 0)
    assert impact.transitions == (("SURFACED", "CONFIRM", 2), ("SURFACED", "ASK", 1))
    assert [(c.slot, c.before, c.after) for c in impact.effective] == [
        ("a", "policy", "irreversible"),
        ("b", "policy", "irreversible"),
    ]
    assert impact.needs_approval == () and impact.replans is True
    assert "3 prompts become blocking" in impact.lines
    assert "2 SURFACED become CONFIRM" in impact.lines
    assert impact.when == "Takes effect at once: open instances are re-planned now."


def test_it_says_a_held_downgrade_binds_nothing_retroactively() -> None:
    snap = snapshot([("i1", "a", CARRIED_NO_REF)])
    raised = Snapshot(
        classes=snap.classes.apply(Change("slot", "a", "risk_class", R.IRREVERSIBLE)),
        open_instances=1,
        planned_instances=1,
        runs=snap.runs,
    )
    impact = impact_of(raised, [Change("slot", "a", "risk_class", R.COSMETIC)])
    assert impact.needs_approval == ("it lowers slot a from irreversible to cosmetic",)
    # The open instance's ASK is held: it stays blocking, nothing is released.
    assert (impact.stop_blocking, impact.transitions, impact.prompts_altered) == (1, (), 0)
    assert "1 blocking prompt stays blocking" in " ".join(impact.lines)
    assert impact.replans is False
    assert "binds nothing retroactively" in impact.when


def test_it_reports_no_change_where_routing_stays() -> None:
    snap = snapshot([("i1", "c", CARRIED_NO_REF)])
    impact = impact_of(snap, [Change("slot", "a", "risk_class", R.POLICY)])
    assert impact.prompts_altered == 0
    assert impact.lines == ["No prompt of the 1 open instance would change."]
    assert impact.when == "Takes effect at once."


def test_it_takes_several_changes_in_order() -> None:
    # Raising a to irreversible, then marking it monotonic: both take effect at once.
    snap = snapshot([("i1", "a", CURRENT_TOOL)])
    impact = impact_of(
        snap,
        [
            Change("slot", "a", "risk_class", R.IRREVERSIBLE),
            Change("slot", "a", "monotonic", True),
        ],
    )
    assert impact.transitions == (("SURFACED", "ASK", 1),)  # R3: monotonic asks afresh
    assert impact.needs_approval == ()


@pytest.mark.django_db
def test_it_reads_open_instances_as_planning_would_and_writes_nothing(
    alice: User, mallory: User
) -> None:
    task_class = shop()
    answered_run(
        task_class,
        alice,
        {"item_sku": "A", "shipping_address": "x", "delivery_speed": "std", "gift_wrap": False},
    )
    run(task_class, alice)  # run 2, alice: everything carried
    run(task_class, mallory, beliefs=[{"slot": "delivery_speed", "value": "x", "source": "tool"}])
    prompts = list(Prompt.objects.values_list("pk", "route", "version", "blocking"))
    events = AuditEvent.objects.count()

    snap = impact_snapshot(task_class)
    assert (snap.open_instances, snap.planned_instances) == (2, 2)
    impact = classification_impact(
        task_class=task_class,
        changes=[Change("slot", "delivery_speed", "risk_class", R.IRREVERSIBLE)],
    )
    # alice's carried speed (no world_ref) becomes ASK; mallory's tool-sourced one CONFIRM.
    assert impact.transitions == (("SURFACED", "CONFIRM", 1), ("SURFACED", "ASK", 1))
    assert impact.become_blocking == 2
    assert list(Prompt.objects.values_list("pk", "route", "version", "blocking")) == prompts
    assert AuditEvent.objects.count() == events
    assert Slot.objects.get(key="delivery_speed").risk_class == "reversible"
    assert open_prompt_or_none(run(task_class, alice), "delivery_speed").route == "SURFACED"


@pytest.mark.django_db
def test_it_routes_open_instances_exactly_as_their_plans_did(alice: User, mallory: User) -> None:
    """The preview's starting point is what planning decided, belief for belief: current and
    carried, every source, with a world reference, without one, and with an empty one."""
    task_class = shop()
    Slot.objects.filter(key="gift_wrap").update(risk_class="irreversible")
    refs = {"item_sku": None, "shipping_address": {}, "delivery_speed": {"depot": "A"}}
    for principal in (alice, mallory):
        answered_run(task_class, principal, ANSWERS_WITH_WRAP)
        run(
            task_class,
            principal,
            beliefs=[
                {"slot": key, "value": "v", "source": source, "world_ref": ref}
                for (key, ref), source in zip(
                    refs.items(), ("tool", "inference", "default"), strict=True
                )
            ],
        )
    # run 3 for alice: carried from run 2 (tool/inference/default), the wrap answered now (R2)
    run(task_class, alice, beliefs=[{"slot": "gift_wrap", "value": False, "source": "user"}])

    snap = impact_snapshot(task_class)
    effective = snap.classes.effective()
    monotonic = {s.key: s.monotonic for s in snap.classes.slots}
    predicted = {
        (str(r.instance_id), r.slot_key): route(
            effective[r.slot_key].risk, monotonic=monotonic[r.slot_key], belief=r.facts
        ).route.value
        for r in snap.runs
    }
    planned = {
        (str(instance_id), item["slot"]): item["route"]
        for instance_id, items in TaskInstance.objects.filter(
            status__in=("open", "awaiting_user")
        ).values_list("pk", "plan_items")
        for item in items
    }
    assert len(planned) == 3 * 4
    assert predicted == planned
    assert {"ASK", "CONFIRM", "SURFACED", "SILENT"} <= set(planned.values())


# --- a lowered guard that does not move: say so, and why ------------------------------------

TRANSFER = Classes(
    slots=(
        SlotClass("amount", R.IRREVERSIBLE, False),
        SlotClass("note", R.REVERSIBLE, False),
        SlotClass("scope", R.POLICY, True),
    ),
    decisions=(DecisionClass("send_transfer", R.IRREVERSIBLE, frozenset({"amount", "note"})),),
)


@pytest.mark.parametrize(
    ("change", "held"),
    [
        # The slot's own class falls; the decision it feeds keeps it irreversible.
        (
            Change("slot", "amount", "risk_class", R.REVERSIBLE),
            [
                "The effective risk of amount stays irreversible: inherited from decision "
                "send_transfer (irreversible)"
            ],
        ),
        # Cleared monotonic: the scope falls to its own class (a change, not a hold).
        (Change("slot", "scope", "monotonic", False), []),
        # A lowered policy slot stays monotonic.
        (
            Change("slot", "scope", "risk_class", R.COSMETIC),
            ["The effective risk of scope stays irreversible: monotonic scope"],
        ),
        # The decision falls; amount keeps its own class (own: nothing to explain), note falls.
        (Change("decision", "send_transfer", "risk_class", R.POLICY), []),
        # Unlinking amount from the decision: its own class holds it (own).
        (Change("decision", "send_transfer", "slots", frozenset({"note"})), []),
        # Raising never "stays".
        (Change("slot", "note", "risk_class", R.POLICY), []),
    ],
)
def test_a_lowered_guard_that_holds_says_why(change: Change, held: list[str]) -> None:
    from beliefs.domain.classes import held_risks

    assert held_risks(TRANSFER, TRANSFER.apply(change), [change]) == held
    impact = impact_of(Snapshot(TRANSFER, 0, 0, ()), [change])
    for line in held:
        assert line in impact.lines
