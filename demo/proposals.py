"""Demo proposal validations: every verdict, every finding code the validator can produce, and
the office-savings walkthrough of the contract's source document (its runs are named
``walkthrough-57J.63-…`` after that example's number there), all on its office-savings graph.

``seed_demo_proposals()`` is idempotent: each case is stored once, keyed by its ``run``.
"""

from __future__ import annotations

import copy
import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.utils import timezone

from beliefs.models import ProposalValidation
from beliefs.services.audit import SYSTEM
from beliefs.services.proposals import proposal_validate_and_store

PROVIDER = "demo-provider"
MEANING = "uncertainty about projected office savings realism"
SAVINGS_LABEL = "Uncertainty about projected office savings realism"

# The walkthrough's graph: a claim about office savings, the facts behind it and its unknowns.
GRAPH: dict[str, Any] = {
    "nodes": [
        {"id": "c1", "type": "claim", "label": "The smaller office saves money", "value": 0.6},
        {"id": "f1", "type": "fact", "label": "Current rent is 12,000 a month", "value": 12000},
        {"id": "u1", "type": "unknown", "label": SAVINGS_LABEL, "status": "unresolved"},
        {"id": "u2", "type": "unknown", "label": "Can the lease end early", "status": "resolved"},
        {"id": "u3", "type": "unknown", "label": "Timing of the move", "status": "unresolved"},
    ],
    "edges": [
        {"source": "u1", "target": "c1", "type": "qualifies"},
        {"source": "f1", "target": "c1", "type": "supports"},
        {"source": "u3", "target": "c1", "type": "qualifies"},
    ],
}
# Case A: the same graph before the savings-realism unknown existed.
GRAPH_WITHOUT_SAVINGS: dict[str, Any] = {
    "nodes": [n for n in GRAPH["nodes"] if n["id"] != "u1"],
    "edges": [e for e in GRAPH["edges"] if e["source"] != "u1"],
}

_ABSENT = object()


def _meaning(declared: object = _ABSENT, text: object = MEANING, **extra: Any) -> dict[str, Any]:
    answer: dict[str, Any] = {"userSupportedMeaning": text, **extra}
    if declared is not _ABSENT:
        answer["structuralActionRequired"] = declared
    return answer


def _unknown(node_id: str, label: str, status: str = "unresolved") -> dict[str, Any]:
    return {"id": node_id, "type": "unknown", "label": label, "status": status}


SAVINGS_UNKNOWN = _unknown("u9", SAVINGS_LABEL)
SAVINGS_EDGE = {"source": "u9", "target": "c1", "type": "qualifies"}
RESOLVE_U3 = {"resolvedUnknownNodeIds": ["u3"]}


@dataclass(frozen=True)
class Case:
    run: str
    update: Any
    graph: Any = field(default_factory=lambda: copy.deepcopy(GRAPH))
    model: str = "model-x"
    policy: str = "strict"
    days_ago: int = 0


