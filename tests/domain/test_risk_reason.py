"""An effective risk says why in data (`RiskReason`: a kind and, for a decision, its key and
class); the API and the prompts keep saying it in the same words, and those words read back
to the same reason."""

from __future__ import annotations

import pytest

from beliefs.domain.policy import (
    RiskClass,
    RiskReason,
    RiskReasonKind,
    effective_risk,
)

KEYS = ("send_transfer", "ship", "a key (with) brackets", "x")
REASONS = [
    RiskReason(RiskReasonKind.OWN),
    RiskReason(RiskReasonKind.UNCLASSIFIED),
    RiskReason(RiskReasonKind.MONOTONIC),
    *(
        RiskReason(RiskReasonKind.DECISION, decision=key, decision_risk=risk)
        for key in KEYS
        for risk in RiskClass
    ),
]


def test_it_has_a_reason_of_every_kind_under_test() -> None:
    kinds = {reason.kind for reason in REASONS}
    assert kinds | {RiskReasonKind.WORDS_ONLY} == set(RiskReasonKind)


@pytest.mark.parametrize("reason", REASONS, ids=lambda r: r.text)
def test_it_reads_its_own_words_back(reason: RiskReason) -> None:
    assert RiskReason.from_text(reason.text) == reason


def test_it_says_the_words_the_api_always_said() -> None:
    assert RiskReason(RiskReasonKind.OWN).text == "own classification"
    assert RiskReason(RiskReasonKind.UNCLASSIFIED).text == "unclassified: treated as irreversible"
    assert RiskReason(RiskReasonKind.MONOTONIC).text == "monotonic scope"
    assert (
        RiskReason(RiskReasonKind.DECISION, decision="ship", decision_risk=RiskClass.POLICY).text
        == "inherited from decision ship (policy)"
    )
    assert (
        RiskReason(
            RiskReasonKind.DECISION, decision="ship", decision_risk=RiskClass.UNCLASSIFIED
        ).text
        == "inherited from decision ship (unclassified: treated as irreversible)"
    )


@pytest.mark.parametrize(
    "words",
    ["", "feeds act", "inherited from decision  (policy)", "inherited from decision x (lots)"],
)
def test_it_keeps_words_no_reason_says_as_they_are(words: str) -> None:
    reason = RiskReason.from_text(words)
    assert reason.kind is RiskReasonKind.WORDS_ONLY
    assert reason.text == words


def test_it_names_the_decision_that_raised_the_risk() -> None:
    eff = effective_risk(
        RiskClass.COSMETIC,
        [("update_profile", RiskClass.POLICY), ("sign_contract", RiskClass.IRREVERSIBLE)],
    )
    assert eff.why == RiskReason(
        RiskReasonKind.DECISION, decision="sign_contract", decision_risk=RiskClass.IRREVERSIBLE
    )
    assert eff.reason == eff.why.text
    assert effective_risk(RiskClass.POLICY, monotonic=True).why.kind is RiskReasonKind.MONOTONIC
    assert effective_risk(RiskClass.UNCLASSIFIED).why.kind is RiskReasonKind.UNCLASSIFIED
    assert effective_risk(RiskClass.REVERSIBLE).why.kind is RiskReasonKind.OWN
