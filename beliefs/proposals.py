"""Stored proposal validations (DESIGN §6, §8, §9): the writes and the reads around
``beliefs.contract``.

The validator judges whatever it is given; this module decides what may be stored. An envelope
that is not ``{graph, update, source?}`` is refused before anything is judged, and so is text a
database cannot hold (NUL characters, unpaired surrogates) or nesting deeper than any proposal
needs. Everything else, however malformed, is judged and stored: a broken ``update`` is a REJECT
with schema findings, and the reviewers see it.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django import forms
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import (
    Count,
    Exists,
    JSONField,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Subquery,
    Value,
)
from django.db.models.functions import TruncDate
from django.utils import timezone

from beliefs.contract import FINDING_CODES, validate_proposal
from beliefs.errors import InvalidInput, NotFound, PermissionDenied, field_error
from beliefs.models import (
    ProposalAnnotation,
    ProposalFinding,
    ProposalValidation,
)
from beliefs.roles import is_reviewer
from beliefs.services import MAX_TEXT_LENGTH, Actor, audit

ENVELOPE_FIELDS = ("graph", "update", "source")
SOURCE_FIELDS = ("provider", "model", "run")
MAX_SOURCE_LENGTH = 200  # the model's column width
MAX_PATH_LENGTH = 500  # ProposalFinding.path
# A proposal is at most four levels deep (update.addedNodes[i].value); 32 leaves room for
# whatever a model invents while keeping storage and display away from recursion limits.
MAX_DEPTH = 32
VERDICTS = tuple(ProposalValidation.Verdict.values)
AGREEMENTS = tuple(ProposalAnnotation.Agreement.values)


# --- the envelope --------------------------------------------------------------------------


@dataclass(frozen=True)
class Envelope:
    graph: Any
    update: Any
    source: dict[str, str]


def proposal_envelope(data: Any) -> Envelope:
    """Check the request body's outer shape; raise ``InvalidInput`` (400) if it is wrong.

    Only the envelope is checked here: the contents of ``graph`` and ``update`` are the
    validator's to judge, whatever their type.
    """
    if not isinstance(data, dict):
        raise InvalidInput("The request body must be a JSON object.", code="invalid_body")
    unknown = sorted(str(key) for key in data if key not in ENVELOPE_FIELDS)
    if unknown:
        raise InvalidInput(
            f"{unknown[0]}: unknown field; a proposal is {{graph, update, source?}}.",
            code="unknown_field",
            fields={name: ["unknown field"] for name in unknown},
        )
    missing = [name for name in ("graph", "update") if name not in data]
    if missing:
        raise InvalidInput(
            f"{missing[0]}: required; a proposal is {{graph, update, source?}}.",
            code="missing_field",
            fields={name: ["required"] for name in missing},
        )
    return Envelope(graph=data["graph"], update=data["update"], source=_source(data.get("source")))


def _source(value: Any) -> dict[str, str]:
    """``source`` = ``{provider?, model?, run?}``, each a string (or null) of at most 200."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise field_error("source", "must be an object {provider, model, run}")
    unknown = sorted(str(key) for key in value if key not in SOURCE_FIELDS)
    if unknown:
        raise field_error(f"source.{unknown[0]}", "unknown field")
    source: dict[str, str] = {}
    for name in SOURCE_FIELDS:
        text = value.get(name)
        if text is None:
            continue
        if not isinstance(text, str):
            raise field_error(f"source.{name}", "must be a string")
        text = text.strip()
        if len(text) > MAX_SOURCE_LENGTH:
            raise field_error(f"source.{name}", f"must be at most {MAX_SOURCE_LENGTH} characters")
        problem = _unstorable(text)
        if problem:
            raise field_error(f"source.{name}", problem)
        source[name] = text
    return source


def _unstorable(text: str) -> str | None:
    if "\x00" in text:
        return "contains a NUL character (U+0000), which cannot be stored"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "contains an unpaired surrogate, which is not valid Unicode text"
    return None


