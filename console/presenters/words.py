"""The words a person reads for what the domain says in codes: how a prompt ended, how much a
value's risk matters, where a value came from, and a field's problem (a code and its
parameters) as a sentence."""

from __future__ import annotations

from dataclasses import dataclass
from typing import assert_never

from beliefs.domain.policy import RiskClass, Source
from beliefs.domain.problems import Problem, ProblemCode
from beliefs.errors import InvalidInput
from beliefs.models import Belief, PromptState, RecordedVia

DONE_WORDS: dict[str, str] = {
    "confirm": "Confirmed",
    "edit": "Edited and confirmed",
    "answer": "Answered",
    "reject": "Rejected",
    "veto": "Vetoed",
}
STATE_WORDS: dict[str, str] = {
    PromptState.CANCELLED: "Not needed: the action was cancelled",
    PromptState.EXPIRED: "Not answered in time",
    PromptState.SUPERSEDED: "No longer needed",
}
UNCLASSIFIED_WORDS = "Treated as irreversible until classified"
RISK_WORDS = {
    RiskClass.IRREVERSIBLE: "Cannot be undone",
    RiskClass.POLICY: "Governed by a policy",
    RiskClass.REVERSIBLE: "Can be undone",
    RiskClass.COSMETIC: "Cosmetic",
    RiskClass.UNCLASSIFIED: UNCLASSIFIED_WORDS,
}
MONOTONIC_WORDS = "A wrong value could grant more than you mean to."


@dataclass(frozen=True)
class SourceWords:
    """How the pages say a value's source (`Source`, the domain's word for it), about the
    runtime `who` that reported it: as a badge, and as a clause after its name."""

    badge: str  # "from a tool {who} used"
    clause: str  # "billing-agent" + " got it from a tool"


SOURCE_WORDS: dict[Source, SourceWords] = {
    Source.USER: SourceWords("{who} reports you gave it", "reports you gave it"),
    Source.TOOL: SourceWords("from a tool {who} used", "got it from a tool"),
    Source.INFERENCE: SourceWords("guessed by {who}", "guessed it"),
    Source.DEFAULT: SourceWords("a default of {who}", "used a default"),
}
# A value the person gave on this console's own pages (source user, recorded via console).
GIVEN_IN_CONSOLE = SourceWords("given by you in the console", "you gave it in the console")
UNKNOWN_RUNTIME = "the agent"


def source_words(belief: Belief) -> SourceWords:
    if belief.source == Source.USER and belief.recorded_via == RecordedVia.CONSOLE:
        return GIVEN_IN_CONSOLE
    return SOURCE_WORDS[Source(belief.source)]


def reporter(belief: Belief) -> str:
    """The runtime whose run acquired the value, by name ("the agent" for none)."""
    runtime = belief.instance.runtime
    return runtime.name if runtime is not None and runtime.name else UNKNOWN_RUNTIME


def risk_words(risk: str) -> str:
    try:
        return RISK_WORDS[RiskClass(risk)]
    except ValueError:
        return risk


def problem_words(problem: Problem) -> str:
    """A field's problem as a sentence for a person."""
    p = problem.params
    match problem.code:
        case ProblemCode.REQUIRED:
            return "Enter a value."
        case ProblemCode.TOO_LONG:
            return f"Use at most {p['limit']:,} characters."
        case ProblemCode.NOT_A_NUMBER:
            return "Enter a number, for example 1250 or 12.50."
        case ProblemCode.NOT_FINITE:
            return "It must be a finite number."
        case ProblemCode.NOT_TRUE_OR_FALSE:
            return "Choose yes or no."
        case ProblemCode.NOT_TEXT:
            return "It must be text."
        case ProblemCode.NOT_A_DATE:
            return "Enter a date written YYYY-MM-DD, for example 2026-11-02."
        case ProblemCode.DATE_IN_PAST:
            return "Enter today's date or a later one: this date has passed."
        case ProblemCode.NOT_A_CHOICE:
            return f"Choose one of: {', '.join(p['choices'])}."
        case ProblemCode.NOT_A_VERSION:
            return "It must be the prompt version you saw (a whole number)."
        case ProblemCode.ESCALATION_UNCONFIRMED:
            return problem.message + "."  # it starts with the value, kept as it is
        case ProblemCode.NOT_ACKNOWLEDGED:
            count = len(p["keys"])
            return (
                "Tick each changed detail below to say that you read it "
                f"({count} not ticked yet), then press “Confirm”."
            )
        case ProblemCode.TAIL_NOT_TYPED:
            return (
                f"Type the last {p['length']} characters of the value on record, as you read "
                "them above, then press “Confirm”."
            )
        case ProblemCode.EDIT_NOT_REPEATED:
            return (
                "This changes a value that cannot be undone, so it is entered twice: type the "
                "new value again below, then press the button once more."
            )
        case ProblemCode.NOT_JSON | ProblemCode.ACTION_NOT_TAKEN | ProblemCode.VALUE_CHANGED:
            return as_sentence(problem.message)  # the API's words, as a sentence
        case _ as unreachable:
            assert_never(unreachable)


def as_sentence(message: str) -> str:
    """A message without a code (the API's words) as a sentence."""
    text = message.strip()
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


def field_words(exc: InvalidInput, name: str) -> list[str]:
    """The problems of one field of a refusal, in words: mapped from their codes, or the
    message as a sentence where a problem has none."""
    problems = exc.problems.get(name)
    if problems:
        return [problem_words(p) for p in problems]
    return [as_sentence(m) for m in exc.fields.get(name, [])]