CASES: list[Case] = [
    # The office-savings walkthrough: one answer, three ways a model may turn it into an update.
    Case(
        "walkthrough-57J.63-case-A",
        {
            "answerMeaning": _meaning(True, supportCategory="uncertain"),
            "addedNodes": [SAVINGS_UNKNOWN],
            "addedEdges": [SAVINGS_EDGE],
            "selectedQuestion": "How confident are you in the projected savings?",
        },
        graph=copy.deepcopy(GRAPH_WITHOUT_SAVINGS),
        days_ago=9,
    ),
    Case(
        "walkthrough-57J.63-case-B-declared-false",
        {"answerMeaning": _meaning(False, supportCategory="uncertain")},
        days_ago=9,
    ),
    Case(
        "walkthrough-57J.63-case-B-declared-true",
        {"answerMeaning": _meaning(True, supportCategory="uncertain")},
        days_ago=9,
    ),
    # The contract invariants V2-V4 and the two transition policies.
    Case(
        "contract-V2-declared-false-with-change",
        {"answerMeaning": _meaning(False), **RESOLVE_U3},
        days_ago=8,
    ),
    Case("contract-V3-missing-strict", {"answerMeaning": _meaning(), **RESOLVE_U3}, days_ago=8),
    Case(
        "contract-V3-missing-lenient-with-change",
        {"answerMeaning": _meaning(), **RESOLVE_U3},
        policy="lenient",
        model="model-y",
        days_ago=7,
    ),
    Case(
        "contract-V3-missing-lenient-no-change",
        {"answerMeaning": _meaning()},
        policy="lenient",
        model="model-y",
        days_ago=7,
    ),
    Case("contract-no-answer-meaning", {**RESOLVE_U3}, model="model-y", days_ago=6),
    Case(
        "contract-updated-node-value",
        {"answerMeaning": _meaning(True), "updatedNodes": [{"id": "c1", "value": 0.4}]},
        model="model-y",
        days_ago=6,
    ),
    # Schema.
    Case(
        "schema-extra-field",
        {"answerMeaning": _meaning(True), **RESOLVE_U3, "confidence": 0.9},
        days_ago=5,
    ),
    Case(
        "schema-missing-meaning",
        {"answerMeaning": {"structuralActionRequired": True}, **RESOLVE_U3},
        days_ago=5,
    ),
    Case(
        "schema-declaration-as-string",
        {"answerMeaning": _meaning("true"), **RESOLVE_U3},
        days_ago=5,
    ),
    Case(
        "schema-blank-meaning",
        {"answerMeaning": _meaning(True, text="   "), **RESOLVE_U3},
        days_ago=4,
    ),
    Case(
        "schema-unknown-status",
        {"answerMeaning": _meaning(True), "addedNodes": [_unknown("u9", "Moving costs", "open")]},
        days_ago=4,
    ),
    Case("schema-update-not-an-object", ["not", "an", "update"], model="model-y", days_ago=4),
    # References.
    Case(
        "reference-graph-duplicate-id",
        {"answerMeaning": _meaning(True), **RESOLVE_U3},
        graph={
            "nodes": [*copy.deepcopy(GRAPH["nodes"]), {"id": "c1", "type": "claim", "label": "x"}],
            "edges": copy.deepcopy(GRAPH["edges"]),
        },
        days_ago=3,
    ),
    Case(
        "reference-unknown-node",
        {"answerMeaning": _meaning(True), "updatedNodes": [{"id": "c7", "value": 1}]},
        days_ago=3,
    ),
    Case(
        "reference-duplicate-updated-id",
        {
            "answerMeaning": _meaning(True),
            "updatedNodes": [{"id": "c1", "value": 0.5}, {"id": "c1", "value": 0.4}],
        },
        days_ago=3,
    ),
    Case(
        "reference-resolve-a-fact",
        {"answerMeaning": _meaning(True), "resolvedUnknownNodeIds": ["f1"]},
        days_ago=2,
    ),
    Case(
        "reference-resolve-resolved",
        {"answerMeaning": _meaning(True), "resolvedUnknownNodeIds": ["u2"]},
        days_ago=2,
    ),
    Case(
        "reference-resolve-twice",
        {"answerMeaning": _meaning(True), "resolvedUnknownNodeIds": ["u3", "u3"]},
        model="model-y",
        days_ago=2,
    ),
    Case(
        "reference-added-id-exists",
        {"answerMeaning": _meaning(True), "addedNodes": [_unknown("u3", "Moving costs")]},
        days_ago=1,
    ),
    Case(
        "reference-duplicate-added-id",
        {
            "answerMeaning": _meaning(True),
            "addedNodes": [_unknown("u9", "Moving costs"), _unknown("u9", "Staff commute")],
        },
        days_ago=1,
    ),
    Case(
        "reference-edge-end-missing",
        {
            "answerMeaning": _meaning(True),
            "addedEdges": [{"source": "u8", "target": "c1", "type": "qualifies"}],
        },
        days_ago=1,
    ),
    Case(
        "reference-edge-exists",
        {
            "answerMeaning": _meaning(True),
            "addedEdges": [{"source": "f1", "target": "c1", "type": "supports"}],
        },
        days_ago=1,
    ),
    Case(
        "reference-edge-added-twice",
        {
            "answerMeaning": _meaning(True),
            "addedEdges": [
                {"source": "u3", "target": "f1", "type": "qualifies"},
                {"source": "u3", "target": "f1", "type": "qualifies"},
            ],
        },
        days_ago=0,
    ),
    # The identity rule: an added unknown must not repeat an unresolved one.
    Case(
        "identity-duplicate-unknown",
        {
            "answerMeaning": _meaning(True),
            "addedNodes": [_unknown("u9", "  uncertainty about PROJECTED office  savings realism")],
        },
        days_ago=0,
    ),
    Case(
        "identity-two-added-unknowns",
        {
            "answerMeaning": _meaning(True),
            "addedNodes": [_unknown("u8", "Moving costs"), _unknown("u9", "moving  COSTS")],
        },
        model="model-y",
        days_ago=0,
    ),
    # Untrusted text: markup and a right-to-left override, shown for what they are.
    Case(
        "hostile-text",
        {
            "answerMeaning": _meaning(True, text="<script>alert(1)</script> savings"),
            "addedNodes": [_unknown("u9", "Savings \u202eeslaf\u202c realism <b>bold</b>")],
        },
        model="model-y",
        days_ago=0,
    ),
]


@transaction.atomic
def seed_demo_proposals() -> int:
    """Store the demo validations that are not stored yet; return how many were added."""
    runs = [case.run for case in CASES]
    present = set(
        ProposalValidation.objects.filter(provider=PROVIDER, run__in=runs).values_list(
            "run", flat=True
        )
    )
    now = timezone.now()
    added = 0
    for case in CASES:
        if case.run in present:
            continue
        validation = proposal_validate_and_store(
            graph=copy.deepcopy(case.graph),
            update=copy.deepcopy(case.update),
            source={"provider": PROVIDER, "model": case.model, "run": case.run},
            actor=SYSTEM,
            policy=case.policy,
        )
        if case.days_ago:
            # Spread the demo over the last days so the per-day chart has a shape; only demo
            # data is ever back-dated.
            ProposalValidation.objects.filter(pk=validation.pk).update(
                created_at=now - dt.timedelta(days=case.days_ago)
            )
        added += 1
    return added
