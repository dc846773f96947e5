"""Effective risk and the routing state machine.

Pure Python: plain values in, plain values out, no Django. Everything that decides whether a
value may be bound without a person looking at it lives here, so it can be tested over every
combination of its inputs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum


class RiskClass(StrEnum):
    UNCLASSIFIED = "unclassified"
    COSMETIC = "cosmetic"
    REVERSIBLE = "reversible"
    POLICY = "policy"
    IRREVERSIBLE = "irreversible"


# Increasing order of protection. `unclassified` is deliberately absent: it is never a level of
# its own, it counts as irreversible.
RISK_ORDER: tuple[RiskClass, ...] = (
    RiskClass.COSMETIC,
    RiskClass.REVERSIBLE,
    RiskClass.POLICY,
    RiskClass.IRREVERSIBLE,
)


class Source(StrEnum):
    USER = "user"
    TOOL = "tool"
    INFERENCE = "inference"
    DEFAULT = "default"


class Route(StrEnum):
    SILENT = "SILENT"
    SURFACED = "SURFACED"
    CONFIRM = "CONFIRM"
    ASK = "ASK"


class Rule(StrEnum):
    R0 = "R0"
    R1 = "R1"
    R2 = "R2"
    R3 = "R3"
    R4 = "R4"
    R5 = "R5"
    R6 = "R6"
    R7 = "R7"


BLOCKING_ROUTES = frozenset({Route.CONFIRM, Route.ASK})


def risk_level(risk: RiskClass) -> int:
    """The protection level of a risk class; unclassified counts as irreversible."""
    if risk is RiskClass.UNCLASSIFIED:
        return RISK_ORDER.index(RiskClass.IRREVERSIBLE)
    return RISK_ORDER.index(risk)


@dataclass(frozen=True)
class EffectiveRisk:
    risk: RiskClass  # never UNCLASSIFIED
    reason: str


def effective_risk(
    own: RiskClass,
    decisions: Iterable[tuple[str, RiskClass]] = (),
    *,
    monotonic: bool = False,
) -> EffectiveRisk:
    """The highest of the slot's own class, every decision it feeds, and monotonic.

    `decisions` are (decision key, decision risk class) pairs. Where several sources reach the
    same level the first one named wins the reason: own class, then decisions in the order
    given, then monotonic.
    """
    if own is RiskClass.UNCLASSIFIED:
        candidates = [(risk_level(own), "unclassified: treated as irreversible")]
    else:
        candidates = [(risk_level(own), "own classification")]
    for key, risk in decisions:
        if risk is RiskClass.UNCLASSIFIED:
            reason = f"inherited from decision {key} (unclassified: treated as irreversible)"
        else:
            reason = f"inherited from decision {key} ({risk.value})"
        candidates.append((risk_level(risk), reason))
    if monotonic:
        candidates.append((risk_level(RiskClass.IRREVERSIBLE), "monotonic scope"))
    best_level, best_reason = candidates[0]
    for level, reason in candidates[1:]:
        if level > best_level:
            best_level, best_reason = level, reason
    return EffectiveRisk(risk=RISK_ORDER[best_level], reason=best_reason)


@dataclass(frozen=True)
class BeliefFacts:
    """What routing needs to know of the chosen belief."""

    source: Source
    carried: bool
    has_world_ref: bool


@dataclass(frozen=True)
class Routing:
    route: Route
    rule: Rule
    reason: str

    @property
    def blocking(self) -> bool:
        return self.route in BLOCKING_ROUTES

    @property
    def prefilled(self) -> bool:
        """Only a CONFIRM form is pre-filled; an ASK never is."""
        return self.route is Route.CONFIRM


def route(risk: RiskClass, *, monotonic: bool, belief: BeliefFacts | None) -> Routing:
    """Rules R0–R7 in order; the first that matches decides.

    `risk` is the slot's effective risk (see `effective_risk`); an unclassified value here is
    treated as irreversible too, so that a caller who forgot to propagate cannot lower the guard.
    """
    if risk is RiskClass.UNCLASSIFIED:
        risk = RiskClass.IRREVERSIBLE
    if belief is None:
        return Routing(Route.ASK, Rule.R0, "no belief for this slot: ask")
    if risk is RiskClass.COSMETIC:
        return Routing(Route.SILENT, Rule.R1, "cosmetic: bound without asking")
    if not belief.carried and belief.source is Source.USER:
        return Routing(Route.SILENT, Rule.R2, "answered by the user in this run")
    if risk is RiskClass.IRREVERSIBLE:
        if monotonic:
            return Routing(
                Route.ASK,
                Rule.R3,
                "monotonic scope: the value must be typed afresh, never pre-filled",
            )
        if not belief.carried:
            return Routing(
                Route.CONFIRM,
                Rule.R4,
                f"irreversible and acquired from {belief.source.value}, not the user: confirm",
            )
        if not belief.has_world_ref:
            return Routing(
                Route.ASK,
                Rule.R5,
                "irreversible, carried from an earlier run, and nothing anchors what it "
                "referred to: ask",
            )
        return Routing(
            Route.CONFIRM,
            Rule.R6,
            "irreversible and carried from an earlier run: confirm against the world now",
        )
    return Routing(
        Route.SURFACED,
        Rule.R7,
        f"{risk.value}: bound, listed as an assumption you can veto",
    )


# Every input dimension of the routing table, in the order the matrix page shows them.
MATRIX_RISKS: tuple[RiskClass, ...] = RISK_ORDER
MATRIX_SOURCES: tuple[Source | None, ...] = (None, *Source)


@dataclass(frozen=True)
class MatrixCell:
    risk: RiskClass
    monotonic: bool
    source: Source | None  # None: no belief
    carried: bool
    has_world_ref: bool
    routing: Routing


def routing_matrix() -> list[MatrixCell]:
    """Every reachable combination of routing inputs with its route and rule.

    A monotonic slot's effective risk is always irreversible, so monotonic rows exist only for
    that risk. Without a belief, carried and world reference do not apply and are listed once.
    """
    cells: list[MatrixCell] = []
    for risk in MATRIX_RISKS:
        for monotonic in (False, True):
            if monotonic and risk is not RiskClass.IRREVERSIBLE:
                continue
            for source in MATRIX_SOURCES:
                shapes = (
                    [(False, False)]
                    if source is None
                    else [(carried, world) for carried in (False, True) for world in (False, True)]
                )
                for carried, world in shapes:
                    facts = (
                        None
                        if source is None
                        else BeliefFacts(source=source, carried=carried, has_world_ref=world)
                    )
                    cells.append(
                        MatrixCell(
                            risk=risk,
                            monotonic=monotonic,
                            source=source,
                            carried=carried,
                            has_world_ref=world,
                            routing=route(risk, monotonic=monotonic, belief=facts),
                        )
                    )
    return cells
