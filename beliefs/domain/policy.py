"""Effective risk and the routing state machine.

Pure Python: plain values in, plain values out, no Django. Everything that decides whether a
value may be bound without a person looking at it lives here, so it can be tested over every
combination of its inputs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property
from typing import assert_never


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
    """The routing rules, checked in order by `route`: each has a name that says when it
    applies and a code (its value, R0–R7) that the API, the prompts and the matrix page show."""

    NO_BELIEF = "R0"  # no value for the slot: ask
    COSMETIC = "R1"  # cosmetic: bound without asking
    ANSWERED_THIS_RUN = "R2"  # the user gave it in this run: bound
    MONOTONIC_TYPED_AFRESH = "R3"  # an irreversible monotonic scope: typed afresh
    IRREVERSIBLE_NOT_FROM_USER = "R4"  # irreversible, acquired in this run, not from the user
    CARRIED_UNANCHORED = "R5"  # irreversible, carried, nothing anchors its world: ask
    CARRIED_ANCHORED = "R6"  # irreversible, carried with its world: confirm against it
    ASSUMPTION = "R7"  # reversible or policy: bound, listed as an assumption to veto
    # Checked right after R0, whatever the risk: what the value meant has run out.
    MEANING_EXPIRED = "R8"  # its world reference's `valid_until` has passed: ask afresh
    DATE_IN_PAST = "R9"  # a date before today in a slot that takes future dates: ask
    # Checked where R2 would bind: the decision wants the person's own act in the console.
    PERSON_MUST_CONFIRM = "R10"  # the runtime reports the person's answer: confirm it here

    @property
    def code(self) -> str:
        return self.value


BLOCKING_ROUTES = frozenset({Route.CONFIRM, Route.ASK})


def risk_level(risk: RiskClass) -> int:
    """The protection level of a risk class; unclassified counts as irreversible."""
    if risk is RiskClass.UNCLASSIFIED:
        return RISK_ORDER.index(RiskClass.IRREVERSIBLE)
    return RISK_ORDER.index(risk)


class RiskReasonKind(StrEnum):
    """Where a slot's effective risk comes from."""

    OWN = "own"  # the slot's own classification
    UNCLASSIFIED = "unclassified"  # the slot has none yet: treated as irreversible
    DECISION = "decision"  # a decision the slot feeds
    MONOTONIC = "monotonic"  # a monotonic scope is always irreversible
    # Stored words that none of the above says (a prompt written before they were fixed):
    # kept as they are, in `RiskReason.words`.
    WORDS_ONLY = "words_only"


_UNCLASSIFIED_WORDS = "unclassified: treated as irreversible"
_DECISION_PREFIX = "inherited from decision "


@dataclass(frozen=True)
class RiskReason:
    """Why a slot has its effective risk, as data; `text` is how the API and the prompts'
    `risk_reason` column say it, and `from_text` reads that text back."""

    kind: RiskReasonKind
    decision: str = ""  # DECISION: the decision's key
    decision_risk: RiskClass | None = None  # DECISION: the decision's own class
    words: str = ""  # WORDS_ONLY: the stored words

    @property
    def text(self) -> str:
        match self.kind:
            case RiskReasonKind.OWN:
                return "own classification"
            case RiskReasonKind.UNCLASSIFIED:
                return _UNCLASSIFIED_WORDS
            case RiskReasonKind.MONOTONIC:
                return "monotonic scope"
            case RiskReasonKind.DECISION:
                risk = self.decision_risk or RiskClass.UNCLASSIFIED
                words = _UNCLASSIFIED_WORDS if risk is RiskClass.UNCLASSIFIED else risk.value
                return f"{_DECISION_PREFIX}{self.decision} ({words})"
            case RiskReasonKind.WORDS_ONLY:
                return self.words
            case _ as unreachable:
                assert_never(unreachable)

    @classmethod
    def from_text(cls, text: str) -> RiskReason:
        """The reason whose `text` this is (a prompt stores the text): `text` gives back
        exactly these words, whatever they are."""
        for kind in (RiskReasonKind.OWN, RiskReasonKind.UNCLASSIFIED, RiskReasonKind.MONOTONIC):
            if text == cls(kind).text:
                return cls(kind)
        if text.startswith(_DECISION_PREFIX) and text.endswith(")"):
            key, _, words = text[len(_DECISION_PREFIX) : -1].rpartition(" (")
            risks = {
                _UNCLASSIFIED_WORDS: RiskClass.UNCLASSIFIED,
                **{r.value: r for r in RISK_ORDER},
            }
            if key and words in risks:
                reason = cls(RiskReasonKind.DECISION, decision=key, decision_risk=risks[words])
                if reason.text == text:
                    return reason
        return cls(RiskReasonKind.WORDS_ONLY, words=text)


@dataclass(frozen=True)
class EffectiveRisk:
    risk: RiskClass  # never UNCLASSIFIED
    why: RiskReason

    @cached_property
    def reason(self) -> str:
        """The reason in the API's words (worked out once: a plan reads it twice per slot, and
        its slots share a few of these)."""
        return self.why.text


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
    own_reason = RiskReason(
        RiskReasonKind.UNCLASSIFIED if own is RiskClass.UNCLASSIFIED else RiskReasonKind.OWN
    )
    candidates = [(risk_level(own), own_reason)]
    for key, risk in decisions:
        reason = RiskReason(RiskReasonKind.DECISION, decision=key, decision_risk=risk)
        candidates.append((risk_level(risk), reason))
    if monotonic:
        candidates.append(
            (risk_level(RiskClass.IRREVERSIBLE), RiskReason(RiskReasonKind.MONOTONIC))
        )
    best_level, best_reason = candidates[0]
    for level, reason in candidates[1:]:
        if level > best_level:
            best_level, best_reason = level, reason
    return EffectiveRisk(risk=RISK_ORDER[best_level], why=best_reason)


