"""Effective risk and routing, over every combination of their inputs."""

from __future__ import annotations

import functools
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
    # A decision the slot feeds wants the person's own act in the console; the value was
    # given in the console; its meaning expired; a date before today in a future-only slot.
    person_required: bool = False
    in_console: bool = False
    expired: bool = False
    past_date: bool = False

    @property
    def facts(self) -> BeliefFacts | None:
        if self.source is None:
            return None
        return BeliefFacts(
            source=self.source,
            carried=self.carried,
            has_world_ref=self.world != "absent",
            in_console=self.in_console,
            expired=self.expired,
            past_date=self.past_date,
        )

    @property
    def current_user(self) -> bool:
        return self.source is Source.USER and not self.carried


def _world_now(world: str) -> dict | None:
    return {"absent": None, "same": WORLD_REF, "changed": WORLD_NOW_CHANGED}[world]


FLAGS = (False, True)
ALL_CASES = [
    Case(*combo)
    for combo in itertools.product(
        RiskClass,
        DECISION_SHAPES,
        FLAGS,
        SOURCES,
        FLAGS,
        WORLDS,
        FLAGS,  # person_required
        FLAGS,  # in_console
        FLAGS,  # expired
        FLAGS,  # past_date
    )
    # Without a belief there is nothing to have been given anywhere, or to expire.
    if combo[3] is not None or not any(combo[6:])
]


def _route_case(case: Case) -> tuple[RiskClass, Routing]:
    eff = effective_risk(case.own, case.decisions, monotonic=case.monotonic)
    return eff.risk, route(
        eff.risk,
        monotonic=case.monotonic,
        belief=case.facts,
        person_required=case.person_required,
    )


@functools.cache
def _every_route() -> dict[Case, tuple[RiskClass, Routing]]:
    """Every case routed once, on first use: the invariants each read all of them."""
    return {case: _route_case(case) for case in ALL_CASES}


def _routed(case: Case) -> tuple[RiskClass, Routing]:
    return _every_route()[case]


def _violations(check) -> list[str]:  # noqa: ANN001 - a test helper
    failures = []
    for case in ALL_CASES:
        risk, routing = _routed(case)
        message = check(case, risk, routing)
        if message:
            failures.append(f"{message}: {case} -> {risk.value} {routing}")
    return failures


def test_it_enumerates_the_whole_input_space() -> None:
    # 5 own classes x 26 decision shapes x 2 monotonic x (4 sources x 2 scopes x 3 worlds x
    # 2 person required x 2 in console x 2 expired x 2 past date, + no belief x 2 x 3 once).
    assert len(ALL_CASES) == 5 * 26 * 2 * (4 * 2 * 3 * 16 + 2 * 3)


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


def test_it_holds_s8_an_expired_meaning_or_past_date_is_asked_whatever_else_holds() -> None:
    def check(case: Case, risk: RiskClass, routing: Routing) -> str | None:
        if case.source is not None and (case.expired or case.past_date):
            want = Rule.MEANING_EXPIRED if case.expired else Rule.DATE_IN_PAST
            if (routing.route, routing.rule, routing.prefilled) != (Route.ASK, want, False):
                return "S8"
        return None

    assert _violations(check) == []


def test_it_holds_s9_a_runtimes_report_never_binds_where_the_person_must_confirm() -> None:
    """Where a decision wants the person's own act, a `user` value the runtime recorded is
    confirmed (or asked, for a monotonic scope) unless the person gave it in the console; a
    cosmetic value stays silent, as it binds by policy."""

    def check(case: Case, risk: RiskClass, routing: Routing) -> str | None:
        if (
            case.person_required
            and case.current_user
            and not case.in_console
            and not (case.expired or case.past_date)
            and risk is not RiskClass.COSMETIC
        ):
            want = Rule.MONOTONIC_TYPED_AFRESH if case.monotonic else Rule.PERSON_MUST_CONFIRM
            if routing.rule is not want or not routing.blocking:
                return "S9"
        return None

    assert _violations(check) == []


def test_it_keeps_the_seeds_rule_where_the_person_need_not_confirm() -> None:
    """Off, or given in the console: a current answer of the user's binds silently (R2)."""

    def check(case: Case, risk: RiskClass, routing: Routing) -> str | None:
        if (
            case.current_user
            and (case.in_console or not case.person_required)
            and not (case.expired or case.past_date)
            and risk is not RiskClass.COSMETIC
            and routing.rule is not Rule.ANSWERED_THIS_RUN
        ):
            return "R2"
        return None

    assert _violations(check) == []


# The table's own words: R4 and R6 show a pre-filled form; R0, R3, R5 a blank one; R1, R2 bind
# silently; R7 lists an assumption. Checked against the rule each case actually took.
PREFILLED_RULES = {
    Rule.IRREVERSIBLE_NOT_FROM_USER,
    Rule.CARRIED_ANCHORED,
    Rule.PERSON_MUST_CONFIRM,
}
BLOCKING_RULES = {
    Rule.NO_BELIEF,
    Rule.MONOTONIC_TYPED_AFRESH,
    Rule.IRREVERSIBLE_NOT_FROM_USER,
    Rule.CARRIED_UNANCHORED,
    Rule.CARRIED_ANCHORED,
    Rule.MEANING_EXPIRED,
    Rule.DATE_IN_PAST,
    Rule.PERSON_MUST_CONFIRM,
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
    # 4 risks x 17 belief shapes (no belief + 4 sources x 2 scopes x 2 world refs), each
    # current user shape twice more (the person must confirm: reported, or given in the
    # console), an expired meaning and a past date once each; monotonic rows only for
    # irreversible.
    assert len(cells) == 5 * (17 + 2 * 2 + 2)
    for cell in cells:
        if cell.any_belief:
            # Any belief at all routes so: every source, scope and world reference.
            for source, carried, world in itertools.product(Source, FLAGS, FLAGS):
                facts = BeliefFacts(
                    source, carried, world, expired=cell.expired, past_date=cell.past_date
                )
                assert cell.routing == route(cell.risk, monotonic=cell.monotonic, belief=facts)
            continue
        facts = (
            None
            if cell.source is None
            else BeliefFacts(
                cell.source,
                carried=cell.carried,
                has_world_ref=cell.has_world_ref,
                in_console=cell.in_console,
            )
        )
        assert cell.routing == route(
            cell.risk,
            monotonic=cell.monotonic,
            belief=facts,
            person_required=cell.person_required,
        )
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
