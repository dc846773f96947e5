"""Effective risk and routing, over every combination of their inputs."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from beliefs.domain.policy import (
    BeliefFacts,
    RiskClass,
    Route,
    Routing,
    Rule,
    Source,
    effective_risk,
    risk_level,
    route,
    routing_matrix,
)

REPO = Path(__file__).resolve().parents[2]

# --- the whole input space ----------------------------------------------------------------

DECISION_SHAPES: list[tuple[tuple[str, RiskClass], ...]] = [
    (),
    *(((f"decide_{risk.value}", risk),) for risk in RiskClass),
    *(
        (("first", a), ("second", b))
        for a, b in itertools.permutations(RiskClass, 2)  # two decisions of mixed classes
    ),
]
SOURCES: list[Source | None] = [*Source, None]  # None: no belief at all
WORLDS = ("absent", "same", "changed")
WORLD_REF = {"account": "DE89 3704", "bank": {"bic": "COBADEFF"}}
WORLD_NOW_CHANGED = {"account": "DE02 1203", "bank": {"bic": "COBADEFF"}}


@dataclass(frozen=True)
class Case:
    own: RiskClass
    decisions: tuple[tuple[str, RiskClass], ...]
    monotonic: bool
    source: Source | None
    carried: bool
    world: str

    @property
    def facts(self) -> BeliefFacts | None:
        if self.source is None:
            return None
        return BeliefFacts(
            source=self.source, carried=self.carried, has_world_ref=self.world != "absent"
        )

    @property
    def current_user(self) -> bool:
        return self.source is Source.USER and not self.carried


def _world_now(world: str) -> dict | None:
    return {"absent": None, "same": WORLD_REF, "changed": WORLD_NOW_CHANGED}[world]


ALL_CASES = [
    Case(*combo)
    for combo in itertools.product(
        RiskClass, DECISION_SHAPES, (False, True), SOURCES, (False, True), WORLDS
    )
]


def _routed(case: Case) -> tuple[RiskClass, Routing]:
    eff = effective_risk(case.own, case.decisions, monotonic=case.monotonic)
    return eff.risk, route(eff.risk, monotonic=case.monotonic, belief=case.facts)


def _violations(check) -> list[str]:  # noqa: ANN001 - a test helper
    failures = []
    for case in ALL_CASES:
        risk, routing = _routed(case)
        message = check(case, risk, routing)
        if message:
            failures.append(f"{message}: {case} -> {risk.value} {routing}")
    return failures


def test_it_enumerates_the_whole_input_space() -> None:
    # 5 own classes x 26 decision shapes x 2 monotonic x 5 sources x 2 scopes x 3 worlds.
    assert len(ALL_CASES) == 5 * 26 * 2 * 5 * 2 * 3


def test_it_never_yields_unclassified_as_an_effective_risk() -> None:
    for case in ALL_CASES:
        eff = effective_risk(case.own, case.decisions, monotonic=case.monotonic)
        assert eff.risk is not RiskClass.UNCLASSIFIED, case
        assert eff.reason, case


def test_it_holds_s1_carried_irreversible_is_never_silent_or_surfaced() -> None:
    def check(case: Case, risk: RiskClass, routing: Routing) -> str | None:
        if (
            case.source is not None
            and case.carried
            and risk is RiskClass.IRREVERSIBLE
            and routing.route not in (Route.CONFIRM, Route.ASK)
        ):
            return "S1"
        return None

    assert _violations(check) == []


def test_it_holds_s2_irreversible_from_a_non_user_source_is_confirmed_or_asked() -> None:
    def check(case: Case, risk: RiskClass, routing: Routing) -> str | None:
        if (
            case.source in (Source.TOOL, Source.INFERENCE, Source.DEFAULT)
            and risk is RiskClass.IRREVERSIBLE
            and routing.route not in (Route.CONFIRM, Route.ASK)
        ):
            return "S2"
        return None

    assert _violations(check) == []


def test_it_holds_s3_monotonic_is_asked_without_prefill_unless_answered_now() -> None:
    def check(case: Case, risk: RiskClass, routing: Routing) -> str | None:
        if (
            case.monotonic
            and not case.current_user
            and (routing.route is not Route.ASK or routing.prefilled)
        ):
            return "S3"
        return None

    assert _violations(check) == []


def test_it_holds_s4_silent_only_for_cosmetic_or_a_current_user_answer() -> None:
    def check(case: Case, risk: RiskClass, routing: Routing) -> str | None:
        if routing.route is Route.SILENT and not (
            risk is RiskClass.COSMETIC or (case.source is not None and case.current_user)
        ):
            return "S4"
        return None

    assert _violations(check) == []


# The table's own words: R4 and R6 show a pre-filled form; R0, R3, R5 a blank one; R1, R2 bind
# silently; R7 lists an assumption. Checked against the rule each case actually took.
PREFILLED_RULES = {Rule.IRREVERSIBLE_NOT_FROM_USER, Rule.CARRIED_ANCHORED}
BLOCKING_RULES = {
    Rule.NO_BELIEF,
    Rule.MONOTONIC_TYPED_AFRESH,
    Rule.IRREVERSIBLE_NOT_FROM_USER,
    Rule.CARRIED_UNANCHORED,
    Rule.CARRIED_ANCHORED,
}


def test_it_prefills_and_blocks_exactly_where_the_rule_table_says() -> None:
    seen_rules = set()
    for case in ALL_CASES:
        _, routing = _routed(case)
        seen_rules.add(routing.rule)
        assert routing.prefilled == (routing.rule in PREFILLED_RULES), case
        assert routing.blocking == (routing.rule in BLOCKING_RULES), case
    assert seen_rules == set(Rule)


def test_it_treats_an_unclassified_risk_given_to_route_as_irreversible() -> None:
    facts = BeliefFacts(source=Source.TOOL, carried=True, has_world_ref=False)
    unclassified = route(RiskClass.UNCLASSIFIED, monotonic=False, belief=facts)
    irreversible = route(RiskClass.IRREVERSIBLE, monotonic=False, belief=facts)
    assert unclassified == irreversible
    assert unclassified.route is Route.ASK


def test_it_lists_every_reachable_cell_in_the_routing_matrix() -> None:
    cells = routing_matrix()
    # 4 risks x 17 belief shapes (no belief + 4 sources x 2 scopes x 2 world refs) + monotonic
    # rows only for irreversible.
    assert len(cells) == 4 * 17 + 17
    for cell in cells:
        facts = (
            None
            if cell.source is None
            else BeliefFacts(cell.source, carried=cell.carried, has_world_ref=cell.has_world_ref)
        )
        assert cell.routing == route(cell.risk, monotonic=cell.monotonic, belief=facts)
    assert {cell.routing.rule for cell in cells} == set(Rule)


# --- one test per rule ---------------------------------------------------------------------


def _facts(source: Source, *, carried: bool, world_ref: bool = False) -> BeliefFacts:
    return BeliefFacts(source=source, carried=carried, has_world_ref=world_ref)


def test_it_routes_R0_no_belief_to_a_blank_ask() -> None:
    for risk in RiskClass:
        routing = route(risk, monotonic=False, belief=None)
        assert (routing.route, routing.rule) == (Route.ASK, Rule.NO_BELIEF)
        assert not routing.prefilled
    assert route(RiskClass.COSMETIC, monotonic=False, belief=None).rule is Rule.NO_BELIEF


def test_it_routes_R1_cosmetic_silently_even_when_carried_from_a_tool() -> None:
    routing = route(
        RiskClass.COSMETIC,
        monotonic=False,
        belief=_facts(Source.TOOL, carried=True, world_ref=False),
    )
    assert (routing.route, routing.rule) == (Route.SILENT, Rule.COSMETIC)


def test_it_routes_R2_a_current_user_answer_silently_even_when_irreversible() -> None:
    routing = route(
        RiskClass.IRREVERSIBLE, monotonic=True, belief=_facts(Source.USER, carried=False)
    )
    assert (routing.route, routing.rule) == (Route.SILENT, Rule.ANSWERED_THIS_RUN)


def test_it_routes_R3_monotonic_irreversible_to_ask_before_anything_else() -> None:
    for source, carried, world_ref in itertools.product(
        (Source.TOOL, Source.INFERENCE, Source.DEFAULT), (False, True), (False, True)
    ):
        routing = route(
            RiskClass.IRREVERSIBLE,
            monotonic=True,
            belief=_facts(source, carried=carried, world_ref=world_ref),
        )
        assert (routing.route, routing.rule) == (Route.ASK, Rule.MONOTONIC_TYPED_AFRESH)
    carried_user = route(
        RiskClass.IRREVERSIBLE,
        monotonic=True,
        belief=_facts(Source.USER, carried=True, world_ref=True),
    )
    assert (carried_user.route, carried_user.rule) == (Route.ASK, Rule.MONOTONIC_TYPED_AFRESH)
    assert not carried_user.prefilled


def test_it_routes_R4_current_irreversible_from_a_tool_to_confirm() -> None:
    for source in (Source.TOOL, Source.INFERENCE, Source.DEFAULT):
        facts = _facts(source, carried=False)
        routing = route(RiskClass.IRREVERSIBLE, monotonic=False, belief=facts)
        assert (routing.route, routing.rule) == (Route.CONFIRM, Rule.IRREVERSIBLE_NOT_FROM_USER)
        assert source.value in routing.reason


def test_it_routes_R5_carried_irreversible_without_world_ref_to_ask() -> None:
    routing = route(
        RiskClass.IRREVERSIBLE,
        monotonic=False,
        belief=_facts(Source.USER, carried=True, world_ref=False),
    )
    assert (routing.route, routing.rule) == (Route.ASK, Rule.CARRIED_UNANCHORED)
    assert not routing.prefilled


def test_it_routes_R6_carried_irreversible_with_world_ref_to_confirm() -> None:
    routing = route(
        RiskClass.IRREVERSIBLE,
        monotonic=False,
        belief=_facts(Source.USER, carried=True, world_ref=True),
    )
    assert (routing.route, routing.rule) == (Route.CONFIRM, Rule.CARRIED_ANCHORED)
    assert routing.prefilled


def test_it_routes_R7_reversible_and_policy_to_surfaced() -> None:
    for risk, source, carried in itertools.product(
        (RiskClass.REVERSIBLE, RiskClass.POLICY), Source, (False, True)
    ):
        if source is Source.USER and not carried:
            continue  # R2 comes first
        routing = route(risk, monotonic=False, belief=_facts(source, carried=carried))
        assert (routing.route, routing.rule) == (Route.SURFACED, Rule.ASSUMPTION)
        assert not routing.blocking


# --- effective risk and its reason ---------------------------------------------------------


def test_it_gives_own_classification_as_the_reason() -> None:
    eff = effective_risk(RiskClass.POLICY)
    assert (eff.risk, eff.reason) == (RiskClass.POLICY, "own classification")


def test_it_inherits_irreversible_from_a_decision() -> None:
    eff = effective_risk(RiskClass.REVERSIBLE, [("send_transfer", RiskClass.IRREVERSIBLE)])
    assert eff.risk is RiskClass.IRREVERSIBLE
    assert eff.reason == "inherited from decision send_transfer (irreversible)"


def test_it_treats_an_unclassified_slot_as_irreversible() -> None:
    eff = effective_risk(RiskClass.UNCLASSIFIED)
    assert (eff.risk, eff.reason) == (
        RiskClass.IRREVERSIBLE,
        "unclassified: treated as irreversible",
    )


def test_it_treats_an_unclassified_decision_as_irreversible() -> None:
    eff = effective_risk(RiskClass.COSMETIC, [("ship", RiskClass.UNCLASSIFIED)])
    assert eff.risk is RiskClass.IRREVERSIBLE
    assert eff.reason == "inherited from decision ship (unclassified: treated as irreversible)"


def test_it_gives_monotonic_scope_as_the_reason() -> None:
    eff = effective_risk(RiskClass.REVERSIBLE, monotonic=True)
    assert (eff.risk, eff.reason) == (RiskClass.IRREVERSIBLE, "monotonic scope")


def test_it_takes_the_highest_of_two_decisions_a_slot_feeds() -> None:
    decisions = [("update_profile", RiskClass.POLICY), ("sign_contract", RiskClass.IRREVERSIBLE)]
    eff = effective_risk(RiskClass.COSMETIC, decisions)
    assert eff.risk is RiskClass.IRREVERSIBLE
    assert eff.reason == "inherited from decision sign_contract (irreversible)"
    lower = effective_risk(RiskClass.COSMETIC, decisions[:1])
    assert lower.reason == "inherited from decision update_profile (policy)"


def test_it_keeps_the_own_class_when_a_decision_is_lower() -> None:
    eff = effective_risk(RiskClass.IRREVERSIBLE, [("preview", RiskClass.REVERSIBLE)])
    assert (eff.risk, eff.reason) == (RiskClass.IRREVERSIBLE, "own classification")


def test_it_never_lets_a_decision_lower_the_own_class() -> None:
    for own, dec in itertools.product(RiskClass, RiskClass):
        eff = effective_risk(own, [("d", dec)])
        assert risk_level(eff.risk) == max(risk_level(own), risk_level(dec)), (own, dec)


# --- purity --------------------------------------------------------------------------------


def test_it_imports_the_pure_modules_without_loading_django() -> None:
    package = REPO / "beliefs" / "domain"
    modules = sorted(
        f"beliefs.domain.{path.stem}" for path in package.glob("*.py") if path.stem != "__init__"
    )
    code = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps({'loaded': sorted(m for m in sys.modules if m.startswith('beliefs.')),"
        " 'framework': sorted(m for m in sys.modules"
        " if m.split('.')[0] in ('django', 'rest_framework'))}))\n"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert set(modules) <= set(report["loaded"])
    assert {"beliefs.domain.policy", "beliefs.domain.classes"} <= set(modules)
    assert report["framework"] == []
