"""Convergence and fatigue figures for /insights/.

A constant number of queries whatever the volume. The figures describe the latest WINDOW
planned instances and the latest WINDOW answered prompts, read newest first through an index,
so the page costs the same after years of history (it measures how the console behaves now,
which is what a classifier tunes).

What each window row needs is computed by the database and comes back as plain numbers and
short strings: a planned instance as its task class, run number and count of blocking prompts;
an answered prompt as its dwell in seconds, route, action and whether its world diff showed a
change. Decoding a thousand timestamps, UUIDs and JSON documents in Python per page view cost
several times the queries themselves.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from statistics import median
from typing import Any

from django.db import connection

from beliefs.domain.policy import Route
from beliefs.domain.vocabulary import INSIGHTS_RUNS_SHOWN
from beliefs.models import Prompt, PromptState, TaskClass, TaskInstance
from beliefs.selectors import rows


@dataclass(frozen=True)
class RunPoint:
    run_number: int
    instances: int
    blocking_per_instance: float


@dataclass(frozen=True)
class Convergence:
    task_class: TaskClass
    points: list[RunPoint]

    @property
    def peak(self) -> float:
        return max((p.blocking_per_instance for p in self.points), default=0.0)


@dataclass(frozen=True)
class Fatigue:
    answered_blocking: int
    dwell_median_s: float | None
    dwell_p90_s: float | None
    fast_answers: int  # answered within FAST_SECONDS of being shown
    confirms: int
    confirms_unchanged: int  # CONFIRM answered with "confirm", not "edit"
    confirms_world_changed: int  # ... of which the world diff showed a change
    confirms_world_changed_unchanged: int  # and the person still kept the old value

    @property
    def unchanged_confirm_rate(self) -> float | None:
        return self.confirms_unchanged / self.confirms if self.confirms else None

    @property
    def kept_despite_change_rate(self) -> float | None:
        if not self.confirms_world_changed:
            return None
        return self.confirms_world_changed_unchanged / self.confirms_world_changed


FAST_SECONDS = 2.0
WINDOW = 1000


@cache
def _convergence_sql() -> str:
    """Instances and their blocking prompts per (task class, run) over the window: the window
    read through the partial index that holds only planned instances of the first runs (its
    condition written out as the index has it, so every database sees it is usable), summed by
    the database, so a few rows come back whatever the window's size."""
    col = rows.column
    window = (
        f"SELECT {col(TaskInstance, 'task_class')} AS task_class_id,"
        f" {col(TaskInstance, 'run_number')} AS run_number,"
        f" {col(TaskInstance, 'blocking_asked')} AS asked"
        f" FROM {rows.table(TaskInstance)}"
        f" WHERE {col(TaskInstance, 'planned_at')} IS NOT NULL"
        f" AND {col(TaskInstance, 'run_number')} <= {int(INSIGHTS_RUNS_SHOWN)}"
        f" ORDER BY {col(TaskInstance, 'planned_at')} DESC LIMIT %s"
    )
    return (
        f"SELECT task_class_id, run_number, COUNT(*), SUM(asked) FROM ({window}) AS w"
        " GROUP BY task_class_id, run_number ORDER BY task_class_id, run_number"
    )


def convergence() -> list[Convergence]:
    """Blocking prompts per instance, by run number, for every task class (two queries).

    Each instance brings the count of its blocking prompts that planning keeps on it, so no
    prompt is read. Fixed SQL; `tests.oracles.convergence` is the same read through the ORM.
    """
    with connection.cursor() as cursor:
        cursor.execute(_convergence_sql(), [WINDOW])
        totals = {(tc, run): (int(n), int(asked)) for tc, run, n, asked in cursor.fetchall()}
    return convergence_of(totals)


def convergence_of(totals: dict[tuple[int, int], tuple[int, int]]) -> list[Convergence]:
    """`convergence` from (task class id, run number) -> (instances, their blocking prompts)."""
    by_class: dict[int, list[RunPoint]] = {}
    for (task_class_id, run_number), (instances, prompts) in sorted(totals.items()):
        by_class.setdefault(task_class_id, []).append(
            RunPoint(
                run_number=run_number,
                instances=instances,
                blocking_per_instance=prompts / instances,
            )
        )
    classes = TaskClass.objects.filter(pk__in=by_class).order_by("key")
    return [Convergence(task_class=tc, points=by_class[tc.pk]) for tc in classes]


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


