"""The proposal contract, one row per case of the seed's tables."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from beliefs.domain.contract import (
    FINDING_CODES,
    Severity,
    TransitionPolicy,
    Verdict,
    normalise_label,
    update_json_schema,
    validate_proposal,
)

ROOT = Path(__file__).resolve().parents[2]
DECLARATION = "/update/answerMeaning/structuralActionRequired"
MEANING = "uncertainty about projected office savings realism"
SAVINGS_LABEL = "Uncertainty about projected office savings realism"

# The seed's 57J.63 graph: a claim about office savings, the facts behind it and its unknowns.
GRAPH = {
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
# Case A starts from the same graph before the savings-realism unknown existed.
GRAPH_WITHOUT_SAVINGS_UNKNOWN = {
    "nodes": [n for n in GRAPH["nodes"] if n["id"] != "u1"],
    "edges": [e for e in GRAPH["edges"] if e["source"] != "u1"],
}

ABSENT = object()


def proposal(declared: object = ABSENT, meaning: object = MEANING, **fields: object) -> dict:
    answer: dict[str, object] = {"userSupportedMeaning": meaning}
    if declared is not ABSENT:
        answer["structuralActionRequired"] = declared
    return {"answerMeaning": answer, **fields}


def unknown(node_id: str, label: str, status: str | None = "unresolved") -> dict:
    node = {"id": node_id, "type": "unknown", "label": label}
    if status is not None:
        node["status"] = status
    return node


DEDICATED_UNKNOWN = unknown("u9", SAVINGS_LABEL)
NEW_UNKNOWN = unknown("u8", "Will staff accept the longer commute")
NEW_EDGE = {"source": "f1", "target": "u3", "type": "informs"}
RESOLVE_U3 = ["u3"]


@dataclass(frozen=True)
class Case:
    update: object
    verdict: Verdict
    decided_by: str | None
    findings: list[tuple[str, str]] = field(default_factory=list)  # (code, path), in order
    policy: str = "strict"
    graph: object = field(default_factory=lambda: GRAPH)


def case(case_id: str, *args: object, **kwargs: object) -> object:
    return pytest.param(Case(*args, **kwargs), id=case_id)


def both_policies(case_id: str, by_policy: dict[str, Case]) -> list[object]:
    return [pytest.param(c, id=f"{case_id}-{policy}") for policy, c in by_policy.items()]


PASS, ACCEPT, REJECT = Verdict.PASS, Verdict.ACCEPT, Verdict.REJECT
V1 = ("contract.V1_declared_true_no_change", DECLARATION)
V2 = ("contract.V2_declared_false_with_change", DECLARATION)
V3 = ("contract.V3_declaration_missing", DECLARATION)

PART_2 = [
    # Reuse/refine existing: updatedNodes names an existing node and changes status or value.
    case(
        "part2-refine-existing-value",
        proposal(True, updatedNodes=[{"id": "c1", "value": 0.4}]),
        PASS,
        None,
    ),
    case(
        "part2-refine-existing-status",
        proposal(True, updatedNodes=[{"id": "c1", "status": "disputed"}]),
        PASS,
        None,
    ),
    case(
        "part2-refine-existing-label",
        proposal(True, updatedNodes=[{"id": "u1", "label": "Office savings may be overstated"}]),
        PASS,
        None,
    ),
    # An update naming a node without changing it is not a meaningful change.
    case(
        "part2-update-that-changes-nothing-is-no-mutation",
        proposal(True, updatedNodes=[{"id": "c1", "value": 0.6, "type": "assertion"}]),
        REJECT,
        "V1",
        [V1],
    ),
    # Add new unknown: addedUnknownCount > 0.
    case(
        "part2-add-new-unknown",
        proposal(
            True,
            addedNodes=[NEW_UNKNOWN],
            addedEdges=[{"source": "u8", "target": "c1", "type": "qualifies"}],
        ),
        PASS,
        None,
    ),
    # Resolve existing: resolvedUnknownNodeIds non-empty.
    case("part2-resolve-existing", proposal(True, resolvedUnknownNodeIds=RESOLVE_U3), PASS, None),
    # Other structural mutation: any other non-empty mutation array, or addedEdges.
    case("part2-other-mutation-added-edge", proposal(True, addedEdges=[NEW_EDGE]), PASS, None),
    case(
        "part2-other-mutation-added-node",
        proposal(True, addedNodes=[{"id": "f2", "type": "fact", "label": "Moving costs 8,000"}]),
        PASS,
        None,
    ),
    # No structural change: all arrays empty, which the model must declare.
    case("part2-no-structural-change-declared", proposal(False), PASS, "V4"),
    case("part2-no-structural-change-undeclared", proposal(), REJECT, "V3", [V3]),
]

PART_6 = [
    *both_policies(
        "part6-V1-true-and-no-change",
        {p: Case(proposal(True), REJECT, "V1", [V1], policy=p) for p in ("strict", "lenient")},
    ),
    *both_policies(
        "part6-V1-true-and-empty-arrays-spelled-out",
        {
            p: Case(
                proposal(
                    True,
                    updatedNodes=[],
                    resolvedUnknownNodeIds=[],
                    addedNodes=[],
                    addedEdges=[],
                    selectedQuestion="What else?",
                ),
                REJECT,
                "V1",
                [V1],
                policy=p,
            )
            for p in ("strict", "lenient")
        },
    ),
    *both_policies(
        "part6-V2-false-with-change",
        {
            p: Case(proposal(False, addedNodes=[NEW_UNKNOWN]), ACCEPT, "V2", [V2], policy=p)
            for p in ("strict", "lenient")
        },
    ),
    *both_policies(
        "part6-V3-missing-without-change",
        {p: Case(proposal(), REJECT, "V3", [V3], policy=p) for p in ("strict", "lenient")},
    ),
    *both_policies(
        "part6-V3-missing-with-change",
        {
            "strict": Case(proposal(resolvedUnknownNodeIds=RESOLVE_U3), REJECT, "V3", [V3]),
            "lenient": Case(
                proposal(resolvedUnknownNodeIds=RESOLVE_U3), ACCEPT, "V3", [V3], policy="lenient"
            ),
        },
    ),
    *both_policies(
        "part6-V3-null-is-missing",
        {
            "strict": Case(proposal(None, addedEdges=[NEW_EDGE]), REJECT, "V3", [V3]),
            "lenient": Case(
                proposal(None, addedEdges=[NEW_EDGE]), ACCEPT, "V3", [V3], policy="lenient"
            ),
        },
    ),
    *both_policies(
        "part6-V4-false-and-no-change",
        {p: Case(proposal(False), PASS, "V4", [], policy=p) for p in ("strict", "lenient")},
    ),
    *both_policies(
        "part6-true-with-change-is-consistent",
        {
            p: Case(proposal(True, addedEdges=[NEW_EDGE]), PASS, None, [], policy=p)
            for p in ("strict", "lenient")
        },
    ),
    # Without answerMeaning there is no userSupportedMeaning, so V1-V4 do not apply.
    *both_policies(
        "part6-no-answer-meaning-no-change",
        {p: Case({}, PASS, None, [], policy=p) for p in ("strict", "lenient")},
    ),
    *both_policies(
        "part6-no-answer-meaning-with-change",
        {
            p: Case({"answerMeaning": None, "addedEdges": [NEW_EDGE]}, PASS, None, [], policy=p)
            for p in ("strict", "lenient")
        },
    ),
]

PART_7 = [
    case(
        "part7-case-A-dedicated-unknown-declared-true",
        proposal(
            True,
            addedNodes=[DEDICATED_UNKNOWN],
            addedEdges=[{"source": "u9", "target": "c1", "type": "qualifies"}],
        ),
        PASS,
        None,
        graph=GRAPH_WITHOUT_SAVINGS_UNKNOWN,
    ),
    case("part7-case-B-equivalent-exists-declared-false", proposal(False), PASS, "V4"),
    case("part7-case-B-no-mutation-declared-true", proposal(True), REJECT, "V1", [V1]),
    case("part7-case-B-undeclared", proposal(), REJECT, "V3", [V3]),
    # Declaring true and adding the dedicated unknown again breaks the identity rule.
    case(
        "part7-case-B-adds-a-duplicate-of-the-existing-unknown",
        proposal(True, addedNodes=[DEDICATED_UNKNOWN]),
        REJECT,
        "identity",
        [("identity.duplicate_unknown", "/update/addedNodes/0/label")],
    ),
]

REFERENCES = [
    case(
        "reference-updated-node-missing",
        proposal(True, updatedNodes=[{"id": "ghost", "value": 1}], addedEdges=[NEW_EDGE]),
        REJECT,
        "references",
        [("reference.unknown_node", "/update/updatedNodes/0/id")],
    ),
    case(
        "reference-updated-twice",
        proposal(True, updatedNodes=[{"id": "c1", "value": 0.1}, {"id": "c1", "value": 0.2}]),
        REJECT,
        "references",
        [("reference.duplicate_updated_id", "/update/updatedNodes/1/id")],
    ),
    case(
        "reference-resolved-node-missing",
        proposal(True, resolvedUnknownNodeIds=["u3", "ghost"]),
        REJECT,
        "references",
        [("reference.unknown_node", "/update/resolvedUnknownNodeIds/1")],
    ),
    case(
        "reference-resolved-not-unknown",
        proposal(True, resolvedUnknownNodeIds=["c1"]),
        REJECT,
        "references",
        [("reference.resolved_not_unknown", "/update/resolvedUnknownNodeIds/0")],
    ),
    case(
        "reference-resolved-already-resolved",
        proposal(True, resolvedUnknownNodeIds=["u2"]),
        REJECT,
        "references",
        [("reference.resolved_already_resolved", "/update/resolvedUnknownNodeIds/0")],
    ),
    case(
        "reference-resolved-twice-is-a-note",
        proposal(True, resolvedUnknownNodeIds=["u3", "u3"]),
        ACCEPT,
        "references",
        [("reference.duplicate_resolved_id", "/update/resolvedUnknownNodeIds/1")],
    ),
    case(
        "reference-added-id-exists",
        proposal(True, addedNodes=[{"id": "c1", "type": "claim", "label": "Another claim"}]),
        REJECT,
        "references",
        [("reference.added_id_exists", "/update/addedNodes/0/id")],
    ),
    case(
        "reference-added-id-repeated",
        proposal(True, addedNodes=[unknown("n1", "First"), unknown("n1", "Second")]),
        REJECT,
        "references",
        [("reference.duplicate_added_id", "/update/addedNodes/1/id")],
    ),
    case(
        "reference-edge-target-missing",
        proposal(
            True,
            addedNodes=[NEW_UNKNOWN],
            addedEdges=[
                NEW_EDGE,
                {"source": "u8", "target": "c1", "type": "qualifies"},
                {"source": "u8", "target": "ghost", "type": "qualifies"},
            ],
        ),
        REJECT,
        "references",
        [("reference.edge_end_missing", "/update/addedEdges/2/target")],
    ),
    case(
        "reference-edge-both-ends-missing",
        proposal(True, addedEdges=[{"source": "x", "target": "y", "type": "t"}]),
        REJECT,
        "references",
        [
            ("reference.edge_end_missing", "/update/addedEdges/0/source"),
            ("reference.edge_end_missing", "/update/addedEdges/0/target"),
        ],
    ),
    case(
        "reference-added-edge-already-in-graph",
        proposal(True, addedEdges=[{"source": "f1", "target": "c1", "type": "supports"}]),
        REJECT,
        "references",
        [("reference.added_edge_exists", "/update/addedEdges/0")],
    ),
    case(
        "reference-added-edge-repeated",
        proposal(True, addedEdges=[NEW_EDGE, NEW_EDGE]),
        REJECT,
        "references",
        [("reference.duplicate_added_edge", "/update/addedEdges/1")],
    ),
    case(
        "reference-graph-duplicate-node-id",
        proposal(False),
        REJECT,
        "references",
        [("reference.graph_duplicate_node_id", "/graph/nodes/5/id")],
        graph={
            "nodes": [*GRAPH["nodes"], {"id": "c1", "type": "claim", "label": "Again"}],
            "edges": GRAPH["edges"],
        },
    ),
    # Errors of several stages are all reported; the earliest stage decides.
    case(
        "reference-errors-and-V1-reported-together",
        proposal(True, updatedNodes=[{"id": "ghost", "value": 1}]),
        REJECT,
        "references",
        [("reference.unknown_node", "/update/updatedNodes/0/id"), V1],
    ),
]

IDENTITY = [
    case(
        "identity-existing-unresolved-unknown-case-and-space-insensitive",
        proposal(
            True,
            addedNodes=[unknown("u9", "  uncertainty about PROJECTED\toffice   savings realism ")],
        ),
        REJECT,
        "identity",
        [("identity.duplicate_unknown", "/update/addedNodes/0/label")],
    ),
    case(
        "identity-two-added-unknowns-one-label",
        proposal(
            True, addedNodes=[unknown("n1", "Staff commute"), unknown("n2", "staff   COMMUTE")]
        ),
        REJECT,
        "identity",
        [("identity.duplicate_added_unknown", "/update/addedNodes/1/label")],
    ),
    case(
        "identity-resolved-unknown-may-be-added-again",
        proposal(True, addedNodes=[unknown("n1", "can the lease end early")]),
        PASS,
        None,
    ),
    case(
        "identity-no-synonyms-or-rewording",
        proposal(True, addedNodes=[unknown("n1", "Realism of the projected office savings")]),
        PASS,
        None,
    ),
    case(
        "identity-applies-only-to-unknowns",
        proposal(True, addedNodes=[{"id": "f2", "type": "fact", "label": SAVINGS_LABEL}]),
        PASS,
        None,
    ),
]

SCHEMA = [
    case(
        "schema-unknown-field",
        proposal(True, addedEdges=[NEW_EDGE], confidence=0.9),
        REJECT,
        "schema",
        [("schema.extra_forbidden", "/update/confidence")],
    ),
    case(
        "schema-option-B-enum-field-is-not-the-contract",
        {
            "answerMeaning": {
                "userSupportedMeaning": MEANING,
                "structuralActionRequired": False,
                "semanticAction": "no_change_needed",
            }
        },
        REJECT,
        "schema",
        [("schema.extra_forbidden", "/update/answerMeaning/semanticAction")],
    ),
    case(
        "schema-snake-case-field-is-unknown",
        proposal(True, added_edges=[NEW_EDGE]),
        REJECT,
        "schema",
        [("schema.extra_forbidden", "/update/added_edges")],
    ),
    case(
        "schema-unknown-field-in-graph",
        proposal(False),
        REJECT,
        "schema",
        [("schema.extra_forbidden", "/graph/edges/0/weight")],
        graph={"nodes": GRAPH["nodes"], "edges": [{**GRAPH["edges"][0], "weight": 2}]},
    ),
    case(
        "schema-declaration-as-string",
        proposal("true"),
        REJECT,
        "schema",
        [("schema.wrong_type", DECLARATION)],
    ),
    case(
        "schema-declaration-as-number",
        proposal(1),
        REJECT,
        "schema",
        [("schema.wrong_type", DECLARATION)],
    ),
    case(
        "schema-array-as-object",
        proposal(True, addedEdges={"0": NEW_EDGE}),
        REJECT,
        "schema",
        [("schema.wrong_type", "/update/addedEdges")],
    ),
    case(
        "schema-null-array",
        proposal(True, addedNodes=None, addedEdges=[NEW_EDGE]),
        REJECT,
        "schema",
        [("schema.wrong_type", "/update/addedNodes")],
    ),
    case(
        "schema-value-not-a-scalar",
        proposal(True, updatedNodes=[{"id": "c1", "value": {"amount": 1}}]),
        REJECT,
        "schema",
        [("schema.wrong_type", "/update/updatedNodes/0/value")],
    ),
    case(
        "schema-edge-end-not-a-string",
        proposal(True, addedEdges=[{"source": "f1", "target": 3, "type": "t"}]),
        REJECT,
        "schema",
        [("schema.wrong_type", "/update/addedEdges/0/target")],
    ),
    case(
        "schema-empty-user-supported-meaning",
        proposal(True, meaning=""),
        REJECT,
        "schema",
        [("schema.empty_string", "/update/answerMeaning/userSupportedMeaning")],
    ),
    case(
        "schema-blank-user-supported-meaning",
        proposal(False, meaning=" \n\t"),
        REJECT,
        "schema",
        [("schema.empty_string", "/update/answerMeaning/userSupportedMeaning")],
    ),
    case(
        "schema-empty-id",
        proposal(True, resolvedUnknownNodeIds=[""]),
        REJECT,
        "schema",
        [("schema.empty_string", "/update/resolvedUnknownNodeIds/0")],
    ),
    case(
        "schema-missing-user-supported-meaning",
        {"answerMeaning": {"structuralActionRequired": True}, "addedEdges": [NEW_EDGE]},
        REJECT,
        "schema",
        [("schema.missing_field", "/update/answerMeaning/userSupportedMeaning")],
    ),
    case(
        "schema-missing-edge-target",
        proposal(True, addedEdges=[{"source": "f1", "type": "t"}]),
        REJECT,
        "schema",
        [("schema.missing_field", "/update/addedEdges/0/target")],
    ),
    case(
        "schema-bad-enum-added-unknown-status",
        proposal(True, addedNodes=[unknown("n1", "Staff commute", status="open")]),
        REJECT,
        "schema",
        [("schema.bad_enum", "/update/addedNodes/0/status")],
    ),
    case(
        "schema-bad-enum-added-unknown-without-status",
        proposal(True, addedNodes=[unknown("n1", "Staff commute", status=None)]),
        REJECT,
        "schema",
        [("schema.bad_enum", "/update/addedNodes/0/status")],
    ),
    case(
        "schema-bad-enum-updated-unknown-status",
        proposal(True, updatedNodes=[{"id": "u1", "status": "closed"}]),
        REJECT,
        "schema",
        [("schema.bad_enum", "/update/updatedNodes/0/status")],
    ),
    case(
        "schema-bad-enum-graph-unknown-status",
        proposal(False),
        REJECT,
        "schema",
        [("schema.bad_enum", "/graph/nodes/0/status")],
        graph={"nodes": [unknown("u1", "x", status="maybe")], "edges": []},
    ),
    case(
        "schema-several-errors-all-reported",
        {
            "answerMeaning": {"userSupportedMeaning": "", "structuralActionRequired": "yes"},
            "addedNodes": [{"id": "n1", "type": "unknown"}],
            "extra": 1,
        },
        REJECT,
        "schema",
        [
            ("schema.empty_string", "/update/answerMeaning/userSupportedMeaning"),
            ("schema.wrong_type", DECLARATION),
            ("schema.missing_field", "/update/addedNodes/0/label"),
            ("schema.extra_forbidden", "/update/extra"),
        ],
    ),
    case(
        "schema-update-not-an-object",
        ["not", "an", "object"],
        REJECT,
        "schema",
        [("schema.wrong_type", "/update")],
    ),
    case("schema-update-null", None, REJECT, "schema", [("schema.wrong_type", "/update")]),
    case(
        "schema-graph-not-an-object",
        proposal(False),
        REJECT,
        "schema",
        [("schema.wrong_type", "/graph")],
        graph="nodes: []",
    ),
    case(
        "schema-graph-node-without-id",
        proposal(False),
        REJECT,
        "schema",
        [("schema.missing_field", "/graph/nodes/0/id")],
        graph={"nodes": [{"type": "claim", "label": "x"}], "edges": []},
    ),
    case(
        "schema-pointer-escapes-slash-and-tilde",
        proposal(False, **{"a/b~c": 1}),
        REJECT,
        "schema",
        [("schema.extra_forbidden", "/update/a~1b~0c")],
    ),
]

ALL_CASES = PART_2 + PART_6 + PART_7 + REFERENCES + IDENTITY + SCHEMA


@pytest.mark.parametrize("c", ALL_CASES)
def test_it_judges_each_case_of_the_contract(c: Case) -> None:
    result = validate_proposal(copy.deepcopy(c.graph), copy.deepcopy(c.update), policy=c.policy)

    assert [(f.code, f.path) for f in result.findings] == c.findings
    assert result.verdict is c.verdict
    assert result.decided_by == c.decided_by
    assert result.policy == c.policy


def test_it_has_a_case_for_every_finding_code() -> None:
    covered = {code for param in ALL_CASES for code, _ in param.values[0].findings}

    # schema.invalid is the fallback for pydantic errors the contract's models cannot produce.
    assert covered == set(FINDING_CODES) - {"schema.invalid"}


def test_it_gives_every_finding_a_message() -> None:
    for param in ALL_CASES:
        c = param.values[0]
        result = validate_proposal(c.graph, c.update, policy=c.policy)
        for finding in result.findings:
            assert finding.code in FINDING_CODES
            assert len(finding.message) > 10


def test_it_reports_declared_versus_actual() -> None:
    update = proposal(
        False,
        updatedNodes=[{"id": "c1", "value": 0.5}, {"id": "f1", "value": 12000}],
        resolvedUnknownNodeIds=["u3"],
        addedNodes=[NEW_UNKNOWN],
        addedEdges=[NEW_EDGE, {"source": "u8", "target": "c1", "type": "qualifies"}],
    )

    result = validate_proposal(GRAPH, update, policy=TransitionPolicy.LENIENT)

    assert result.to_dict() == {
        "verdict": "ACCEPT",
        "decided_by": "V2",
        "policy": "lenient",
        "declared": False,
        "meaningful_change": True,
        "counts": {
            "updatedNodes": 2,
            "updatedNodesChanging": 1,
            "resolvedUnknownNodeIds": 1,
            "addedNodes": 1,
            "addedEdges": 2,
        },
        "errors": [],
        "warnings": [
            {
                "code": "contract.V2_declared_false_with_change",
                "message": result.warnings[0].message,
                "path": DECLARATION,
            }
        ],
    }
    assert result.warnings[0].severity is Severity.WARNING
    assert json.loads(json.dumps(result.to_dict())) == result.to_dict()


def test_it_reads_what_it_can_of_a_malformed_update() -> None:
    update = proposal(True, addedNodes=[NEW_UNKNOWN, {"id": 7}], addedEdges="none")

    result = validate_proposal(GRAPH, update)

    assert result.verdict is Verdict.REJECT
    assert result.declared is True
    assert result.meaningful_change is None
    assert result.counts.to_dict() == {
        "updatedNodes": 0,
        "updatedNodesChanging": None,
        "resolvedUnknownNodeIds": 0,
        "addedNodes": 2,
        "addedEdges": 0,
    }
    assert result.to_dict()["errors"][0]["message"] == (
        "update.addedNodes[1].id must be a string, not a number."
    )


def test_it_reports_graph_and_update_schema_errors_together() -> None:
    result = validate_proposal({"nodes": [{}]}, {"bogus": True})

    assert [(f.code, f.path) for f in result.findings] == [
        ("schema.missing_field", "/graph/nodes/0/id"),
        ("schema.missing_field", "/graph/nodes/0/type"),
        ("schema.missing_field", "/graph/nodes/0/label"),
        ("schema.extra_forbidden", "/update/bogus"),
    ]


@pytest.mark.parametrize(
    ("old", "new", "changes"),
    [
        (1, 1, False),
        (1, 1.0, False),
        (1, True, True),
        (0, False, True),
        (None, None, False),
        (1, None, True),
        ("a", "a", False),
        ("1", 1, True),
    ],
)
def test_it_compares_values_by_json_type(old: object, new: object, changes: bool) -> None:
    graph = {"nodes": [{"id": "n", "type": "fact", "label": "n", "value": old}]}

    result = validate_proposal(graph, {"updatedNodes": [{"id": "n", "value": new}]})

    assert result.meaningful_change is changes


def test_it_treats_absent_or_null_fields_of_an_update_as_unchanged() -> None:
    update = {"updatedNodes": [{"id": "c1", "status": None, "label": None, "type": None}]}

    result = validate_proposal(GRAPH, update)

    assert result.meaningful_change is False
    assert result.counts.updated_nodes_changing == 0


def test_it_normalises_labels_by_case_and_whitespace_only() -> None:
    assert normalise_label("  Office\t SAVINGS\n realism ") == "office savings realism"
    assert normalise_label("Straße") == normalise_label("STRASSE")
    assert normalise_label("office-savings") != normalise_label("office savings")


@pytest.mark.parametrize("policy", ["", "STRICT", "relaxed", None, 1])
def test_it_refuses_an_unknown_policy(policy: object) -> None:
    with pytest.raises(ValueError, match="Unknown transition policy"):
        validate_proposal(GRAPH, proposal(False), policy=policy)  # type: ignore[arg-type]


def test_it_serves_the_update_json_schema() -> None:
    schema = update_json_schema()

    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert set(schema["properties"]) == {
        "answerMeaning",
        "updatedNodes",
        "resolvedUnknownNodeIds",
        "addedNodes",
        "addedEdges",
        "selectedQuestion",
    }
    answer = schema["$defs"]["AnswerMeaning"]
    assert answer["required"] == ["userSupportedMeaning"]
    assert answer["properties"]["structuralActionRequired"]["anyOf"] == [
        {"type": "boolean"},
        {"type": "null"},
    ]
    assert all(d["additionalProperties"] is False for d in schema["$defs"].values())
    json.dumps(schema)


def test_it_does_not_change_its_input() -> None:
    graph, update = copy.deepcopy(GRAPH), proposal(True, addedNodes=[NEW_UNKNOWN])

    validate_proposal(graph, update)

    assert graph == GRAPH
    assert update == proposal(True, addedNodes=[NEW_UNKNOWN])


def test_it_loads_no_django_module() -> None:
    code = (
        "import sys, beliefs.domain.contract; "
        "print(sorted(name for name in sys.modules if name.startswith('django')))"
    )

    completed = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )

    assert completed.stdout.strip() == "[]"