def _check_storable(root: str, value: Any) -> None:
    """Refuse what the database cannot store faithfully (PostgreSQL's jsonb refuses NUL)."""
    stack: list[tuple[str, Any, int]] = [(root, value, 1)]
    while stack:
        path, item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise InvalidInput(
                f"{root}: nested more than {MAX_DEPTH} levels deep.",
                code="too_deep",
                fields={path: [f"nested more than {MAX_DEPTH} levels deep"]},
            )
        if isinstance(item, str):
            problem = _unstorable(item)
            if problem:
                raise InvalidInput(f"{path}: {problem}.", fields={path: [problem]})
        elif isinstance(item, float) and not math.isfinite(item):
            # 1e400 parses as infinity, which JSON cannot carry back out.
            problem = "number out of range"
            raise InvalidInput(f"{path}: {problem}.", fields={path: [problem]})
        elif isinstance(item, dict):
            for key, child in item.items():
                key_text = str(key)
                problem = _unstorable(key_text)
                if problem:
                    problem = f"a field name {problem}"
                    raise InvalidInput(f"{path}: {problem}.", fields={path: [problem]})
                pointer = key_text.replace("~", "~0").replace("/", "~1")
                stack.append((f"{path}/{pointer}", child, depth + 1))
        elif isinstance(item, list):
            stack.extend((f"{path}/{i}", child, depth + 1) for i, child in enumerate(item))


# --- services ------------------------------------------------------------------------------


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _json(value: Any) -> Any:
    # A bare None would be SQL NULL; a proposal of `null` is stored as JSON null.
    return Value(None, JSONField()) if value is None else value


@transaction.atomic
def proposal_validate_and_store(
    *,
    graph: Any,
    update: Any,
    source: Mapping[str, Any] | None,
    actor: Actor,
    policy: str | None = None,
) -> ProposalValidation:
    """Judge a proposal and store the result, its findings and an audit event.

    ``policy`` defaults to ``settings.CONSOLE_TRANSITION_POLICY``; the demo passes it to show
    both policies side by side.
    """
    clean_source = _source(dict(source) if source is not None else None)
    _check_storable("/graph", graph)
    _check_storable("/update", update)
    result = validate_proposal(
        graph, update, policy=policy or settings.CONSOLE_TRANSITION_POLICY
    ).to_dict()
    validation = ProposalValidation.objects.create(
        graph=_json(graph),
        update=_json(update),
        verdict=result["verdict"],
        errors=result["errors"],
        warnings=result["warnings"],
        declared=result["declared"],
        meaningful_change=result["meaningful_change"],
        decided_by=result["decided_by"] or "",
        policy=result["policy"],
        counts=result["counts"],
        provider=clean_source.get("provider", ""),
        model=clean_source.get("model", ""),
        run=clean_source.get("run", ""),
        submitted_by_key=actor.key,
        submitted_by_user=actor.user,
    )
    validation.graph, validation.update = graph, update  # the values, not the expressions
    ProposalFinding.objects.bulk_create(
        ProposalFinding(
            validation=validation,
            code=finding["code"],
            severity=severity,
            message=finding["message"],
            path=_clip(finding["path"], MAX_PATH_LENGTH),
        )
        for severity, findings in (("error", result["errors"]), ("warning", result["warnings"]))
        for finding in findings
    )
    audit(
        "proposal.validated",
        actor=actor,
        subject=f"proposal validation {validation.pk}",
        data={
            "validation": validation.pk,
            "verdict": validation.verdict,
            "decided_by": validation.decided_by,
            "policy": validation.policy,
            "codes": sorted({f["code"] for f in result["errors"] + result["warnings"]}),
            "provider": validation.provider,
            "model": validation.model,
            "run": validation.run,
        },
    )
    return validation


