"""Reads for attention: a person's latest irreversible confirmations, what a confirm of a
prompt needs (`domain.attention.acts_for`), and the history of friction for /insights/.

The person's confirmations and latest change of friction, which an irreversible confirm and
its page read, are fixed SQL (named, with its figure, in the read layer's docstring; their
ORM versions are in `tests/oracles.py`, held equal by `tests/services/test_read_parity.py`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

from django.conf import settings

from beliefs.domain.attention import Acts, Habit, Sample, Thresholds, acts_for, habit_of
from beliefs.domain.policy import RiskClass, Route
from beliefs.domain.vocabulary import FRICTION_KINDS, AuditKind
from beliefs.models import AuditEvent, Prompt, PromptState, TaskInstance
from beliefs.selectors import rows

# /insights/ reads this many of the latest changes of friction.
FRICTION_EVENTS_SHOWN = 200


def thresholds() -> Thresholds:
    """The habituation thresholds from the settings."""
    return Thresholds(
        window=settings.CONSOLE_HABIT_WINDOW,
        kept_share=settings.CONSOLE_HABIT_KEPT_SHARE,
        median_dwell_s=settings.CONSOLE_HABIT_MEDIAN_DWELL_S,
    )


@cache
def _latest_friction_sql() -> str:
    """The kind of one person's latest change of friction (the parameter: the person), read
    off the friction events' own index (`audit_friction_by_person`: its condition, the kinds,
    is written into the text, where a parameter would keep a database from using it)."""
    col = rows.column
    kinds = ", ".join(f"'{kind.value}'" for kind in FRICTION_KINDS)
    return (
        f"SELECT {col(AuditEvent, 'kind', 'a')} FROM {rows.table(AuditEvent, 'a')}"
        f" WHERE {col(AuditEvent, 'actor_user', 'a')} = %s"
        f" AND {col(AuditEvent, 'kind', 'a')} IN ({kinds})"
        f" ORDER BY {col(AuditEvent, 'created_at', 'a')} DESC, {col(AuditEvent, 'id', 'a')} DESC"
        " LIMIT 1"
    )


@cache
def _confirmations_sql(with_friction: bool) -> str:
    """One person's answered irreversible confirmations, newest first, at most a limit of them:
    how each was answered, when it was shown and when answered; `with_friction`, beside each
    the kind of the person's latest change of friction (`_latest_friction_sql`, whose person
    is the first parameter). Then the person, the route, risk and state, and the limit."""
    col = rows.column
    friction = f", ({_latest_friction_sql()})" if with_friction else ""
    return (
        f"SELECT {col(Prompt, 'action')}, {col(Prompt, 'shown_at')},"
        f" {col(Prompt, 'responded_at')}{friction} FROM {rows.table(Prompt)}"
        f" INNER JOIN {rows.table(TaskInstance)}"
        f" ON {col(TaskInstance, 'id')} = {col(Prompt, 'instance')}"
        f" WHERE {col(TaskInstance, 'principal')} = %s AND {col(Prompt, 'route')} = %s"
        f" AND {col(Prompt, 'effective_risk')} = %s AND {col(Prompt, 'state')} = %s"
        f" AND {col(Prompt, 'responded_at')} IS NOT NULL"
        f" ORDER BY {col(Prompt, 'responded_at')} DESC, {col(Prompt, 'id')} DESC LIMIT %s"
    )


_SAMPLE_COLUMNS: rows.Fields = (
    (Prompt, "action"),
    (Prompt, "shown_at"),
    (Prompt, "responded_at"),
    (AuditEvent, "kind"),
)


def _confirmation_rows(principal_id: int, limit: int, with_friction: bool) -> list[list[Any]]:
    confirmed: list[Any] = [Route.CONFIRM, RiskClass.IRREVERSIBLE, PromptState.ANSWERED]
    params = [principal_id] if with_friction else []
    params += [principal_id, *confirmed, max(limit, 0)]
    columns = _SAMPLE_COLUMNS if with_friction else _SAMPLE_COLUMNS[:3]
    return rows.fetch(_confirmations_sql(with_friction), params, columns)


def _sample(action: str, shown: datetime | None, responded: datetime | None) -> Sample:
    return Sample(kept=action == "confirm", dwell_s=_seconds(shown, responded))


def recent_confirmations(principal_id: int, limit: int) -> list[Sample]:
    """The principal's latest answered irreversible confirmations, newest first (one query):
    each kept the value on record or replaced it, and how long it was shown before."""
    return [_sample(*row) for row in _confirmation_rows(principal_id, limit, False)]


def confirmations_and_friction(principal_id: int, limit: int) -> tuple[list[Sample], bool]:
    """`recent_confirmations` and `friction_raised` together, in one query (a second only for
    a person with no confirmation yet): what an irreversible confirm reads of its person."""
    samples, raised = [], None
    for action, shown, responded, friction in _confirmation_rows(principal_id, limit, True):
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


def friction_raised(principal_id: int) -> bool:
    """Is friction raised for the person now, as the audit last recorded it (one query)?"""
    found = rows.fetch(_latest_friction_sql(), [principal_id], ((AuditEvent, "kind"),))
    return bool(found) and found[0][0] == AuditKind.ATTENTION_FRICTION_RAISED


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
