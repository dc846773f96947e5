"""The semantic-to-mutation proposal contract.

A runtime hands us a proposal: ``graph`` (the graph before) and ``update`` (what a model proposed
after reading a user's answer). ``validate_proposal`` checks, in this order of precedence:

- schema: the shape of both, unknown fields refused (pydantic, strict: no coercion of ``"true"``);
- references: updated and resolved ids exist, resolved ids are unresolved unknowns, added ids
  are new and unique, added edges join nodes that exist or are added and are not already there;
- identity: an added unknown whose normalised label equals an existing unresolved
  unknown's label is refused, the model should reuse that node; likewise two added unknowns with
  one normalised label;
- contract: ``answerMeaning.structuralActionRequired`` is compared with the proposal's shape
  (the contract's invariants: V1, a declared change must change the graph; V2, an undeclared
  change is accepted with a note; V3, a missing declaration costs what the policy says; V4,
  declared false with no meaningful change passes), only when ``answerMeaning`` is present.

Nothing here reads English. Labels are compared only after case and whitespace normalisation;
the declaration is a boolean compared with the mutation arrays.

Decisions the design left open:
- ``supportCategory`` and ``resolutionGuidance`` are open strings: the seed elides their enums,
  and refusing values we never agreed on would reject honest proposals.
- ``selectedQuestion`` is a string or null.
- A node ``value`` is a JSON scalar (string, finite number, boolean, null).
- The status of a node of type ``unknown`` must be ``unresolved`` or ``resolved`` (a missing
  status included); other node types take any status string.
- In ``updatedNodes``, an absent or null ``status``, ``label`` or ``type`` means "unchanged";
  ``value`` may be set to null explicitly, so only its absence means "unchanged".
- Missing mutation arrays are empty; a null array is a type error, as the served schema says.
- Adding an edge that already exists is an error: otherwise a no-op could pass for a mutation.

Pure Python (pydantic and the standard library), so it runs and is tested without Django.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    ValidationError,
    WithJsonSchema,
)
from pydantic.alias_generators import to_camel
from pydantic_core import ErrorDetails, PydanticCustomError

__all__ = [
    "FINDING_CODES",
    "UNKNOWN_STATUSES",
    "UNKNOWN_TYPE",
    "AnswerMeaning",
    "Edge",
    "Finding",
    "Graph",
    "MutationCounts",
    "Node",
    "NodeUpdate",
    "Severity",
    "TransitionPolicy",
    "Update",
    "ValidationResult",
    "Verdict",
    "normalise_label",
    "update_json_schema",
    "validate_proposal",
]


class TransitionPolicy(enum.StrEnum):
    """What a missing ``structuralActionRequired`` declaration costs."""

    STRICT = "strict"  # missing declaration with userSupportedMeaning: always REJECT
    LENIENT = "lenient"  # REJECT only when there is no meaningful change, else a warning


class Verdict(enum.StrEnum):
    PASS = "PASS"  # no findings at all
    ACCEPT = "ACCEPT"  # warnings only: passed with notes
    REJECT = "REJECT"  # at least one error


class Severity(enum.StrEnum):
    ERROR = "error"
    WARNING = "warning"


UNKNOWN_TYPE = "unknown"
UNKNOWN_STATUSES = ("unresolved", "resolved")

# Every code a finding can carry, with its meaning. Codes are stable: stored results, filters
# and statistics use them.
FINDING_CODES: dict[str, str] = {
    "schema.extra_forbidden": "A field that is not part of the contract.",
    "schema.missing_field": "A required field is absent.",
    "schema.wrong_type": 'A value of the wrong JSON type (no coercion: "true" is not true).',
    "schema.empty_string": "A string that must not be empty is empty or only whitespace.",
    "schema.bad_enum": "An unknown's status is neither 'unresolved' nor 'resolved'.",
    "schema.invalid": "Any other schema violation.",
    "reference.graph_duplicate_node_id": "Two nodes of the graph share an id.",
    "reference.unknown_node": "An updated or resolved id names no node of the graph.",
    "reference.duplicate_updated_id": "Two updatedNodes entries name the same node.",
    "reference.resolved_not_unknown": "A resolved id names a node that is not an unknown.",
    "reference.resolved_already_resolved": "A resolved id names an unknown already resolved.",
    "reference.duplicate_resolved_id": "An id listed twice in resolvedUnknownNodeIds (warning).",
    "reference.added_id_exists": "An added node reuses the id of an existing node.",
    "reference.duplicate_added_id": "Two added nodes share an id.",
    "reference.edge_end_missing": "An added edge's end is neither in the graph nor added.",
    "reference.added_edge_exists": "An added edge (source, target, type) is already in the graph.",
    "reference.duplicate_added_edge": "The same edge is added twice.",
    "identity.duplicate_unknown": (
        "An added unknown has the normalised label of an existing unresolved unknown: reuse it."
    ),
    "identity.duplicate_added_unknown": "Two added unknowns share a normalised label.",
    "contract.V1_declared_true_no_change": (
        "V1: structuralActionRequired is true but the proposal makes no meaningful change."
    ),
    "contract.V2_declared_false_with_change": (
        "V2: structuralActionRequired is false but the proposal changes the graph (warning)."
    ),
    "contract.V3_declaration_missing": (
        "V3: userSupportedMeaning is present but structuralActionRequired is missing "
        "(error under strict; under lenient an error without change, a warning with change)."
    ),
}


def normalise_label(label: str) -> str:
    """The identity rule's key: stripped, whitespace runs collapsed to one space, casefolded."""
    return " ".join(label.split()).casefold()