# Seconds from shown to answered, exact to the microsecond as `timedelta.total_seconds()` gives
# them: one division of whole microseconds. SQLite stores "YYYY-MM-DD HH:MM:SS[.ffffff]" in UTC;
# its date functions would round the fraction to milliseconds, so whole seconds and
# microseconds are read apart.
_DWELL_SQL = {
    "postgresql": (
        'EXTRACT(EPOCH FROM ("beliefs_prompt"."responded_at" - "beliefs_prompt"."shown_at"))'
        "::float8"
    ),
    "sqlite": (
        '((CAST(strftime(\'%%s\', substr("beliefs_prompt"."responded_at", 1, 19)) AS INTEGER)'
        ' - CAST(strftime(\'%%s\', substr("beliefs_prompt"."shown_at", 1, 19)) AS INTEGER))'
        " * 1000000"
        ' + CAST(substr("beliefs_prompt"."responded_at" || \'.000000\', 21, 6) AS INTEGER)'
        ' - CAST(substr("beliefs_prompt"."shown_at" || \'.000000\', 21, 6) AS INTEGER))'
        " / 1000000.0"
    ),
}
# 1 when an entry of the world diff is anything but unchanged (an entry without "change"
# counts as a change), else 0; a missing diff shows none.
_WORLD_CHANGED_SQL = {
    "postgresql": (
        "CASE WHEN EXISTS (SELECT 1 FROM jsonb_array_elements("
        'COALESCE("beliefs_prompt"."world_diff", \'[]\'::jsonb)) AS e'
        " WHERE e ->> 'change' IS DISTINCT FROM 'unchanged') THEN 1 ELSE 0 END"
    ),
    "sqlite": (
        "CASE WHEN EXISTS (SELECT 1 FROM json_each("
        'COALESCE("beliefs_prompt"."world_diff", \'[]\')) AS e'
        " WHERE json_extract(e.value, '$.change') IS NOT 'unchanged') THEN 1 ELSE 0 END"
    ),
}


@cache
def _fatigue_sql(vendor: str) -> str:
    """The window of answered blocking prompts, newest first through the responded_at index,
    each as its dwell, route, action and whether its world diff showed a change."""
    col = rows.column
    return (
        f"SELECT {_DWELL_SQL[vendor]}, {col(Prompt, 'route')}, {col(Prompt, 'action')},"
        f" {_WORLD_CHANGED_SQL[vendor]} FROM {rows.table(Prompt)}"
        f" WHERE {col(Prompt, 'blocking')} AND {col(Prompt, 'state')} = %s"
        f" AND {col(Prompt, 'responded_at')} IS NOT NULL"
        f" ORDER BY {col(Prompt, 'responded_at')} DESC LIMIT %s"
    )


def fatigue() -> Fatigue:
    """Dwell times and how often confirmations keep the old value (one query of fixed SQL;
    `tests.oracles.fatigue` is the same read through the ORM)."""
    with connection.cursor() as cursor:
        cursor.execute(_fatigue_sql(connection.vendor), [PromptState.ANSWERED, WINDOW])
        latest = cursor.fetchall()
    return fatigue_of(latest)


def fatigue_of(latest: Iterable[tuple[float | None, str, str, Any]]) -> Fatigue:
    """`fatigue` from the window's answered blocking prompts, each as (seconds from shown to
    answered or None, route, action, whether its world diff showed a change)."""
    answered = 0
    dwell: list[float] = []
    confirms = unchanged = changed_total = changed_kept = 0
    for seconds, route, action, changed in latest:
        answered += 1
        if seconds is not None:  # NULL when it was never shown
            dwell.append(float(seconds))
        if route != Route.CONFIRM:
            continue
        confirms += 1
        kept = action == "confirm"
        unchanged += kept
        if changed:
            changed_total += 1
            changed_kept += kept
    return Fatigue(
        answered_blocking=answered,
        dwell_median_s=median(dwell) if dwell else None,
        dwell_p90_s=_percentile(dwell, 0.9) if dwell else None,
        fast_answers=sum(1 for d in dwell if d < FAST_SECONDS),
        confirms=confirms,
        confirms_unchanged=unchanged,
        confirms_world_changed=changed_total,
        confirms_world_changed_unchanged=changed_kept,
    )