@dataclass(frozen=True)
class BeliefFacts:
    """What routing needs to know of the chosen belief."""

    source: Source
    carried: bool
    has_world_ref: bool
    # The person gave it in the console (an answer, a confirm, an edit), not a runtime's
    # report of what they said.
    in_console: bool = False
    # What it meant has run out: its world reference's `valid_until` has passed
    # (`meaning_expired`).
    expired: bool = False
    # A date before today in a slot that takes only future dates (`date_in_past`).
    past_date: bool = False


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


def route(
    risk: RiskClass,
    *,
    monotonic: bool,
    belief: BeliefFacts | None,
    person_required: bool = False,
) -> Routing:
    """Rules in order (R0, R8, R9, R1, R2, R3, R10, R4–R7); the first that matches decides.

    `risk` is the slot's effective risk (see `effective_risk`); an unclassified value here is
    treated as irreversible too, so that a caller who forgot to propagate cannot lower the guard.
    `person_required`: the slot feeds a decision that wants the person's own act in the
    console, so a runtime's report of their answer does not bind by itself.
    """
    if risk is RiskClass.UNCLASSIFIED:
        risk = RiskClass.IRREVERSIBLE
    if belief is None:
        return Routing(Route.ASK, Rule.NO_BELIEF, "no belief for this slot: ask")
    if belief.expired:
        return Routing(
            Route.ASK,
            Rule.MEANING_EXPIRED,
            "what the value referred to has expired (its world reference's valid_until has "
            "passed): ask afresh",
        )
    if belief.past_date:
        return Routing(
            Route.ASK,
            Rule.DATE_IN_PAST,
            "a date before today, and this slot takes only dates from today on: ask",
        )
    if risk is RiskClass.COSMETIC:
        return Routing(Route.SILENT, Rule.COSMETIC, "cosmetic: bound without asking")
    current_user = not belief.carried and belief.source is Source.USER
    if current_user and (belief.in_console or not person_required):
        return Routing(Route.SILENT, Rule.ANSWERED_THIS_RUN, "answered by the user in this run")
    if risk is RiskClass.IRREVERSIBLE and monotonic:
        return Routing(
            Route.ASK,
            Rule.MONOTONIC_TYPED_AFRESH,
            "monotonic scope: the value must be typed afresh, never pre-filled",
        )
    if current_user:
        return Routing(
            Route.CONFIRM,
            Rule.PERSON_MUST_CONFIRM,
            "the runtime reports this as the person's answer, and this action needs the "
            "person's own confirmation in the console",
        )
    if risk is RiskClass.IRREVERSIBLE:
        if not belief.carried:
            return Routing(
                Route.CONFIRM,
                Rule.IRREVERSIBLE_NOT_FROM_USER,
                f"irreversible and acquired from {belief.source.value}, not the user: confirm",
            )
        if not belief.has_world_ref:
            return Routing(
                Route.ASK,
                Rule.CARRIED_UNANCHORED,
                "irreversible, carried from an earlier run, and nothing anchors what it "
                "referred to: ask",
            )
        return Routing(
            Route.CONFIRM,
            Rule.CARRIED_ANCHORED,
            "irreversible and carried from an earlier run: confirm against the world now",
        )
    return Routing(
        Route.SURFACED,
        Rule.ASSUMPTION,
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
    # The rows of the later rules: a decision that wants the person's own act in the console
    # (and whether the value was given there), an expired meaning, a date in the past. An
    # expired meaning and a past date route alike whatever the belief: `any_belief` rows stand
    # for every source, current or carried, with or without a world reference.
    person_required: bool = False
    in_console: bool = False
    expired: bool = False
    past_date: bool = False
    any_belief: bool = False


def routing_matrix() -> list[MatrixCell]:
    """Every reachable combination of routing inputs with its route and rule.

    A monotonic slot's effective risk is always irreversible, so monotonic rows exist only for
    that risk. Without a belief, carried and world reference do not apply and are listed once.
    A current answer of the user's is listed once more for each way a decision that wants the
    person's own act can see it (reported by the runtime, or given in the console); an expired
    meaning and a date in the past once per risk, for any belief.
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
                    if source is Source.USER and not carried:
                        for in_console in (False, True):
                            facts = BeliefFacts(
                                source=source,
                                carried=False,
                                has_world_ref=world,
                                in_console=in_console,
                            )
                            routing = route(
                                risk, monotonic=monotonic, belief=facts, person_required=True
                            )
                            cells.append(
                                MatrixCell(
                                    risk=risk,
                                    monotonic=monotonic,
                                    source=source,
                                    carried=False,
                                    has_world_ref=world,
                                    routing=routing,
                                    person_required=True,
                                    in_console=in_console,
                                )
                            )
            for expired, past_date in ((True, False), (False, True)):
                # Any belief: the rule comes before everything a belief's other facts decide.
                facts = BeliefFacts(
                    source=Source.TOOL,
                    carried=True,
                    has_world_ref=True,
                    expired=expired,
                    past_date=past_date,
                )
                cells.append(
                    MatrixCell(
                        risk=risk,
                        monotonic=monotonic,
                        source=None,
                        carried=False,
                        has_world_ref=False,
                        routing=route(risk, monotonic=monotonic, belief=facts),
                        expired=expired,
                        past_date=past_date,
                        any_belief=True,
                    )
                )
    return cells