# -- Schema -----------------------------------------------------------------------------------


def _alias_title(name: str, info: object) -> str:
    return to_camel(name)  # the schema's titles name fields as the JSON does


class _Contract(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        frozen=True,
        alias_generator=to_camel,
        field_title_generator=_alias_title,
    )


def _not_blank(text: str) -> str:
    if not text.strip():
        raise PydanticCustomError("blank_string", "String should not be only whitespace")
    return text


def _json_scalar(value: object) -> object:
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    raise PydanticCustomError(
        "scalar_type", "Input should be a string, a finite number, a boolean or null"
    )


Identifier = Annotated[str, Field(min_length=1)]
Text = Annotated[str, Field(min_length=1), AfterValidator(_not_blank)]
NodeValue = Annotated[
    Any,
    PlainValidator(_json_scalar),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string"},
                {"type": "number"},
                {"type": "boolean"},
                {"type": "null"},
            ]
        }
    ),
]


class Node(_Contract):
    id: Identifier
    type: Identifier = Field(description="Node type; 'unknown' marks an open uncertainty.")
    label: str
    status: str | None = Field(
        default=None,
        description="For nodes of type 'unknown': 'unresolved' or 'resolved' (required).",
    )
    value: NodeValue = None


class NodeUpdate(_Contract):
    id: Identifier = Field(description="Id of an existing node of the graph.")
    status: str | None = Field(default=None, description="New status; absent or null: unchanged.")
    value: NodeValue = Field(default=None, description="New value; absent: unchanged.")
    label: str | None = Field(default=None, description="New label; absent or null: unchanged.")
    type: Identifier | None = Field(
        default=None, description="New type; absent or null: unchanged."
    )


class Edge(_Contract):
    source: Identifier
    target: Identifier
    type: Identifier


class AnswerMeaning(_Contract):
    user_supported_meaning: Text
    possible_inference: str | None = None
    support_category: str | None = Field(default=None, description="Open string.")
    resolution_guidance: str | None = Field(default=None, description="Open string.")
    structural_action_required: bool | None = Field(
        default=None,
        description=(
            "true if the answer requires a graph mutation; false if it requires none (for "
            "example, an equivalent unresolved unknown already exists). Required whenever "
            "userSupportedMeaning is present."
        ),
    )


class Update(_Contract):
    answer_meaning: AnswerMeaning | None = None
    updated_nodes: list[NodeUpdate] = Field(default_factory=list)
    resolved_unknown_node_ids: list[Identifier] = Field(default_factory=list)
    added_nodes: list[Node] = Field(default_factory=list)
    added_edges: list[Edge] = Field(default_factory=list)
    selected_question: str | None = None


class Graph(_Contract):
    nodes: list[Node] = Field(default_factory=list)
    edges: list[Edge] = Field(default_factory=list)


