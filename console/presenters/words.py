"""The words a person reads for what the domain says in codes: how a prompt ended, how much a
value's risk matters, where a value came from, and a service's field message as a sentence."""

from __future__ import annotations

import re

from beliefs.domain.policy import RiskClass
from beliefs.models import PromptState

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
RISK_WORDS = {
    RiskClass.IRREVERSIBLE: "Cannot be undone",
    RiskClass.POLICY: "Governed by a policy",
    RiskClass.REVERSIBLE: "Can be undone",
    RiskClass.COSMETIC: "Cosmetic",
    RiskClass.UNCLASSIFIED: "Cannot be undone",
}
# How a runtime came by a value, after its name: "billing-agent got it from a tool".
PROVENANCE_WORDS = {
    "tool": "got it from a tool",
    "inference": "guessed it",
    "default": "used a default",
}
SOURCE_WORDS = {
    "user": "you",
    "tool": "a tool the agent used",
    "inference": "the agent's own guess",
    "default": "a default",
}


def risk_words(risk: str) -> str:
    try:
        return RISK_WORDS[RiskClass(risk)]
    except ValueError:
        return risk


def plain_problem(problem: str) -> str:
    """A service's field message ("must be one of a, b") as a sentence for a person."""
    text = problem.strip().rstrip(".")
    if text == "is required":
        return "Enter a value."
    if match := re.fullmatch(r"must be one of (.+)", text):
        return f"Choose one of: {match.group(1)}."
    if match := re.fullmatch(r"must be at most (\d+) characters", text):
        return f"Use at most {int(match.group(1)):,} characters."
    if text == "must be a number":
        return "Enter a number, for example 1250 or 12.50."
    if text == "must be true or false":
        return "Choose yes or no."
    if text == "must be a date written YYYY-MM-DD":
        return "Enter a date written YYYY-MM-DD, for example 2026-11-02."
    if text.startswith("must "):
        return "It " + text + "."
    return text[:1].upper() + text[1:] + "."
