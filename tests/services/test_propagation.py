"""Effective risk as the classifier console computes it, in every propagation shape, and the
rule that decides which changes need a second classifier."""

from __future__ import annotations

import pytest

from beliefs import selectors
from beliefs.domain.classes import (
    Change,
    Classes,
    DecisionClass,
    SlotClass,
    approval_reason,
    tightens,
)
from beliefs.domain.policy import RiskClass as R
from beliefs.models import Slot
from beliefs.selectors.classification import classes_of
from tests.builders import contract, many_slots, shop

IRR = R.IRREVERSIBLE


def classes(slots: dict[str, R], decisions: dict[str, tuple[R, set[str]]], mono=()) -> Classes:  # noqa: ANN001
    return Classes(
        slots=tuple(SlotClass(k, r, k in mono) for k, r in slots.items()),
        decisions=tuple(DecisionClass(k, r, frozenset(s)) for k, (r, s) in decisions.items()),
    )


def effective(c: Classes, key: str) -> tuple[R, str]:
    eff = c.effective()[key]
    return eff.risk, eff.reason


# --- propagation --------------------------------------------------------------------------


def test_it_takes_the_highest_of_two_decisions_a_slot_feeds() -> None:
    c = classes(
        {"entity_id": R.POLICY},
        {"sign": (R.REVERSIBLE, {"entity_id"}), "register": (IRR, {"entity_id"})},
    )
    assert effective(c, "entity_id") == (IRR, "inherited from decision register (irreversible)")


def test_it_keeps_a_slot_irreversible_while_either_of_its_two_decisions_is() -> None:
    c = classes(
        {"entity_id": R.POLICY},
        {"sign": (IRR, {"entity_id"}), "register": (IRR, {"entity_id"})},
    )
    assert effective(c, "entity_id") == (IRR, "inherited from decision sign (irreversible)")
    one_lowered = c.apply(Change("decision", "sign", "risk_class", R.REVERSIBLE))
    assert effective(one_lowered, "entity_id") == (
        IRR,
        "inherited from decision register (irreversible)",
    )
    both_lowered = one_lowered.apply(Change("decision", "register", "risk_class", R.REVERSIBLE))
    assert effective(both_lowered, "entity_id") == (R.POLICY, "own classification")


def test_it_keeps_a_slots_own_higher_class_when_its_decision_is_downgraded() -> None:
    c = classes({"amount": IRR}, {"send": (IRR, {"amount"})})
    lowered = c.apply(Change("decision", "send", "risk_class", R.COSMETIC))
    assert effective(lowered, "amount") == (IRR, "own classification")
    c = classes({"memo": R.POLICY}, {"send": (R.POLICY, {"memo"})})
    lowered = c.apply(Change("decision", "send", "risk_class", R.COSMETIC))
    assert effective(lowered, "memo") == (R.POLICY, "own classification")


def test_it_treats_an_unclassified_decision_as_irreversible() -> None:
    c = classes({"memo": R.COSMETIC}, {"send": (R.UNCLASSIFIED, {"memo"})})
    assert effective(c, "memo") == (
        IRR,
        "inherited from decision send (unclassified: treated as irreversible)",
    )
    classified = c.apply(Change("decision", "send", "risk_class", R.REVERSIBLE))
    assert effective(classified, "memo") == (
        R.REVERSIBLE,
        "inherited from decision send (reversible)",
    )


def test_it_treats_an_unclassified_slot_and_a_monotonic_one_as_irreversible() -> None:
    c = classes({"address": R.UNCLASSIFIED, "scope": R.COSMETIC}, {}, mono=("scope",))
    assert effective(c, "address") == (IRR, "unclassified: treated as irreversible")
    assert effective(c, "scope") == (IRR, "monotonic scope")


def test_it_changes_nothing_of_slots_a_decision_does_not_take() -> None:
    c = classes({"a": R.COSMETIC, "b": R.COSMETIC}, {"d": (R.COSMETIC, {"a"})})
    linked = c.apply(Change("decision", "d", "slots", frozenset({"b"})))
    assert effective(linked, "a") == (R.COSMETIC, "own classification")
    raised = linked.apply(Change("decision", "d", "risk_class", IRR))
    assert effective(raised, "b") == (IRR, "inherited from decision d (irreversible)")
    assert effective(raised, "a") == (R.COSMETIC, "own classification")


