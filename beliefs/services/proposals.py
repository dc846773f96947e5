"""Stored proposal validations: the writes and the reads around
``beliefs.domain.contract``.

The validator judges whatever it is given; this module decides what may be stored. An envelope
that is not ``{graph, update, source?}`` is refused before anything is judged, and so is text a
database cannot hold (NUL characters, unpaired surrogates) or nesting deeper than any proposal
needs. Everything else, however malformed, is judged and stored: a broken ``update`` is a REJECT
with schema findings, and the reviewers see it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import (
    JSONField,
    Value,
)

from beliefs.domain.contract import Severity, validate_proposal
from beliefs.domain.vocabulary import (
    MAX_JSON_DEPTH,
    MAX_LABEL_LENGTH,
    MAX_PATH_LENGTH,
    MAX_TEXT_LENGTH,
)
from beliefs.errors import InvalidInput, PermissionDenied, field_error
from beliefs.models import (
    ProposalAnnotation,
    ProposalFinding,
    ProposalValidation,
)
from beliefs.roles import is_reviewer
from beliefs.services.audit import Actor, audit

ENVELOPE_FIELDS = ("graph", "update", "source")
SOURCE_FIELDS = ("provider", "model", "run")


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
        if len(text) > MAX_LABEL_LENGTH:
            raise field_error(f"source.{name}", f"must be at most {MAX_LABEL_LENGTH} characters")
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
        if depth > MAX_JSON_DEPTH:
            raise InvalidInput(
                f"{root}: nested more than {MAX_JSON_DEPTH} levels deep.",
                code="too_deep",
                fields={path: [f"nested more than {MAX_JSON_DEPTH} levels deep"]},
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
        for severity, findings in (
            (Severity.ERROR, result["errors"]),
            (Severity.WARNING, result["warnings"]),
        )
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
