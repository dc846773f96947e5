"""The proposal validations as CSV, streamed a row at a time, with every text cell safe to open
in a spreadsheet."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator
from typing import Any

from beliefs.models import ProposalValidation
from beliefs.selectors import proposals as proposal_reads

CSV_COLUMNS = [
    "id",
    "created_at",
    "verdict",
    "decided_by",
    "policy",
    "declared",
    "meaningful_change",
    "updated_nodes",
    "resolved_unknown_node_ids",
    "added_nodes",
    "added_edges",
    "error_codes",
    "warning_codes",
    "provider",
    "model",
    "run",
    "submitted_by",
    "agree",
    "disagree",
]
# A spreadsheet runs a cell that starts with one of these as a formula (OWASP "CSV injection").
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """A text cell a spreadsheet will not run: a leading quote before a formula character."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def _flag(value: bool | None) -> str:
    return "" if value is None else str(value).lower()


def _csv_row(v: ProposalValidation) -> list[Any]:
    counts = v.counts if isinstance(v.counts, dict) else {}
    return [
        v.pk,
        v.created_at.isoformat(),
        v.verdict,
        v.decided_by,
        v.policy,
        _flag(v.declared),
        _flag(v.meaningful_change),
        counts.get("updatedNodes", ""),
        counts.get("resolvedUnknownNodeIds", ""),
        counts.get("addedNodes", ""),
        counts.get("addedEdges", ""),
        " ".join(f.get("code", "") for f in v.errors),
        " ".join(f.get("code", "") for f in v.warnings),
        v.provider,
        v.model,
        v.run,
        proposal_reads.submitter_label(v),
        v.agree_count,  # type: ignore[attr-defined]
        v.disagree_count,  # type: ignore[attr-defined]
    ]


class _Echo:
    """A file-like object whose write returns the line, for streaming csv.writer output."""

    def write(self, value: str) -> str:
        return value


def csv_lines(rows: Iterable[ProposalValidation]) -> Iterator[str]:
    writer = csv.writer(_Echo())
    yield writer.writerow(CSV_COLUMNS)
    for validation in rows:
        yield writer.writerow([csv_cell(cell) for cell in _csv_row(validation)])