def update_json_schema() -> dict[str, Any]:
    """The JSON Schema of ``update``, fit to hand a model as its structured-output schema."""
    return Update.model_json_schema(by_alias=True)


# -- Results ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    code: str
    severity: Severity
    message: str
    path: str  # JSON pointer into the proposal: /update/addedEdges/2/target

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message, "path": self.path}


@dataclass(frozen=True)
class MutationCounts:
    """Size of each mutation array, for the declared-versus-actual table."""

    updated_nodes: int = 0
    updated_nodes_changing: int | None = 0  # entries that really change a node; None: unparsed
    resolved_unknown_node_ids: int = 0
    added_nodes: int = 0
    added_edges: int = 0

    def to_dict(self) -> dict[str, int | None]:
        return {
            "updatedNodes": self.updated_nodes,
            "updatedNodesChanging": self.updated_nodes_changing,
            "resolvedUnknownNodeIds": self.resolved_unknown_node_ids,
            "addedNodes": self.added_nodes,
            "addedEdges": self.added_edges,
        }


@dataclass(frozen=True)
class ValidationResult:
    verdict: Verdict
    findings: tuple[Finding, ...]
    declared: bool | None  # answerMeaning.structuralActionRequired as sent
    meaningful_change: bool | None  # None when the proposal could not be parsed
    decided_by: str | None  # "schema", "references", "identity", "V1".."V4" or None
    policy: TransitionPolicy
    counts: MutationCounts

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.ERROR]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.WARNING]

    @property
    def codes(self) -> list[str]:
        return [f.code for f in self.findings]

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict.value,
            "decided_by": self.decided_by,
            "policy": self.policy.value,
            "declared": self.declared,
            "meaningful_change": self.meaningful_change,
            "counts": self.counts.to_dict(),
            "errors": [f.to_dict() for f in self.errors],
            "warnings": [f.to_dict() for f in self.warnings],
        }


# -- Schema findings --------------------------------------------------------------------------

_EXPECTED = {
    "string_type": "a string",
    "bool_type": "a boolean (true or false)",
    "int_type": "an integer",
    "float_type": "a number",
    "list_type": "an array",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "dict_type": "an object",
    "scalar_type": "a string, a finite number, a boolean or null",
    "invalid_key": "an object with string keys",
}


def _pointer(root: str, loc: tuple[object, ...]) -> str:
    return root + "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in loc)


def _where(root: str, loc: tuple[object, ...]) -> str:
    """A reader's name for a location: ``addedEdges[2].target``."""
    text = root
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _schema_finding(root: str, error: ErrorDetails) -> Finding:
    kind = error["type"]
    loc = tuple(error["loc"])
    path = _pointer("/" + root, loc)
    where = _where(root, loc)
    name = str(loc[-1]) if loc else root
    if kind == "extra_forbidden":
        code = "schema.extra_forbidden"
        message = f"Unknown field '{name}' in {_where(root, loc[:-1])}: not part of the contract."
    elif kind == "missing":
        code = "schema.missing_field"
        message = f"Required field '{name}' is missing from {_where(root, loc[:-1])}."
    elif kind in ("string_too_short", "blank_string"):
        code = "schema.empty_string"
        message = f"{where} must not be empty."
    elif kind in ("literal_error", "enum"):
        code = "schema.bad_enum"
        message = f"{where}: {error['msg']}."
    elif kind in _EXPECTED:
        code = "schema.wrong_type"
        message = f"{where} must be {_EXPECTED[kind]}, not {_json_type(error.get('input'))}."
    else:
        code = "schema.invalid"
        message = f"{where} is invalid: {error['msg']}."
    return Finding(code, Severity.ERROR, message, path)


_M = TypeVar("_M", bound=BaseModel)


def _parse(model: type[_M], data: object, root: str) -> tuple[_M | None, list[Finding]]:
    try:
        return model.model_validate(data), []
    except ValidationError as exc:
        return None, [_schema_finding(root, e) for e in exc.errors(include_url=False)]


# -- Checks -----------------------------------------------------------------------------------


def _same_value(a: object, b: object) -> bool:
    # JSON true is not 1, but 1 is 1.0.
    return isinstance(a, bool) == isinstance(b, bool) and a == b


