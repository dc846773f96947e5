"""The demo validations: idempotent, every verdict, every producible finding code, Part 7."""

from __future__ import annotations

import pytest

from beliefs.domain.contract import FINDING_CODES
from beliefs.models import ProposalFinding, ProposalValidation
from demo.proposals import seed_demo_proposals

pytestmark = pytest.mark.django_db

# The fallback for pydantic errors that the contract's models cannot raise (tests/contract).
UNPRODUCIBLE = {"schema.invalid"}


def test_it_is_idempotent():
    added = seed_demo_proposals()
    assert added == ProposalValidation.objects.count() > 0
    findings = ProposalFinding.objects.count()
    assert seed_demo_proposals() == 0
    assert ProposalValidation.objects.count() == added
    assert ProposalFinding.objects.count() == findings


def test_it_covers_every_verdict_and_every_producible_finding_code():
    seed_demo_proposals()
    verdicts = set(ProposalValidation.objects.values_list("verdict", flat=True))
    assert verdicts == {"PASS", "ACCEPT", "REJECT"}
    codes = set(ProposalFinding.objects.values_list("code", flat=True))
    assert codes == set(FINDING_CODES) - UNPRODUCIBLE
    assert set(ProposalValidation.objects.values_list("policy", flat=True)) == {
        "strict",
        "lenient",
    }
    decided = set(ProposalValidation.objects.values_list("decided_by", flat=True))
    assert {"schema", "references", "identity", "V1", "V2", "V3", "V4"} <= decided


def test_it_includes_the_seeds_part_7_walkthrough():
    seed_demo_proposals()
    by_run = {
        v.run: v
        for v in ProposalValidation.objects.filter(
            provider="demo-provider", run__startswith="walkthrough-57J.63"
        )
    }
    case_a = by_run["walkthrough-57J.63-case-A"]
    assert (case_a.verdict, case_a.declared, case_a.meaningful_change) == ("PASS", True, True)
    assert case_a.counts["addedNodes"] == 1
    assert case_a.update["addedNodes"][0]["type"] == "unknown"

    no_op = by_run["walkthrough-57J.63-case-B-declared-false"]
    assert (no_op.verdict, no_op.decided_by, no_op.meaningful_change) == ("PASS", "V4", False)
    # the equivalent unknown already exists in the graph it was judged against
    labels = [n["label"].casefold() for n in no_op.graph["nodes"] if n["type"] == "unknown"]
    assert no_op.update["answerMeaning"]["userSupportedMeaning"].casefold() in labels

    noncompliant = by_run["walkthrough-57J.63-case-B-declared-true"]
    assert (noncompliant.verdict, noncompliant.decided_by) == ("REJECT", "V1")
    assert noncompliant.model == "model-x"
