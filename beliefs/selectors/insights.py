"""Convergence and fatigue figures for /insights/.

A constant number of queries whatever the volume: aggregates are computed in the database, and
only the dwell-time pairs (two timestamps a prompt) are brought back to take percentiles.

The figures describe the latest WINDOW planned instances and the latest WINDOW answered
prompts, read newest first through an index, so the page costs the same after years of history
(it measures how the console behaves now, which is what a classifier tunes).
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median

from django.db.models import Count

from beliefs.domain.policy import Route
from beliefs.models import Prompt, PromptState, TaskClass, TaskInstance


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
MAX_RUNS_SHOWN = 10
WINDOW = 1000


def convergence() -> list[Convergence]:
    """Blocking prompts per instance, by run number, for every task class (three queries).

    The window's instances are read first and their prompts counted by instance id: given the
    window as a subquery instead, PostgreSQL hashes it and scans every instance.
    """
    latest = list(
        TaskInstance.objects.filter(planned_at__isnull=False, run_number__lte=MAX_RUNS_SHOWN)
        .order_by("-planned_at")
        .values_list("pk", "task_class_id", "run_number")[:WINDOW]
    )
    blocking = dict(
        Prompt.objects.filter(instance_id__in=[pk for pk, _, _ in latest], blocking=True)
        .order_by()
        .values("instance_id")
        .annotate(n=Count("id"))
        .values_list("instance_id", "n")
    )
    totals: dict[tuple[int, int], list[int]] = {}
    for pk, task_class_id, run_number in latest:
        total = totals.setdefault((task_class_id, run_number), [0, 0])
        total[0] += 1
        total[1] += blocking.get(pk, 0)
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


def fatigue() -> Fatigue:
    """Dwell times and how often confirmations keep the old value (one query)."""
    latest = (
        Prompt.objects.filter(blocking=True, state=PromptState.ANSWERED, responded_at__isnull=False)
        .order_by("-responded_at")
        .values_list("shown_at", "responded_at", "route", "action", "world_diff")[:WINDOW]
    )
    answered = 0
    dwell: list[float] = []
    confirms = unchanged = changed_total = changed_kept = 0
    for shown, responded, route, action, diff in latest:
        answered += 1
        if shown is not None and responded is not None:
            dwell.append((responded - shown).total_seconds())
        if route != Route.CONFIRM.value:
            continue
        # Whether a stored diff shows a change is read in Python: JSON queries differ per
        # database.
        confirms += 1
        kept = action == "confirm"
        unchanged += kept
        if any(entry.get("change") != "unchanged" for entry in diff or []):
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