def _changes(entry: NodeUpdate, node: Node) -> bool:
    return (
        (entry.status is not None and entry.status != node.status)
        or (entry.label is not None and entry.label != node.label)
        or ("value" in entry.model_fields_set and not _same_value(entry.value, node.value))
    )


def _bad_status(status: str | None, path: str, whose: str) -> Finding:
    shown = "missing" if status is None else repr(status)
    return Finding(
        "schema.bad_enum",
        Severity.ERROR,
        f"The status of {whose} must be 'unresolved' or 'resolved', not {shown}.",
        path,
    )


class _Checker:
    """The reference, identity and contract checks of one parsed proposal."""

    def __init__(self, graph: Graph, update: Update, policy: TransitionPolicy) -> None:
        self.graph = graph
        self.update = update
        self.policy = policy
        self.findings: list[Finding] = []
        self.nodes: dict[str, Node] = {}
        self.added_ids: set[str] = set()
        self.changing_updates = 0
        self.invariant: str | None = None

    def error(self, code: str, message: str, path: str) -> None:
        self.findings.append(Finding(code, Severity.ERROR, message, path))

    def warning(self, code: str, message: str, path: str) -> None:
        self.findings.append(Finding(code, Severity.WARNING, message, path))

    def run(self) -> None:
        self.check_graph()
        self.check_updated_nodes()
        self.check_resolved_ids()
        self.check_added_nodes()
        self.check_added_edges()
        self.check_contract()

    @property
    def meaningful_change(self) -> bool:
        u = self.update
        return bool(
            self.changing_updates or u.resolved_unknown_node_ids or u.added_nodes or u.added_edges
        )

    def check_graph(self) -> None:
        for i, node in enumerate(self.graph.nodes):
            if node.id in self.nodes:
                self.error(
                    "reference.graph_duplicate_node_id",
                    f"The graph holds two nodes with id '{node.id}'.",
                    f"/graph/nodes/{i}/id",
                )
                continue
            self.nodes[node.id] = node
            if node.type == UNKNOWN_TYPE and node.status not in UNKNOWN_STATUSES:
                self.findings.append(
                    _bad_status(node.status, f"/graph/nodes/{i}/status", f"unknown '{node.id}'")
                )

    def check_updated_nodes(self) -> None:
        seen: set[str] = set()
        for i, entry in enumerate(self.update.updated_nodes):
            path = f"/update/updatedNodes/{i}"
            node = self.nodes.get(entry.id)
            if node is None:
                self.error(
                    "reference.unknown_node",
                    f"updatedNodes[{i}] names node '{entry.id}', which is not in the graph.",
                    f"{path}/id",
                )
                continue
            if entry.id in seen:
                self.error(
                    "reference.duplicate_updated_id",
                    f"updatedNodes[{i}] updates node '{entry.id}' a second time.",
                    f"{path}/id",
                )
            seen.add(entry.id)
            if _changes(entry, node):
                self.changing_updates += 1
            new_type = entry.type if entry.type is not None else node.type
            new_status = entry.status if entry.status is not None else node.status
            if new_type == UNKNOWN_TYPE and new_status not in UNKNOWN_STATUSES:
                self.findings.append(
                    _bad_status(new_status, f"{path}/status", f"unknown '{entry.id}'")
                )

    def check_resolved_ids(self) -> None:
        seen: set[str] = set()
        for i, node_id in enumerate(self.update.resolved_unknown_node_ids):
            path = f"/update/resolvedUnknownNodeIds/{i}"
            if node_id in seen:
                self.warning(
                    "reference.duplicate_resolved_id",
                    f"resolvedUnknownNodeIds lists '{node_id}' more than once.",
                    path,
                )
                continue
            seen.add(node_id)
            node = self.nodes.get(node_id)
            if node is None:
                self.error(
                    "reference.unknown_node",
                    f"resolvedUnknownNodeIds[{i}] names node '{node_id}', "
                    "which is not in the graph.",
                    path,
                )
            elif node.type != UNKNOWN_TYPE:
                self.error(
                    "reference.resolved_not_unknown",
                    f"Node '{node_id}' is of type '{node.type}', not an unknown: "
                    "only unknowns can be resolved.",
                    path,
                )
            elif node.status == "resolved":
                self.error(
                    "reference.resolved_already_resolved",
                    f"Unknown '{node_id}' is already resolved.",
                    path,
                )

    def check_added_nodes(self) -> None:
        # The identity rule: existing unresolved unknowns by normalised label.
        unresolved: dict[str, Node] = {}
        for node in self.nodes.values():
            if node.type == UNKNOWN_TYPE and node.status == "unresolved":
                unresolved.setdefault(normalise_label(node.label), node)
        added_unknowns: dict[str, int] = {}
        for i, node in enumerate(self.update.added_nodes):
            path = f"/update/addedNodes/{i}"
            if node.id in self.nodes:
                self.error(
                    "reference.added_id_exists",
                    f"addedNodes[{i}] has id '{node.id}', which a node of the graph already has.",
                    f"{path}/id",
                )
            elif node.id in self.added_ids:
                self.error(
                    "reference.duplicate_added_id",
                    f"addedNodes[{i}] repeats the id '{node.id}' of an earlier added node.",
                    f"{path}/id",
                )
            self.added_ids.add(node.id)
            if node.type != UNKNOWN_TYPE:
                continue
            if node.status not in UNKNOWN_STATUSES:
                self.findings.append(
                    _bad_status(node.status, f"{path}/status", f"added unknown '{node.id}'")
                )
            key = normalise_label(node.label)
            existing = unresolved.get(key)
            if existing is not None:
                self.error(
                    "identity.duplicate_unknown",
                    f"Added unknown '{node.id}' repeats the label of unresolved unknown "
                    f"'{existing.id}' ({existing.label!r}): reuse or refine '{existing.id}' "
                    "instead of adding a duplicate.",
                    f"{path}/label",
                )
            elif key in added_unknowns:
                self.error(
                    "identity.duplicate_added_unknown",
                    f"Added unknown '{node.id}' repeats the label of addedNodes"
                    f"[{added_unknowns[key]}]: add one unknown per uncertainty.",
                    f"{path}/label",
                )
            else:
                added_unknowns[key] = i

    def check_added_edges(self) -> None:
        existing = {(e.source, e.target, e.type) for e in self.graph.edges}
        seen: set[tuple[str, str, str]] = set()
        for i, edge in enumerate(self.update.added_edges):
            path = f"/update/addedEdges/{i}"
            for end in ("source", "target"):
                node_id = getattr(edge, end)
                if node_id not in self.nodes and node_id not in self.added_ids:
                    self.error(
                        "reference.edge_end_missing",
                        f"addedEdges[{i}].{end} is '{node_id}', which is neither a node of "
                        "the graph nor an added node.",
                        f"{path}/{end}",
                    )
            key = (edge.source, edge.target, edge.type)
            if key in existing:
                self.error(
                    "reference.added_edge_exists",
                    f"addedEdges[{i}] ({edge.source} -{edge.type}-> {edge.target}) is already "
                    "in the graph: adding it changes nothing.",
                    path,
                )
            elif key in seen:
                self.error(
                    "reference.duplicate_added_edge",
                    f"addedEdges[{i}] repeats an earlier added edge.",
                    path,
                )
            seen.add(key)

    def check_contract(self) -> None:
        meaning = self.update.answer_meaning
        if meaning is None:
            return  # no userSupportedMeaning: V1-V4 do not apply
        path = "/update/answerMeaning/structuralActionRequired"
        declared = meaning.structural_action_required
        changed = self.meaningful_change
        if declared is True and not changed:
            self.invariant = "V1"
            self.error(
                "contract.V1_declared_true_no_change",
                "structuralActionRequired is true, but the proposal makes no meaningful change: "
                "no node is changed, added or resolved and no edge is added.",
                path,
            )
        elif declared is False and changed:
            self.invariant = "V2"
            self.warning(
                "contract.V2_declared_false_with_change",
                "structuralActionRequired is false, but the proposal changes the graph; "
                "accepted, the model did more than it declared.",
                path,
            )
        elif declared is False:
            self.invariant = "V4"
        elif declared is None:
            self.invariant = "V3"
            message = (
                "userSupportedMeaning is present but structuralActionRequired is missing, "
                "so the proposal's intent cannot be checked"
            )
            if self.policy is TransitionPolicy.LENIENT and changed:
                self.warning(
                    "contract.V3_declaration_missing",
                    f"{message}; accepted under the lenient policy because the proposal "
                    "changes the graph.",
                    path,
                )
            else:
                self.error(
                    "contract.V3_declaration_missing",
                    f"{message} ({self.policy.value} policy).",
                    path,
                )


