"""Properties of the proposal contract over generated graphs and updates (hypothesis)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from beliefs.domain.contract import (
    Severity,
    TransitionPolicy,
    ValidationResult,
    Verdict,
    validate_proposal,
)
from tests.examples import examples

pytestmark = pytest.mark.fuzz

SETTINGS = settings(
    max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
V1 = "contract.V1_declared_true_no_change"
V3 = "contract.V3_declaration_missing"
ARRAYS = ("updatedNodes", "resolvedUnknownNodeIds", "addedNodes", "addedEdges")

policies = st.sampled_from(list(TransitionPolicy))

# Arbitrary JSON, including NaN and keys that mimic the contract's own.
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=8)
    | st.sampled_from(["unknown", "resolved", "unresolved", "id", ""])
)
json_keys = st.text(max_size=6) | st.sampled_from(
    [
        "id",
        "type",
        "label",
        "status",
        "value",
        "source",
        "target",
        "nodes",
        "edges",
        "answerMeaning",
        "userSupportedMeaning",
        "structuralActionRequired",
        *ARRAYS,
    ]
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(json_keys, children, max_size=4)
    ),
    max_leaves=25,
)

# Small alphabets so that ids and labels collide: duplicates, references, identity matches.
ids = st.sampled_from(["a", "b", "c", "d", "e", "f"])
node_types = st.sampled_from(["unknown", "unknown", "claim", "fact"])
statuses = st.sampled_from(["unresolved", "resolved", "active"])
labels = st.sampled_from(["Savings realism", "  savings   REALISM", "Commute", "commute ", "Rent"])
values = st.none() | st.booleans() | st.integers(-2, 2) | st.sampled_from(["x", "y"])


@st.composite
def nodes(draw: st.DrawFn, node_id: st.SearchStrategy[str] = ids) -> dict:
    node = {"id": draw(node_id), "type": draw(node_types), "label": draw(labels)}
    if draw(st.booleans()):
        node["status"] = draw(statuses)
    if draw(st.booleans()):
        node["value"] = draw(values)
    return node


edges = st.fixed_dictionaries(
    {"source": ids, "target": ids, "type": st.sampled_from(["supports", "qualifies"])}
)
graphs = st.fixed_dictionaries(
    {"nodes": st.lists(nodes(), max_size=6), "edges": st.lists(edges, max_size=6)}
)
node_updates = st.fixed_dictionaries(
    {"id": ids},
    optional={"status": statuses | st.none(), "label": labels, "value": values, "type": node_types},
)
declarations = st.sampled_from([True, False, None, "absent"])


@st.composite
def updates(draw: st.DrawFn, declared: st.SearchStrategy[object] = declarations) -> dict:
    update = draw(
        st.fixed_dictionaries(
            {},
            optional={
                "updatedNodes": st.lists(node_updates, max_size=3),
                "resolvedUnknownNodeIds": st.lists(ids, max_size=3),
                "addedNodes": st.lists(nodes(ids | st.sampled_from(["n1", "n2"])), max_size=3),
                "addedEdges": st.lists(edges, max_size=3),
                "selectedQuestion": st.none() | st.text(max_size=5),
            },
        )
    )
    declaration = draw(declared)
    if declaration != "no answerMeaning":
        answer: dict[str, object] = {"userSupportedMeaning": "the user's answer"}
        if declaration != "absent":
            answer["structuralActionRequired"] = declaration
        update["answerMeaning"] = answer
    return update


def assert_well_formed(result: ValidationResult) -> None:
    errors = [f for f in result.findings if f.severity is Severity.ERROR]
    if errors:
        assert result.verdict is Verdict.REJECT
    elif result.findings:
        assert result.verdict is Verdict.ACCEPT
    else:
        assert result.verdict is Verdict.PASS
    data = result.to_dict()
    assert json.loads(json.dumps(data, allow_nan=False)) == data
    for finding in data["errors"] + data["warnings"]:
        assert finding["path"].startswith(("/graph", "/update"))


@SETTINGS
@given(graph=json_values, update=json_values, policy=policies)
def test_it_never_raises_on_arbitrary_json(graph: object, update: object, policy: str) -> None:
    result = validate_proposal(graph, update, policy=policy)

    assert_well_formed(result)
    if not isinstance(graph, dict) or not isinstance(update, dict):
        assert result.verdict is Verdict.REJECT
        assert result.decided_by == "schema"


@SETTINGS
@given(
    graph=graphs,
    update=st.dictionaries(st.sampled_from([*ARRAYS, "answerMeaning"]), json_values, max_size=4),
    policy=policies,
)
def test_it_never_raises_on_garbage_inside_the_contract_fields(
    graph: dict, update: dict, policy: str
) -> None:
    assert_well_formed(validate_proposal(graph, update, policy=policy))


@SETTINGS
@given(graph=graphs, update=updates(declarations | st.just("no answerMeaning")), policy=policies)
def test_it_never_raises_on_generated_proposals(graph: dict, update: dict, policy: str) -> None:
    assert_well_formed(validate_proposal(graph, update, policy=policy))


@st.composite
def meaningful_proposals(draw: st.DrawFn) -> tuple[dict, dict]:
    graph = draw(
        st.fixed_dictionaries(
            {
                "nodes": st.lists(nodes(), min_size=1, max_size=6, unique_by=lambda n: n["id"]),
                "edges": st.lists(edges, max_size=6),
            }
        )
    )
    update = draw(updates())
    kind = draw(st.sampled_from(["update", "resolve", "add node", "add edge"]))
    if kind == "update":
        node = draw(st.sampled_from(graph["nodes"]))
        changed = {"id": node["id"], "label": node["label"] + " (revised)"}
        update.setdefault("updatedNodes", []).append(changed)
    elif kind == "resolve":
        update.setdefault("resolvedUnknownNodeIds", []).append(draw(ids))
    elif kind == "add node":
        update.setdefault("addedNodes", []).append(draw(nodes()))
    else:
        update.setdefault("addedEdges", []).append(draw(edges))
    return graph, update


@SETTINGS
@given(proposal=meaningful_proposals(), policy=policies)
def test_it_never_rejects_a_meaningful_mutation_by_V1(proposal: tuple, policy: str) -> None:
    graph, update = proposal

    result = validate_proposal(graph, update, policy=policy)

    assert result.meaningful_change is True
    assert V1 not in [f.code for f in result.findings]
    assert result.decided_by != "V1"


@SETTINGS
@given(graph=graphs, update=updates(st.booleans()), policy=policies)
def test_it_never_fires_V3_when_the_declaration_is_present(
    graph: dict, update: dict, policy: str
) -> None:
    result = validate_proposal(graph, update, policy=policy)

    assert result.declared is update["answerMeaning"]["structuralActionRequired"]
    assert V3 not in [f.code for f in result.findings]
    assert result.decided_by != "V3"


@SETTINGS
@given(graph=graphs, update=updates(st.sampled_from([None, "absent"])))
def test_it_always_fires_V3_under_strict_when_the_declaration_is_missing(
    graph: dict, update: dict
) -> None:
    result = validate_proposal(graph, update, policy="strict")

    assert result.verdict is Verdict.REJECT
    assert (V3, Severity.ERROR) in [(f.code, f.severity) for f in result.findings]
