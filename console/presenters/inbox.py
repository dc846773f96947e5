"""An inbox row as a person triages it: who asks, what is at stake (the values that feed the
action's decisions), how many answers it needs, how many details changed, and when it expires.

Rows of one task class differ by what they would do: each shows its decisive values, so "Refund
a customer" for 12.00 to Bob does not read like the one for 1,200.00 to an unknown account.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from beliefs.models import PromptState, TaskInstance
from beliefs.selectors.quorum import Standing
from console.presenters.restatement import Part, value_parts
from console.presenters.words import UNKNOWN_RUNTIME

# Values shown per row, and characters per value: a row is read at a glance.
ROW_VALUES = 4
ROW_VALUE_CHARS = 40


@dataclass(frozen=True)
class InboxRow:
    instance: TaskInstance
    asked_by: str  # the runtime's name (untrusted, shown with `|shown`)
    values: list[Part]  # the decisive values, clamped
    more_values: int  # decisive values not shown
    changed: int  # details of the world that changed since the values were given
    blocking_count: int
    assumption_count: int
    next_expiry: datetime | None
    # Waiting for its approvers: who approved, how many are missing, until when.
    standing: Standing | None = None
    # Done on a runtime's report: how many values it bound so, each with a veto.
    reported_count: int = 0

    @property
    def pk(self) -> Any:  # noqa: ANN401 - the instance's UUID
        return self.instance.pk

    def shown(self) -> list[Any]:
        """What the row shows, for the inbox's live digest."""
        return [
            str(self.pk),
            self.asked_by,
            [[p.label, p.text, p.pending, p.flagged, p.mixed] for p in self.values],
            self.more_values,
            self.changed,
            self.blocking_count,
            self.assumption_count,
            self.next_expiry,
            self.instance.status,  # awaiting its answers or its signature
            self.instance.signature_due_at,
            [self.standing.approved_by, self.standing.missing, self.standing.expires_at]
            if self.standing
            else None,
        ]


def decisive_keys(instance: TaskInstance) -> set[str]:
    """The slots that feed a decision of the instance's class (its decisions' slots
    prefetched); every slot of the action where none is declared."""
    keys = {s.key for d in instance.task_class.decisions.all() for s in d.slots.all()}
    return keys or {item["slot"] for item in instance.plan_items or []}


def changed_details(instance: TaskInstance) -> int:
    """The changed keys of the world diffs the person is shown (the open prompts')."""
    return sum(
        1
        for item in instance.plan_items or []
        if item.get("prompt") and item["prompt"].get("state") == PromptState.OPEN
        for entry in item.get("world_diff") or []
        if entry.get("change") != "unchanged"
    )


def _clamp(text: str) -> str:
    return text if len(text) <= ROW_VALUE_CHARS else text[: ROW_VALUE_CHARS - 1] + "…"


def display_label(label: Any) -> str:  # noqa: ANN401 - a label as stored (text)
    return label if isinstance(label, str) else str(label)


def inbox_row(  # noqa: ANN401 - an annotated `inbox_instances` row, or another instance
    instance: Any, standing: Standing | None = None, reported: int = 0
) -> InboxRow:
    """A row of the inbox: an `inbox_instances` row (annotated with its counts and expiry), or
    any other instance of the person's with its task class's decisions prefetched (waiting
    for approvers, with its `standing`; recently finished)."""
    parts = value_parts(instance, decisive_keys(instance), ROW_VALUE_CHARS).values()
    values = [replace(p, label=_clamp(display_label(p.label))) for p in parts]
    runtime = instance.runtime
    return InboxRow(
        instance=instance,
        asked_by=runtime.name if runtime is not None and runtime.name else UNKNOWN_RUNTIME,
        values=values[:ROW_VALUES],
        more_values=max(len(values) - ROW_VALUES, 0),
        changed=changed_details(instance),
        blocking_count=getattr(instance, "blocking_count", 0),
        assumption_count=getattr(instance, "assumption_count", 0),
        next_expiry=getattr(instance, "next_expiry", None),
        standing=standing,
        reported_count=reported,
    )
