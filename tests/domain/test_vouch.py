"""What a receipt vouches for, over every combination of a plan item's inputs (pure)."""

from __future__ import annotations

import itertools

from beliefs.domain.canonical import worlds_digest
from beliefs.domain.policy import RiskClass, Route, Rule
from beliefs.domain.vouch import (
    Via,
    bound_claims,
    bound_worlds,
    items_worlds_digest,
    via_of,
    vouched_by_runtime,
)

RISKS = [r for r in RiskClass if r is not RiskClass.UNCLASSIFIED]
WORLD = {"iban": "XX00ATTACKER", "valid_until": "2027-01-01"}


def _item(slot: str, route: Route, rule: Rule, risk: RiskClass, via: str | None, world=None):  # noqa: ANN001, ANN202
    belief = None if via is None else {"source": "user", "recorded_via": via, "world_ref": world}
    return {
        "slot": slot,
        "route": route,
        "rule": rule,
        "effective_risk": risk,
        "belief": belief,
        "value": None if belief is None else "v",
    }


def test_it_holds_s7_runtime_vouched_exactly_when_no_person_acted() -> None:
    for route, rule, risk, via in itertools.product(
        Route, Rule, RISKS, ("console", "runtime", None)
    ):
        item = _item("s", route, rule, risk, via)
        vouched = vouched_by_runtime([item])
        bound = route in (Route.SILENT, Route.SURFACED)
        want_via = (
            Via.POLICY
            if rule is Rule.COSMETIC
            else Via.CONSOLE
            if via == "console"
            else Via.RUNTIME
        )
        assert via_of(item) is want_via, (route, rule, risk, via)
        expected = bound and risk is RiskClass.IRREVERSIBLE and want_via is Via.RUNTIME
        assert vouched == (["s"] if expected else []), (route, rule, risk, via)
        claims = bound_claims([item])
        if bound:
            assert claims == {
                "s": {
                    "route": route.value,
                    "rule": rule.value,
                    "source": None if via is None else "user",
                    "via": want_via.value,
                }
            }
        else:
            assert claims == {}


def test_it_binds_the_world_of_every_bound_irreversible_slot_null_included() -> None:
    items = [
        _item(
            "iban", Route.SILENT, Rule.ANSWERED_THIS_RUN, RiskClass.IRREVERSIBLE, "runtime", WORLD
        ),
        _item("amount", Route.SILENT, Rule.ANSWERED_THIS_RUN, RiskClass.IRREVERSIBLE, "console"),
        _item("memo", Route.SURFACED, Rule.ASSUMPTION, RiskClass.REVERSIBLE, "runtime", WORLD),
    ]
    assert bound_worlds(items) == {"iban": WORLD, "amount": None}
    assert items_worlds_digest(items) == worlds_digest({"iban": WORLD, "amount": None})
    # Equal values, another world: another digest.
    moved = [
        dict(items[0], belief=dict(items[0]["belief"], world_ref={"iban": "XX01"})),
        *items[1:],
    ]
    assert items_worlds_digest(moved) != items_worlds_digest(items)
    assert [i["value"] for i in moved] == [i["value"] for i in items]
