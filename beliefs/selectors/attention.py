"""Reads for attention: a person's latest irreversible confirmations, what a confirm of a
prompt needs (`domain.attention.acts_for`), and the history of friction for /insights/."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db.models import QuerySet, Subquery

from beliefs.domain.attention import Acts, Habit, Sample, Thresholds, acts_for, habit_of
from beliefs.domain.policy import RiskClass, Route
from beliefs.domain.vocabulary import FRICTION_KINDS, AuditKind
from beliefs.models import AuditEvent, Prompt, PromptState
from beliefs.selectors.written import Written

# /insights/ reads this many of the latest changes of friction.
FRICTION_EVENTS_SHOWN = 200


def thresholds() -> Thresholds:
    """The habituation thresholds from the settings."""
    return Thresholds(
        window=settings.CONSOLE_HABIT_WINDOW,
        kept_share=settings.CONSOLE_HABIT_KEPT_SHARE,
        median_dwell_s=settings.CONSOLE_HABIT_MEDIAN_DWELL_S,
    )


def _confirmations(principal_id: int) -> QuerySet[Prompt]:
    """The principal's answered irreversible confirmations, newest first."""
    return Prompt.objects.filter(
        instance__principal_id=principal_id,
        route=Route.CONFIRM,
        effective_risk=RiskClass.IRREVERSIBLE,
        state=PromptState.ANSWERED,
        responded_at__isnull=False,
    ).order_by("-responded_at", "-id")


def _sample(action: str, shown: datetime | None, responded: datetime | None) -> Sample:
    return Sample(kept=action == "confirm", dwell_s=_seconds(shown, responded))


def recent_confirmations(principal_id: int, limit: int) -> list[Sample]:
    """The principal's latest answered irreversible confirmations, newest first (one query):
    each kept the value on record or replaced it, and how long it was shown before."""
    rows = _confirmations(principal_id).values_list("action", "shown_at", "responded_at")
    return [_sample(*row) for row in rows[: max(limit, 0)]]


def _latest_friction_change(principal_id: int) -> QuerySet[AuditEvent, Any]:
    """The kind of the person's latest change of friction, read off the friction events' own
    index (`audit_friction_by_person`, whose condition the kinds are written to match)."""
    return _friction_changes(principal_id).values("kind")[:1]


def _with_friction(principal_id: int, limit: int) -> QuerySet[Prompt, tuple[Any, ...]]:
    """`_confirmations`' latest `limit`, each with the kind of the latest friction change."""
    return (
        _confirmations(principal_id)
        .annotate(friction=Subquery(_latest_friction_change(principal_id)))
        .values_list("action", "shown_at", "responded_at", "friction")[: max(limit, 0)]
    )


def confirmations_and_friction(principal_id: int, limit: int) -> tuple[list[Sample], bool]:
    """`recent_confirmations` and `friction_raised` together, in one query (a second only for
    a person with no confirmation yet): what an irreversible confirm reads of its person."""
    samples, raised = [], None
    for action, shown, responded, friction in _with_friction(principal_id, limit):
        samples.append(_sample(action, shown, responded))
        raised = friction == AuditKind.ATTENTION_FRICTION_RAISED
    if raised is None:
        return samples, friction_raised(principal_id)
    return samples, raised


def _seconds(shown: datetime | None, responded: datetime | None) -> float | None:
    if shown is None or responded is None:
        return None
    return (responded - shown).total_seconds()


def habit(principal_id: int) -> Habit:
    """The principal's habit now (one query)."""
    t = thresholds()
    return habit_of(recent_confirmations(principal_id, t.window), t)


def _friction_changes(principal_id: int) -> QuerySet[AuditEvent]:
    """The person's changes of friction, the latest first."""
    kinds = [Written(k.value) for k in FRICTION_KINDS]
    return AuditEvent.objects.filter(actor_user_id=principal_id, kind__in=kinds).order_by(
        "-created_at", "-id"
    )


def friction_raised(principal_id: int) -> bool:
    """Is friction raised for the person now, as the audit last recorded it (one query)?"""
    latest = _friction_changes(principal_id).values_list("kind", flat=True).first()
    return latest == AuditKind.ATTENTION_FRICTION_RAISED


def needs_habit(prompt: Prompt) -> bool:
    """Only an irreversible CONFIRM's acts depend on the person's habit."""
    return prompt.route == Route.CONFIRM and prompt.effective_risk == RiskClass.IRREVERSIBLE


def confirm_acts(prompt: Prompt, habit_now: Habit | None) -> Acts:
    """What confirming `prompt` needs beyond one click, given the person's habit now."""
    return acts_for(
        route=prompt.route,
        effective_risk=prompt.effective_risk,
        world_diff=prompt.world_diff,
        habit=habit_now,
    )


# --- /insights/ -----------------------------------------------------------------------------


@dataclass(frozen=True)
class FrictionChange:
    """Friction rose or fell back for one person, when, and the figures that made it."""

    person: str
    raised: bool
    at: datetime
    figures: dict[str, Any]

    @property
    def kept(self) -> Any:
        return self.figures.get("kept")

    @property
    def looked_at(self) -> Any:
        return self.figures.get("looked_at")

    @property
    def median_dwell_s(self) -> Any:
        return self.figures.get("median_dwell_s")


@dataclass(frozen=True)
class PersonFriction:
    person: str
    raised_now: bool
    latest: FrictionChange  # the change that put the person where they are
    times_raised: int


@dataclass(frozen=True)
class FrictionReport:
    changes: list[FrictionChange]  # newest first
    people: list[PersonFriction]  # raised now first, then by name

    @property
    def raised_now(self) -> int:
        return sum(1 for p in self.people if p.raised_now)

    @property
    def times_raised(self) -> int:
        return sum(1 for c in self.changes if c.raised)


def friction_report(limit: int = FRICTION_EVENTS_SHOWN) -> FrictionReport:
    """The latest changes of friction, overall and per person (a query per kind, newest first:
    each reads its kind's latest rows off one index, where a query of both kinds would walk the
    log newest first, all of it when they are rare)."""
    latest_of_each = [
        event
        for kind in FRICTION_KINDS
        for event in AuditEvent.objects.filter(kind=kind.value).values_list(
            "kind", "actor", "created_at", "data", "id"
        )[:limit]
    ]
    latest_of_each.sort(key=lambda event: (event[2], event[4]), reverse=True)
    events = [(kind, actor, at, data) for kind, actor, at, data, _ in latest_of_each[:limit]]
    changes = [
        FrictionChange(
            person=actor,
            raised=kind == AuditKind.ATTENTION_FRICTION_RAISED,
            at=created_at,
            figures=dict(data or {}),
        )
        for kind, actor, created_at, data in events
    ]
    latest: dict[str, FrictionChange] = {}
    raised: dict[str, int] = {}
    for change in changes:
        latest.setdefault(change.person, change)
        raised[change.person] = raised.get(change.person, 0) + change.raised
    people = [
        PersonFriction(person=name, raised_now=c.raised, latest=c, times_raised=raised.get(name, 0))
        for name, c in latest.items()
    ]
    people.sort(key=lambda p: (not p.raised_now, p.person))
    return FrictionReport(changes=changes, people=people)
