"""The pages map the domain's codes to words: every member of every enum they show has words
of its own, so a new code cannot reach a person as a bare code (or not at all)."""

from __future__ import annotations

import re

import pytest

from beliefs.domain.policy import RiskClass, RiskReason, RiskReasonKind, Rule, Source
from beliefs.domain.problems import Problem, ProblemCode
from beliefs.domain.vocabulary import AuditKind
from beliefs.models import Belief, Prompt, PromptState, RecordedVia, Runtime, Slot, TaskInstance
from console.presenters.instance import Card, PageFacts
from console.presenters.words import SOURCE_WORDS, problem_words
from console.templatetags.console_tags import source_badge
from console.views.enduser import CONFLICT_WORDS

# Parameters enough for any problem: each code reads the ones it needs.
PARAMS = {
    "limit": 2000,
    "choices": ["read", "write"],
    "detail": "Expecting value",
    "route": "ASK",
    "allowed": ["answer", "reject"],
    "value": "'admin'",
    "grant": "'read'",
    "keys": ["holder"],
    "length": 4,
}
FACTS = PageFacts(status="awaiting_user", accepts_veto=True, principal="alice", decision_labels={})


@pytest.mark.parametrize("code", list(ProblemCode))
def test_every_problem_has_words_for_a_person_and_for_the_api(code: ProblemCode) -> None:
    problem = Problem(code, PARAMS)
    words = problem_words(problem)
    assert words and not words[0].islower() and words.endswith(".")
    assert problem.message and not problem.message.endswith(".")


def test_it_says_the_numbers_and_choices_a_problem_carries() -> None:
    assert problem_words(Problem(ProblemCode.TOO_LONG, {"limit": 2000})) == (
        "Use at most 2,000 characters."
    )
    choices = Problem(ProblemCode.NOT_A_CHOICE, {"choices": ["a", "b"]})
    assert (choices.message, problem_words(choices)) == (
        "must be one of a, b",
        "Choose one of: a, b.",
    )


def _card(**prompt: object) -> Card:
    slot = Slot(key="amount", label="Amount", monotonic=bool(prompt.pop("monotonic", False)))
    return Card(Prompt(slot=slot, **prompt), FACTS)


@pytest.mark.parametrize("rule", list(Rule))
def test_every_rule_has_a_name_a_code_and_a_reason_on_its_card(rule: Rule) -> None:
    assert re.fullmatch(r"R(10|[0-9])", rule.code) and rule.name != rule.code
    assert _card(rule=rule.value).why.endswith(".")


def test_the_rules_that_ask_say_why_in_words_of_their_own() -> None:
    asked = [r for r in Rule if r not in (Rule.COSMETIC, Rule.ANSWERED_THIS_RUN, Rule.ASSUMPTION)]
    whys = [_card(rule=r.value).why for r in asked]
    assert len(set(whys)) == len(asked)


@pytest.mark.parametrize("kind", list(RiskReasonKind))
def test_every_risk_reason_says_why_it_matters_for_an_irreversible_value(
    kind: RiskReasonKind,
) -> None:
    reason = RiskReason(kind, decision="ship", decision_risk=RiskClass.IRREVERSIBLE, words="w")
    card = _card(rule="R0", risk_reason=reason.text, effective_risk=RiskClass.IRREVERSIBLE)
    assert card.risk_why.endswith(".")


def test_it_names_the_decision_a_value_is_used_for() -> None:
    reason = RiskReason(RiskReasonKind.DECISION, decision="ship", decision_risk=RiskClass.POLICY)
    card = Card(
        Prompt(slot=Slot(key="a"), risk_reason=reason.text, effective_risk=RiskClass.POLICY),
        PageFacts("awaiting_user", True, "alice", {"ship": "Ship the order"}),
    )
    assert card.risk_why == "It is used to “Ship the order”."


@pytest.mark.parametrize("source", list(Source))
def test_every_source_has_a_badge_naming_the_runtime_escaped(source: Source) -> None:
    runtime = Runtime(name="<b>billing</b>")
    belief = Belief(instance=TaskInstance(runtime=runtime), source=source.value)
    badge = str(source_badge(belief))
    assert "&lt;b&gt;billing&lt;/b&gt;" in badge and "<b>" not in badge
    assert SOURCE_WORDS[source].clause


def test_a_value_given_in_the_console_is_said_to_be_the_persons_own() -> None:
    belief = Belief(
        instance=TaskInstance(runtime=None), source="user", recorded_via=RecordedVia.CONSOLE
    )
    assert str(source_badge(belief)) == "given by you in the console"
    assert str(source_badge(Belief(instance=TaskInstance(runtime=None), source="tool"))) == (
        "from a tool the agent used"
    )


@pytest.mark.parametrize("state", [s for s in PromptState if s != PromptState.OPEN])
def test_every_settled_prompt_state_has_words_for_a_late_answer(state: PromptState) -> None:
    assert CONFLICT_WORDS[f"prompt_{state}"].startswith("This question is no longer open")


def test_every_audit_kind_is_what_and_what_happened() -> None:
    for kind in AuditKind:
        assert re.fullmatch(r"[a-z_]+\.[a-z_]+", kind.value), kind
        assert kind.name == kind.value.upper().replace(".", "_"), kind