@pytest.mark.django_db
def test_it_agrees_with_the_effective_risk_the_api_shows() -> None:
    for task_class in (shop(), contract(), many_slots(12)):
        computed = classes_of(task_class).effective()
        for slot in Slot.objects.filter(task_class=task_class).prefetch_related("decisions"):
            assert computed[slot.key] == selectors.slot_effective_risk(slot)


# --- which changes need a second classifier -----------------------------------------------


def needs(c: Classes, change: Change) -> bool:
    return approval_reason(c, change) is not None


def test_it_lets_a_raise_take_effect_at_once() -> None:
    c = classes({"a": R.REVERSIBLE}, {"d": (R.POLICY, {"a"})})
    assert not needs(c, Change("slot", "a", "risk_class", IRR))
    assert not needs(c, Change("decision", "d", "risk_class", IRR))
    assert not needs(c, Change("slot", "a", "monotonic", True))


def test_it_lets_an_unclassified_slot_be_classified_irreversible_at_once() -> None:
    c = classes({"address": R.UNCLASSIFIED}, {})
    assert not needs(c, Change("slot", "address", "risk_class", IRR))


@pytest.mark.parametrize("lower", [R.COSMETIC, R.REVERSIBLE, R.POLICY])
@pytest.mark.parametrize("start", [R.UNCLASSIFIED, IRR])
def test_it_holds_every_lowering_of_an_own_class_out_of_irreversible(start: R, lower: R) -> None:
    # Even where a decision keeps the slot irreversible: the own class is a claim of its own.
    c = classes({"a": start, "b": R.COSMETIC}, {"d": (start, {"b"}), "e": (IRR, {"a"})})
    assert approval_reason(c, Change("slot", "a", "risk_class", lower)) == (
        f"it lowers slot a from {start.value} to {lower.value}"
    )
    assert approval_reason(c, Change("decision", "d", "risk_class", lower)) == (
        f"it lowers decision d from {start.value} to {lower.value}"
    )


def test_it_lets_a_lowering_below_irreversible_take_effect_at_once() -> None:
    c = classes({"a": R.POLICY}, {"d": (R.POLICY, {"a"})})
    assert not needs(c, Change("slot", "a", "risk_class", R.COSMETIC))
    assert not needs(c, Change("decision", "d", "risk_class", R.REVERSIBLE))


def test_it_holds_clearing_monotonic() -> None:
    c = classes({"scope": IRR}, {}, mono=("scope",))
    assert approval_reason(c, Change("slot", "scope", "monotonic", False)) == (
        "it clears monotonic on scope"
    )


def test_it_holds_an_unlink_that_drops_a_slot_out_of_irreversible() -> None:
    c = classes({"a": R.POLICY, "b": R.POLICY}, {"d": (IRR, {"a", "b"})})
    assert approval_reason(c, Change("decision", "d", "slots", frozenset({"b"}))) == (
        "it lowers the effective risk of a out of irreversible"
    )


def test_it_lets_an_unlink_through_where_the_slot_stays_irreversible() -> None:
    own = classes({"a": IRR}, {"d": (IRR, {"a"})})
    assert not needs(own, Change("decision", "d", "slots", frozenset()))
    other = classes({"a": R.POLICY}, {"d": (IRR, {"a"}), "e": (IRR, {"a"})})
    assert not needs(other, Change("decision", "d", "slots", frozenset()))


def test_it_knows_which_changes_tighten_routing() -> None:
    c = classes({"a": R.REVERSIBLE, "b": IRR}, {"d": (R.POLICY, {"a"})})
    assert tightens(c, c.apply(Change("slot", "a", "risk_class", R.POLICY))) is False  # equal
    assert tightens(c, c.apply(Change("decision", "d", "risk_class", IRR))) is True
    assert tightens(c, c.apply(Change("decision", "d", "slots", frozenset({"a", "b"})))) is False
    # Already irreversible, yet monotonic routes R3 (ASK, no pre-fill): that is tighter.
    assert tightens(c, c.apply(Change("slot", "b", "monotonic", True))) is True
    assert tightens(c, c.apply(Change("slot", "a", "risk_class", R.COSMETIC))) is False
