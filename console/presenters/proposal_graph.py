"""A validation as a reviewer reads it: the declared-versus-actual table, the graph before as
rows (each node marked with what the proposal does to it), the proposed changes array by array,
and the JSON as sent. Untrusted text stays text: the templates reveal hidden characters with
``|shown``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from beliefs.domain.contract import UNKNOWN_TYPE
from beliefs.models import ProposalValidation


@dataclass(frozen=True)
class Row:
    """One line of the declared-versus-actual table."""

    label: str
    declared: str
    actual: str
    note: str = ""
    mismatch: bool = False


def _yes_no(value: bool | None, unknown: str = "unknown") -> str:
    return unknown if value is None else ("yes" if value else "no")


def declared_vs_actual(validation: ProposalValidation) -> list[Row]:
    counts = validation.counts if isinstance(validation.counts, dict) else {}
    declared = {True: "true: a change", False: "false: no change", None: "missing"}[
        validation.declared
    ]
    changed = validation.meaningful_change
    mismatch = validation.declared is not None and changed is not None
    mismatch = mismatch and validation.declared != changed
    rows = [
        Row(
            "structuralActionRequired / meaningful change",
            declared,
            _yes_no(changed, "unknown (schema failed)"),
            mismatch=mismatch,
        )
    ]
    changing = counts.get("updatedNodesChanging")
    rows.append(
        Row(
            "updatedNodes",
            "",
            f"{counts.get('updatedNodes', 0)}",
            note="" if changing is None else f"{changing} of them change a node",
        )
    )
    for key in ("resolvedUnknownNodeIds", "addedNodes", "addedEdges"):
        rows.append(Row(key, "", f"{counts.get(key, 0)}"))
    return rows


def _text(value: Any) -> str:
    """A JSON scalar as text; the templates reveal hidden characters with ``|shown``."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _ids(update: Any, key: str, id_key: str | None = None) -> set[str]:
    items = update.get(key) if isinstance(update, dict) else None
    if not isinstance(items, list):
        return set()
    if id_key is None:
        return {i for i in items if isinstance(i, str)}
    return {i[id_key] for i in items if isinstance(i, dict) and isinstance(i.get(id_key), str)}


def graph_rows(
    graph: Any, update: Any
) -> tuple[list[dict[str, Any]] | None, list[dict[str, Any]] | None]:
    """The graph before as table rows, each node marked with what this proposal does to it.

    ``None`` for a part that is not a list (the schema findings say why)."""
    graph = graph if isinstance(graph, dict) else {}
    updated = _ids(update, "updatedNodes", "id")
    resolved = _ids(update, "resolvedUnknownNodeIds")
    nodes = graph.get("nodes")
    edges = graph.get("edges")
    node_rows = None
    if isinstance(nodes, list):
        node_rows = []
        for node in nodes:
            if not isinstance(node, dict):
                node_rows.append({"raw": _text(node)})
                continue
            node_id = node.get("id")
            unknown = node.get("type") == UNKNOWN_TYPE
            touched = []
            if node_id in updated:
                touched.append("updated")
            if node_id in resolved:
                touched.append("resolved")
            row: dict[str, Any] = {
                "raw": None,
                "id": _text(node_id),
                "type": _text(node.get("type")),
                "label": _text(node.get("label")),
                "status": _text(node.get("status")),
                "value": _text(node.get("value")),
                "unknown": unknown,
                "resolved": unknown and node.get("status") == "resolved",
                "touched": touched,
            }
            node_rows.append(row)
    edge_rows = None
    if isinstance(edges, list):
        edge_rows = [
            {
                "raw": None,
                "source": _text(edge.get("source")),
                "type": _text(edge.get("type")),
                "target": _text(edge.get("target")),
            }
            if isinstance(edge, dict)
            else {"raw": _text(edge)}
            for edge in edges
        ]
    return node_rows, edge_rows


def _rows(items: Any, keys: tuple[str, ...]) -> list[dict[str, Any]]:
    if not isinstance(items, list):
        return []
    return [
        {"raw": None, **{k: _text(item.get(k)) for k in keys}}
        if isinstance(item, dict)
        else {"raw": _text(item)}
        for item in items
    ]


def proposed_changes(update: Any) -> dict[str, list[Any]]:
    """What the update asks for, array by array, as table rows (unreadable arrays empty)."""
    update = update if isinstance(update, dict) else {}
    updated = []
    for row, item in zip(
        _rows(update.get("updatedNodes"), ("id",)),
        update.get("updatedNodes") or [],
        strict=False,
    ):
        if row["raw"] is None:
            fields = ("status", "value", "label", "type")
            row["changes"] = [
                (key, "null" if item[key] is None else _text(item[key]))
                for key in fields
                if key in item
            ]
        updated.append(row)
    resolved = update.get("resolvedUnknownNodeIds")
    return {
        "updated": updated,
        "resolved": [_text(i) for i in resolved] if isinstance(resolved, list) else [],
        "added_nodes": _rows(update.get("addedNodes"), ("id", "type", "label", "status", "value")),
        "added_edges": _rows(update.get("addedEdges"), ("source", "type", "target")),
    }


def pretty_json(value: Any) -> str:
    """Indented JSON in the order it was sent, as plain text for a ``<pre>``; the template
    reveals hidden characters with ``|shown``."""
    return json.dumps(value, indent=2, ensure_ascii=False)
