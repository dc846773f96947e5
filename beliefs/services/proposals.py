"""Stored proposal validations: the writes around ``beliefs.domain.contract``.

The validator judges whatever it is given. The edge has already refused an envelope that is not
``{graph, update, source?}``, text a database cannot hold (NUL characters, unpaired surrogates)
and nesting deeper than any proposal needs. Everything else, however malformed, is judged and
stored: a broken ``update`` is a REJECT with schema findings, and the reviewers see it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import (
    JSONField,
    Value,
)

from beliefs.domain.contract import Severity, validate_proposal
from beliefs.domain.jsonguard import text_problem
from beliefs.domain.vocabulary import MAX_PATH_LENGTH, MAX_TEXT_LENGTH, AuditKind
from beliefs.errors import PermissionDenied, field_error
from beliefs.models import (
    ProposalAnnotation,
    ProposalFinding,
    ProposalValidation,
)
from beliefs.roles import is_reviewer
from beliefs.services.audit import Actor, audit

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
    source: Mapping[str, str] | None,
    actor: Actor,
    policy: str | None = None,
) -> ProposalValidation:
    """Judge a proposal and store the result, its findings and an audit event.

    ``graph`` and ``update`` may be any JSON (the validator judges whatever it is given) that the
    edge has already found storable; ``source`` is ``{provider?, model?, run?}``, each at most 200
    characters. ``policy`` defaults to ``settings.CONSOLE_TRANSITION_POLICY``; the demo passes it
    to show both policies side by side.
    """
    clean_source = dict(source or {})
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
        for severity, findings in (
            (Severity.ERROR, result["errors"]),
            (Severity.WARNING, result["warnings"]),
        )
        for finding in findings
    )
    audit(
        AuditKind.PROPOSAL_VALIDATED,
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
    reviewer: User,
    agreement: Any,
    note: Any = "",
) -> ProposalAnnotation:
    """Record (or change) one reviewer's agreement with a verdict: one annotation per reviewer."""
    if not is_reviewer(reviewer):
        raise PermissionDenied("Only reviewers may annotate proposal validations.")
    if agreement not in ProposalAnnotation.Agreement.values:
        raise field_error(
            "agreement", f"must be one of {', '.join(ProposalAnnotation.Agreement.values)}"
        )
    if note is None:
        note = ""
    if not isinstance(note, str):
        raise field_error("note", "must be text")
    note = note.strip()
    if len(note) > MAX_TEXT_LENGTH:
        raise field_error("note", f"must be at most {MAX_TEXT_LENGTH} characters")
    problem = text_problem(note)
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
        AuditKind.PROPOSAL_ANNOTATED,
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
