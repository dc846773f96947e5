"""Review pages for proposal validations: list, detail with annotation, statistics
and CSV export. Reviewers only: others get 403 (anonymous visitors the sign-in page).

Views parse, check the role, call ``beliefs.services.proposals`` (writes) and
``beliefs.selectors.proposals`` (reads), and render. What they add is presentation: the
declared-versus-actual table, the graph as rows, and the SVG charts, whose geometry is computed
here so the templates only place numbers (the CSP forbids inline styles, so the charts use SVG
attributes and classes from console.css).
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from django import forms
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from beliefs import schemas
from beliefs.domain.contract import FINDING_CODES, UNKNOWN_TYPE
from beliefs.domain.vocabulary import MAX_TEXT_LENGTH, VERDICTS
from beliefs.errors import InvalidInput, NotFound
from beliefs.models import ProposalAnnotation, ProposalValidation
from beliefs.roles import is_reviewer
from beliefs.selectors import proposals as proposal_reads
from beliefs.services import proposals as proposal_writes
from console.http import AuthedHttpRequest, role_required
from console.presenters.proposals import decided_by_text
from console.templatetags.reveal import hidden_characters

PAGE_SIZE = 25
STATS_DEFAULT_DAYS = 30
STATS_MAX_DAYS = 366


reviewer_required = role_required(is_reviewer, "Only reviewers may see proposal validations.")


# --- list and export -----------------------------------------------------------------------


@require_GET
@reviewer_required
def proposal_list(request: AuthedHttpRequest) -> HttpResponse:
    form = schemas.ProposalFilterForm(request.GET)
    if not form.is_valid():
        refused = {"form": form, "page": None, "counts": None}
        return render(request, "proposals/list.html", refused, status=400)
    filters = form.cleaned_data
    counts = proposal_reads.verdict_counts(
        proposal_reads.validations_filtered(filters, ignore=["verdict"])
    )
    rows = proposal_reads.validation_rows(
        proposal_reads.validations_filtered(filters), reviewer=request.user
    )
    page = Paginator(rows, PAGE_SIZE).get_page(request.GET.get("page"))
    for validation in page:
        validation.codes = proposal_reads.codes_of(validation)  # type: ignore[attr-defined]
    context: dict[str, Any] = {
        "form": form,
        "page": page,
        "counts": counts,
        "total": sum(counts.values()),
        "verdict": filters.get("verdict") or "",
    }
    return render(request, "proposals/list.html", context)


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


def _csv_lines(rows: Iterable[ProposalValidation]) -> Iterator[str]:
    writer = csv.writer(_Echo())
    yield writer.writerow(CSV_COLUMNS)
    for validation in rows:
        yield writer.writerow([csv_cell(cell) for cell in _csv_row(validation)])


@require_GET
@reviewer_required
def proposal_export(request: AuthedHttpRequest) -> HttpResponse | StreamingHttpResponse:
    form = schemas.ProposalFilterForm(request.GET)
    if not form.is_valid():
        context = {"form": form, "page": None, "counts": None}
        return render(request, "proposals/list.html", context, status=400)
    rows = proposal_reads.validation_rows(proposal_reads.validations_filtered(form.cleaned_data))
    response = StreamingHttpResponse(
        _csv_lines(rows.iterator(chunk_size=500)), content_type="text/csv; charset=utf-8"
    )
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    response["Content-Disposition"] = f'attachment; filename="proposal-validations-{stamp}.csv"'
    return response


# --- detail and annotation -----------------------------------------------------------------


class AnnotationForm(forms.Form):
    agreement = forms.ChoiceField(
        label="Do you agree with the verdict?",
        choices=ProposalAnnotation.Agreement.choices,
        widget=forms.RadioSelect,
        error_messages={
            "required": "Choose agree or disagree.",
            "invalid_choice": "Choose agree or disagree.",
        },
    )
    note = forms.CharField(
        label="Note",
        required=False,
        max_length=MAX_TEXT_LENGTH,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Why you agree or disagree (optional).",
    )


def _validation_or_404(pk: int) -> ProposalValidation:
    try:
        return proposal_reads.validation_detail(pk)
    except NotFound:
        raise Http404("No such proposal validation.") from None


@dataclass(frozen=True)
class Row:
    """One line of the declared-versus-actual table."""

    label: str
    declared: str
    actual: str
    note: str = ""
    mismatch: bool = False


def _decided_by_text(validation: ProposalValidation) -> str:
    return decided_by_text(validation.decided_by, validation.update)


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


def _annotation_context(
    request: AuthedHttpRequest,
    validation: ProposalValidation,
    form: AnnotationForm | None = None,
    saved: bool = False,
) -> dict[str, Any]:
    annotations = list(validation.annotations.all())
    mine = next((a for a in annotations if a.reviewer_id == request.user.pk), None)
    if form is None:
        initial = {"agreement": mine.agreement, "note": mine.note} if mine else {}
        form = AnnotationForm(initial=initial)
    return {
        "validation": validation,
        "annotation_form": form,
        "mine": mine,
        "others": [a for a in annotations if a.reviewer_id != request.user.pk],
        "saved": saved,
    }


def _detail_context(
    request: AuthedHttpRequest, validation: ProposalValidation, form: AnnotationForm | None = None
) -> dict[str, Any]:
    node_rows, edge_rows = graph_rows(validation.graph, validation.update)
    findings = list(validation.findings.all())
    source = [validation.provider, validation.model, validation.run]
    return {
        **_annotation_context(request, validation, form),
        "rows": declared_vs_actual(validation),
        "decided_by_text": _decided_by_text(validation),
        "findings": [(f, FINDING_CODES.get(f.code, "")) for f in findings],
        "node_rows": node_rows,
        "edge_rows": edge_rows,
        "changes": proposed_changes(validation.update),
        "update_json": pretty_json(validation.update),
        "graph_json": pretty_json(validation.graph),
        "hidden": hidden_characters([validation.graph, validation.update, source]),
        "submitter": proposal_reads.submitter_label(validation),
    }


@require_GET
@reviewer_required
def proposal_detail(request: AuthedHttpRequest, pk: int) -> HttpResponse:
    validation = _validation_or_404(pk)
    return render(request, "proposals/detail.html", _detail_context(request, validation))


@require_POST
@reviewer_required
def proposal_annotate(request: AuthedHttpRequest, pk: int) -> HttpResponse:
    validation = _validation_or_404(pk)
    form = AnnotationForm(request.POST)
    if form.is_valid():
        try:
            proposal_writes.proposal_annotate(
                validation=validation,
                reviewer=request.user,
                agreement=form.cleaned_data["agreement"],
                note=form.cleaned_data["note"],
            )
        except InvalidInput as error:
            for field, problems in error.fields.items():
                for problem in problems:
                    form.add_error(field if field in form.fields else None, problem)
    if form.is_valid():
        validation = _validation_or_404(pk)  # fresh annotations
        if request.htmx:
            context = _annotation_context(request, validation, saved=True)
            return render(request, "proposals/_annotation.html", context)
        messages.success(request, "Your review is saved.")
        return redirect(reverse("proposal", args=[pk]) + "#annotation")
    if request.htmx:
        context = _annotation_context(request, validation, form)
        return render(request, "proposals/_annotation.html", context, status=400)
    context = _detail_context(request, validation, form)
    return render(request, "proposals/detail.html", context, status=400)


# --- statistics ----------------------------------------------------------------------------


def nice_ceiling(value: int) -> int:
    """The smallest 1, 2 or 5 times a power of ten that is >= value (at least 1)."""
    if value <= 1:
        return 1
    power = int(10 ** math.floor(math.log10(value)))
    for step in (1, 2, 5, 10):
        if step * power >= value:
            return step * power
    return 10 * power  # pragma: no cover - the loop always returns


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    css: str
    title: str


@dataclass(frozen=True)
class Tick:
    position: float
    label: str


@dataclass(frozen=True)
class DayChart:
    width: int
    height: int
    left: int
    right: float
    top: int
    bottom: float
    bars: list[Bar]
    y_ticks: list[Tick]
    x_ticks: list[Tick]


def day_chart(days: list[proposal_reads.DayVerdicts]) -> DayChart:
    width, height, left, right, top, bottom = 880, 260, 44, 12, 12, 36
    plot_w, plot_h = width - left - right, height - top - bottom
    ceiling = nice_ceiling(max((d.total for d in days), default=0))
    slot = plot_w / max(len(days), 1)
    bar_w = max(slot * 0.7, 1.0)
    bars = []
    for i, day in enumerate(days):
        x = left + i * slot + (slot - bar_w) / 2
        base: float = top + plot_h
        for verdict in VERDICTS:
            n = day.counts[verdict]
            if not n:
                continue
            h = n / ceiling * plot_h
            base -= h
            title = f"{day.day.isoformat()}: {n} {verdict}"
            bars.append(
                Bar(round(x, 1), round(base, 1), round(bar_w, 1), round(h, 1), verdict, title)
            )
    steps = range(0, ceiling + 1, max(ceiling // 5, 1))  # ceilings are 1, 2 or 5 x 10^k
    y_ticks = [Tick(round(top + plot_h - s / ceiling * plot_h, 1), str(s)) for s in steps]
    every = max(math.ceil(len(days) / 8), 1)
    x_ticks = [
        Tick(round(left + i * slot + slot / 2, 1), day.day.strftime("%m-%d"))
        for i, day in enumerate(days)
        if i % every == 0
    ]
    return DayChart(width, height, left, width - right, top, top + plot_h, bars, y_ticks, x_ticks)


@dataclass(frozen=True)
class CodeBar:
    code: str
    count: int
    y: float
    width: float
    text_x: float
    text_y: float


@dataclass(frozen=True)
class CodeChart:
    width: int
    height: int
    bar_x: int
    bar_height: int
    rows: list[CodeBar]


def code_chart(codes: list[proposal_reads.CodeFrequency]) -> CodeChart:
    width, label_w, row_h, bar_h, top = 880, 320, 28, 18, 6
    bar_max = width - label_w - 48
    most = max((c.findings for c in codes), default=1)
    rows = []
    for i, code in enumerate(codes):
        y = top + i * row_h
        w = max(code.findings / most * bar_max, 1.0)
        rows.append(
            CodeBar(
                code.code,
                code.findings,
                y,
                round(w, 1),
                round(label_w + w + 6, 1),
                y + bar_h - 4,
            )
        )
    return CodeChart(width, top * 2 + row_h * len(codes), label_w, bar_h, rows)


@require_GET
@reviewer_required
def proposal_stats(request: AuthedHttpRequest) -> HttpResponse:
    form = schemas.ProposalFilterForm(request.GET)
    if form.is_valid():
        filters = dict(form.cleaned_data)
        end = filters.get("to") or timezone.localdate()
        start = filters.get("from") or end - dt.timedelta(days=STATS_DEFAULT_DAYS - 1)
        end = max(end, start)
        if (end - start).days >= STATS_MAX_DAYS:
            form.add_error("from", f"Statistics cover at most {STATS_MAX_DAYS} days.")
    if not form.is_valid():
        return render(request, "proposals/stats.html", {"form": form}, status=400)
    qs = proposal_reads.validations_filtered({**filters, "from": start, "to": end})
    days = proposal_reads.verdicts_per_day(qs, start, end)
    codes = proposal_reads.frequent_codes(qs)
    total, per_verdict = proposal_reads.disagreement_by_verdict(qs)
    totals = {v: sum(d.counts[v] for d in days) for v in VERDICTS}
    context = {
        "form": form,
        "start": start,
        "end": end,
        "days": days,
        "day_chart": day_chart(days),
        "totals": totals,
        "validations": sum(totals.values()),
        "codes": codes,
        "code_chart": code_chart(codes),
        "disagreement": total,
        "per_verdict": per_verdict,
    }
    return render(request, "proposals/stats.html", context)