# -- Entry point ------------------------------------------------------------------------------

_STAGE_RANK = {"schema": 0, "reference": 1, "identity": 2, "contract": 3}
_STAGE_NAME = {"schema": "schema", "reference": "references", "identity": "identity"}


def _stage(code: str) -> str:
    prefix, _, rest = code.partition(".")
    return _STAGE_NAME.get(prefix) or rest[:2]  # contract.V1_... -> "V1"


def _raw_counts(update: object) -> MutationCounts:
    """Array sizes of an update that failed the schema, as far as they can be read."""
    if not isinstance(update, dict):
        return MutationCounts(updated_nodes_changing=None)

    def size(key: str) -> int:
        value = update.get(key)
        return len(value) if isinstance(value, list) else 0

    return MutationCounts(
        updated_nodes=size("updatedNodes"),
        updated_nodes_changing=None,
        resolved_unknown_node_ids=size("resolvedUnknownNodeIds"),
        added_nodes=size("addedNodes"),
        added_edges=size("addedEdges"),
    )


def _raw_declared(update: object) -> bool | None:
    meaning = update.get("answerMeaning") if isinstance(update, dict) else None
    declared = meaning.get("structuralActionRequired") if isinstance(meaning, dict) else None
    return declared if isinstance(declared, bool) else None


