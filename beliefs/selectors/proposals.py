"""Reading stored proposal validations: filters, rows, detail and statistics."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.db.models import (
    Case,
    Count,
    Exists,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.db.models.functions import TruncDate
from django.utils import timezone

from beliefs.domain.contract import FINDING_CODES
from beliefs.domain.vocabulary import VERDICTS
from beliefs.errors import NotFound
from beliefs.models import (
    ProposalAnnotation,
    ProposalFinding,
    ProposalValidation,
)
from beliefs.selectors.shapes import ValidateJSON, ValidationSummaryJSON

# --- filters -------------------------------------------------------------------------------


def _day_start(day: dt.date) -> dt.datetime:
    return timezone.make_aware(dt.datetime.combine(day, dt.time.min))


def validations_filtered(
    filters: Mapping[str, Any], *, ignore: Iterable[str] = ()
) -> QuerySet[ProposalValidation]:
    """Validations matching a form's ``cleaned_data``; ``ignore`` names filters to leave out
    (the per-verdict counts ignore the verdict filter)."""
    skip = set(ignore)

    def wanted(name: str) -> Any:
        return None if name in skip else filters.get(name)

    qs = ProposalValidation.objects.all()
    if wanted("verdict"):
        qs = qs.filter(verdict=wanted("verdict"))
    if wanted("code"):
        # EXISTS, not a join: a validation with the code twice must still appear once.
        qs = qs.filter(
            Exists(ProposalFinding.objects.filter(validation=OuterRef("pk"), code=wanted("code")))
        )
    if wanted("provider"):
        qs = qs.filter(provider=wanted("provider"))
    if wanted("model"):
        qs = qs.filter(model=wanted("model"))
    if wanted("from"):
        qs = qs.filter(created_at__gte=_day_start(wanted("from")))
    if wanted("to"):
        qs = qs.filter(created_at__lt=_day_start(wanted("to") + dt.timedelta(days=1)))
    return qs


# --- selectors -----------------------------------------------------------------------------


def validation_rows(
    qs: QuerySet[ProposalValidation], *, reviewer: User | None = None
) -> QuerySet[ProposalValidation]:
    """A list's rows, in one query: who submitted, agreement counts and (for a reviewer) their
    own agreement as ``my_agreement``. The graph and update stay in the database."""
    qs = (
        qs.select_related("submitted_by_key__runtime", "submitted_by_user")
        .defer("graph", "update")
        .annotate(
            agree_count=Count(
                "annotations", filter=Q(annotations__agreement=ProposalAnnotation.Agreement.AGREE)
            ),
            disagree_count=Count(
                "annotations",
                filter=Q(annotations__agreement=ProposalAnnotation.Agreement.DISAGREE),
            ),
        )
        .order_by("-created_at", "-id")
    )
    if reviewer is not None:
        mine = ProposalAnnotation.objects.filter(validation=OuterRef("pk"), reviewer=reviewer)
        qs = qs.annotate(my_agreement=Subquery(mine.values("agreement")[:1]))
    return qs


def verdict_counts(qs: QuerySet[ProposalValidation]) -> dict[str, int]:
    """{verdict: count} for every verdict, zeros included, in one query."""
    counts = dict.fromkeys(VERDICTS, 0)
    for row in qs.order_by().values("verdict").annotate(n=Count("id")):
        counts[row["verdict"]] = row["n"]
    return counts


def validation_detail(pk: int) -> ProposalValidation:
    """One validation with its findings and annotations (three queries); 404 if absent."""
    validation = (
        ProposalValidation.objects.select_related("submitted_by_key__runtime", "submitted_by_user")
        .prefetch_related(
            "findings",
            Prefetch(
                "annotations",
                queryset=ProposalAnnotation.objects.select_related("reviewer").order_by(
                    "created_at", "id"
                ),
            ),
        )
        .filter(pk=pk)
        .first()
    )
    if validation is None:
        raise NotFound("No such proposal validation.")
    return validation


def next_unreviewed(reviewer_id: int, after: ProposalValidation) -> ProposalValidation | None:
    """The validation to review after `after`: the next older one this reviewer has not
    annotated (the list's order, newest first), else the newest such one; None when none is
    left."""
    unreviewed = ProposalValidation.objects.exclude(annotations__reviewer_id=reviewer_id).exclude(
        pk=after.pk
    )
    # One query: the older ones first (newest of them first), then the newer ones.
    older_first = Case(When(pk__lt=after.pk, then=Value(0)), default=Value(1))
    return unreviewed.order_by(older_first, "-pk").only("pk", "verdict").first()


def submitter_label(validation: ProposalValidation) -> str:
    """Who sent it: ``runtime:<runtime name>``, a username, or ``system`` (needs
    select_related)."""
    if validation.submitted_by_key is not None:
        return f"runtime:{validation.submitted_by_key.runtime.name}"
    if validation.submitted_by_user is not None:
        return validation.submitted_by_user.get_username()
    return "system"


def codes_of(validation: ProposalValidation) -> list[str]:
    """The finding codes of a validation, from its stored result (no query)."""
    return [f.get("code", "") for f in list(validation.errors) + list(validation.warnings)]


def validation_summary(validation: ProposalValidation) -> ValidationSummaryJSON:
    """A validation as the API lists it; needs ``validation_rows``."""
    return {
        **validation_result(validation),
        "created_at": validation.created_at.isoformat(),
        "codes": codes_of(validation),
        "source": {
            "provider": validation.provider,
            "model": validation.model,
            "run": validation.run,
        },
        "submitted_by": submitter_label(validation),
        "annotations": {
            "agree": getattr(validation, "agree_count", None),
            "disagree": getattr(validation, "disagree_count", None),
        },
    }


def validation_result(validation: ProposalValidation) -> ValidateJSON:
    """What ``POST proposals/validate/`` answers."""
    return {
        "id": validation.pk,
        "verdict": validation.verdict,
        "decided_by": validation.decided_by or None,
        "policy": validation.policy,
        "declared": validation.declared,
        "meaningful_change": validation.meaningful_change,
        "counts": validation.counts,
        "errors": validation.errors,
        "warnings": validation.warnings,
    }


# --- statistics ----------------------------------------------------------------------------


@dataclass(frozen=True)
class DayVerdicts:
    day: dt.date
    counts: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def verdicts_per_day(
    qs: QuerySet[ProposalValidation], start: dt.date, end: dt.date
) -> list[DayVerdicts]:
    """One entry per day from ``start`` to ``end`` inclusive, empty days included (one query)."""
    found: dict[tuple[dt.date, str], int] = {}
    rows = (
        qs.order_by()
        .annotate(day=TruncDate("created_at"))
        .values("day", "verdict")
        .annotate(n=Count("id"))
    )
    for row in rows:
        found[(row["day"], row["verdict"])] = row["n"]
    days = []
    day = start
    while day <= end:
        days.append(DayVerdicts(day, {v: found.get((day, v), 0) for v in VERDICTS}))
        day += dt.timedelta(days=1)
    return days


@dataclass(frozen=True)
class CodeFrequency:
    code: str
    meaning: str
    findings: int
    validations: int


def frequent_codes(qs: QuerySet[ProposalValidation], limit: int = 10) -> list[CodeFrequency]:
    """The most frequent finding codes among ``qs`` (one query)."""
    rows = (
        ProposalFinding.objects.filter(validation__in=qs.order_by().values("pk"))
        .values("code")
        .annotate(findings=Count("id"), validations=Count("validation", distinct=True))
        .order_by("-findings", "code")[:limit]
    )
    return [
        CodeFrequency(
            code=row["code"],
            meaning=FINDING_CODES.get(row["code"], ""),
            findings=row["findings"],
            validations=row["validations"],
        )
        for row in rows
    ]


@dataclass(frozen=True)
class Disagreement:
    verdict: str
    annotations: int
    disagreements: int

    @property
    def rate(self) -> float | None:
        return self.disagreements / self.annotations if self.annotations else None


def disagreement_by_verdict(
    qs: QuerySet[ProposalValidation],
) -> tuple[Disagreement, list[Disagreement]]:
    """Reviewers' disagreement with verdicts: the total and per verdict (one query)."""
    rows = {
        row["validation__verdict"]: row
        for row in ProposalAnnotation.objects.filter(validation__in=qs.order_by().values("pk"))
        .values("validation__verdict")
        .annotate(
            n=Count("id"),
            d=Count("id", filter=Q(agreement=ProposalAnnotation.Agreement.DISAGREE)),
        )
        .order_by()
    }
    per_verdict = [
        Disagreement(v, rows[v]["n"] if v in rows else 0, rows[v]["d"] if v in rows else 0)
        for v in VERDICTS
    ]
    total = Disagreement(
        "all",
        sum(d.annotations for d in per_verdict),
        sum(d.disagreements for d in per_verdict),
    )
    return total, per_verdict
