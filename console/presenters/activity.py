"""The audit log as a classifier reads it: its filters, a page count that stops at a cap, and
each event's change on one line."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from django.core.paginator import Paginator

from beliefs.models import AuditEvent

# The log only grows, so nothing on its page may read all of it: the count stops at this many
# events ("10000+").
ACTIVITY_COUNT_CAP = 10_000


@dataclass(frozen=True)
class ActivityFilter:
    """One of the audit log's filters: a query parameter chosen from a list."""

    name: str
    label: str
    blank: str  # what the choice that filters nothing says
    choices: list[str]
    selected: str

    @property
    def dom_id(self) -> str:
        return "filter-" + self.name.replace("_", "-")


class CappedPaginator(Paginator):
    """Counts at most ACTIVITY_COUNT_CAP + 1 rows; `capped` says the true count is higher."""

    capped = False

    @cached_property
    def count(self) -> int:
        counted: int = self.object_list[: ACTIVITY_COUNT_CAP + 1].count()  # type: ignore[attr-defined]  # a QuerySet here
        self.capped = counted > ACTIVITY_COUNT_CAP
        return min(counted, ACTIVITY_COUNT_CAP)


@dataclass(frozen=True)
class EventRow:
    event: AuditEvent
    before: str
    after: str
    reason: str
    has_change: bool
    other: dict[str, Any]


BRIEF_LENGTH = 80


def _brief(value: Any) -> str:
    """A before/after value on one line: text as it is, anything else as JSON, cut short."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return (
        text if len(text) <= BRIEF_LENGTH else text[: BRIEF_LENGTH - 1] + "\N{HORIZONTAL ELLIPSIS}"
    )


def event_row(event: AuditEvent) -> EventRow:
    data = event.data if isinstance(event.data, dict) else {"data": event.data}
    shown = {"before", "after", "reason"}
    return EventRow(
        event=event,
        before=_brief(data.get("before")),
        after=_brief(data.get("after")),
        reason=str(data.get("reason") or ""),
        has_change="before" in data or "after" in data,
        other={k: v for k, v in data.items() if k not in shown},
    )