def _verdict(findings: list[Finding]) -> Verdict:
    if any(f.severity is Severity.ERROR for f in findings):
        return Verdict.REJECT
    return Verdict.ACCEPT if findings else Verdict.PASS


def validate_proposal(
    graph: object, update: object, *, policy: str = TransitionPolicy.STRICT
) -> ValidationResult:
    """Judge a proposal given as JSON-like data (what ``json.loads`` returns).

    Never raises for any ``graph`` or ``update``: malformed input is a REJECT with schema
    findings. An unknown ``policy`` is a programming error and raises ``ValueError``.
    """
    try:
        transition = TransitionPolicy(policy)
    except (ValueError, TypeError):
        raise ValueError(
            f"Unknown transition policy {policy!r}; expected one of "
            f"{', '.join(p.value for p in TransitionPolicy)}."
        ) from None

    graph_model, graph_findings = _parse(Graph, graph, "graph")
    update_model, update_findings = _parse(Update, update, "update")
    if graph_model is None or update_model is None:
        findings = graph_findings + update_findings
        return ValidationResult(
            verdict=Verdict.REJECT,
            findings=tuple(findings),
            declared=(
                update_model.answer_meaning.structural_action_required
                if update_model is not None and update_model.answer_meaning is not None
                else _raw_declared(update)
            ),
            meaningful_change=None,
            decided_by="schema",
            policy=transition,
            counts=_raw_counts(update),
        )

    checker = _Checker(graph_model, update_model, transition)
    checker.run()
    findings = sorted(checker.findings, key=lambda f: _STAGE_RANK[f.code.partition(".")[0]])
    verdict = _verdict(findings)
    errors = [f for f in findings if f.severity is Severity.ERROR]
    if errors:
        decided_by: str | None = _stage(errors[0].code)
    elif checker.invariant is not None:
        decided_by = checker.invariant
    elif findings:
        decided_by = _stage(findings[0].code)
    else:
        decided_by = None  # declared true with a meaningful change, or no answerMeaning

    meaning = update_model.answer_meaning
    u = update_model
    return ValidationResult(
        verdict=verdict,
        findings=tuple(findings),
        declared=meaning.structural_action_required if meaning is not None else None,
        meaningful_change=checker.meaningful_change,
        decided_by=decided_by,
        policy=transition,
        counts=MutationCounts(
            updated_nodes=len(u.updated_nodes),
            updated_nodes_changing=checker.changing_updates,
            resolved_unknown_node_ids=len(u.resolved_unknown_node_ids),
            added_nodes=len(u.added_nodes),
            added_edges=len(u.added_edges),
        ),
    )