@transaction.atomic
def proposal_annotate(
    *,
    validation: ProposalValidation,
    reviewer: AbstractBaseUser,
    agreement: Any,
    note: Any = "",
) -> ProposalAnnotation:
    """Record (or change) one reviewer's agreement with a verdict: one annotation per reviewer."""
    if not is_reviewer(reviewer):
        raise PermissionDenied("Only reviewers may annotate proposal validations.")
    if agreement not in AGREEMENTS:
        raise field_error("agreement", f"must be one of {', '.join(AGREEMENTS)}")
    if note is None:
        note = ""
    if not isinstance(note, str):
        raise field_error("note", "must be text")
    note = note.strip()
    if len(note) > MAX_TEXT_LENGTH:
        raise field_error("note", f"must be at most {MAX_TEXT_LENGTH} characters")
    problem = _unstorable(note)
    if problem:
        raise field_error("note", problem)
    previous = (
        ProposalAnnotation.objects.select_for_update()
        .filter(validation=validation, reviewer=reviewer)
        .first()
    )
    annotation, created = ProposalAnnotation.objects.update_or_create(
        validation=validation,
        reviewer=reviewer,
        defaults={"agreement": agreement, "note": note},
    )
    audit(
        "proposal.annotated",
        actor=Actor(user=reviewer),
        subject=f"proposal validation {validation.pk}",
        data={
            "validation": validation.pk,
            "verdict": validation.verdict,
            "agreement": agreement,
            "previous": previous.agreement if previous is not None else None,
            "created": created,
        },
    )
    return annotation


# --- filters -------------------------------------------------------------------------------


class ProposalFilterForm(forms.Form):
    """The filters of the list, the export, the statistics and the API (all GET parameters)."""

    verdict = forms.ChoiceField(
        required=False, choices=[("", "Any verdict"), *((v, v) for v in VERDICTS)]
    )
    code = forms.ChoiceField(
        required=False,
        label="Finding",
        choices=[("", "Any finding"), *((c, c) for c in FINDING_CODES)],
    )
    provider = forms.CharField(required=False, max_length=MAX_SOURCE_LENGTH)
    model = forms.CharField(required=False, max_length=MAX_SOURCE_LENGTH)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # "from" is a Python keyword, so these two cannot be class attributes.
        date_widget = forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d")
        self.fields["from"] = forms.DateField(
            required=False, label="From", input_formats=["%Y-%m-%d"], widget=date_widget
        )
        self.fields["to"] = forms.DateField(
            required=False, label="To", input_formats=["%Y-%m-%d"], widget=date_widget
        )
        for name in ("from", "to"):
            self.fields[name].error_messages["invalid"] = "Enter a date as YYYY-MM-DD."

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        start, end = data.get("from"), data.get("to")
        if start and end and start > end:
            self.add_error("to", "must not be before 'from'.")
        return data


def filter_errors(form: forms.Form) -> InvalidInput:
    """The form's errors as the API's 400."""
    fields = {name: [str(m) for m in messages] for name, messages in form.errors.items()}
    first_name, first = next(iter(fields.items()))
    return InvalidInput(f"{first_name}: {first[0]}", code="invalid_filter", fields=fields)


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
    qs: QuerySet[ProposalValidation], *, reviewer: AbstractBaseUser | None = None
) -> QuerySet[ProposalValidation]:
    """A list's rows, in one query: who submitted, agreement counts and (for a reviewer) their
    own agreement as ``my_agreement``. The graph and update stay in the database."""
    qs = (
        qs.select_related("submitted_by_key", "submitted_by_user")
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
        ProposalValidation.objects.select_related("submitted_by_key", "submitted_by_user")
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


def submitter_label(validation: ProposalValidation) -> str:
    """Who sent it: ``runtime:<key name>``, a username, or ``system`` (needs select_related)."""
    if validation.submitted_by_key is not None:
        return f"runtime:{validation.submitted_by_key.name}"
    if validation.submitted_by_user is not None:
        return validation.submitted_by_user.get_username()
    return "system"


def codes_of(validation: ProposalValidation) -> list[str]:
    """The finding codes of a validation, from its stored result (no query)."""
    return [f.get("code", "") for f in list(validation.errors) + list(validation.warnings)]


def validation_summary(validation: ProposalValidation) -> dict[str, Any]:
    """A validation as the API lists it; needs ``validation_rows``."""
    return {
        "id": validation.pk,
        "created_at": validation.created_at.isoformat(),
        "verdict": validation.verdict,
        "decided_by": validation.decided_by or None,
        "policy": validation.policy,
        "declared": validation.declared,
        "meaningful_change": validation.meaningful_change,
        "counts": validation.counts,
        "errors": validation.errors,
        "warnings": validation.warnings,
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


def validation_result(validation: ProposalValidation) -> dict[str, Any]:
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
