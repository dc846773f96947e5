"""Review pages for proposal validations: list, detail with annotation, statistics
and CSV export. Reviewers only: others get 403 (anonymous visitors the sign-in page).

Views parse (``beliefs.schemas.ProposalFilterForm``, ``console.forms.proposals``), check the
role, call ``beliefs.services.proposals`` (writes) and ``beliefs.selectors.proposals`` (reads),
and render what the presenters put together: the declared-versus-actual table and the graph as
rows (``console.presenters.proposal_graph``), the SVG charts
(``console.presenters.proposal_charts``) and the CSV (``console.presenters.proposal_csv``).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from beliefs import schemas
from beliefs.domain.contract import FINDING_CODES
from beliefs.domain.vocabulary import VERDICTS
from beliefs.errors import InvalidInput, NotFound
from beliefs.models import ProposalValidation
from beliefs.roles import is_reviewer
from beliefs.selectors import proposals as proposal_reads
from beliefs.services import proposals as proposal_writes
from console.forms.proposals import AnnotationForm
from console.http import AuthedHttpRequest, role_required
from console.presenters.proposal_charts import code_chart, day_chart
from console.presenters.proposal_csv import csv_lines
from console.presenters.proposal_graph import (
    declared_vs_actual,
    graph_rows,
    pretty_json,
    proposed_changes,
)
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


@require_GET
@reviewer_required
def proposal_export(request: AuthedHttpRequest) -> HttpResponse | StreamingHttpResponse:
    form = schemas.ProposalFilterForm(request.GET)
    if not form.is_valid():
        context = {"form": form, "page": None, "counts": None}
        return render(request, "proposals/list.html", context, status=400)
    rows = proposal_reads.validation_rows(proposal_reads.validations_filtered(form.cleaned_data))
    response = StreamingHttpResponse(
        csv_lines(rows.iterator(chunk_size=500)), content_type="text/csv; charset=utf-8"
    )
    stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
    response["Content-Disposition"] = f'attachment; filename="proposal-validations-{stamp}.csv"'
    return response


# --- detail and annotation -----------------------------------------------------------------


def _validation_or_404(pk: int) -> ProposalValidation:
    try:
        return proposal_reads.validation_detail(pk)
    except NotFound:
        raise Http404("No such proposal validation.") from None


def _decided_by_text(validation: ProposalValidation) -> str:
    return decided_by_text(validation.decided_by, validation.update)


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
        # Where the reviewer goes next (after saving this one, the top link and the message).
        "next_unreviewed": proposal_reads.next_unreviewed(request.user.pk, validation),
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
