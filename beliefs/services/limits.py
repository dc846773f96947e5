"""How much one runtime may make the console hold: each limit is a setting with its refusal.

Each limit bounds work that grows with it (a person's page with 10,000 prompts, a registration
of 20,000 slots), so each is checked before that work: a request body's lists by their length
before any element is validated (`body_problems`), the task class's totals in the service
before anything is written.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from beliefs.errors import LimitExceeded, TooManyOpenInstances


@dataclass(frozen=True)
class Limit:
    setting: str
    what: str  # "a task class has at most {n} slots"

    @property
    def value(self) -> int:
        return int(getattr(settings, self.setting))

    def message(self, count: int | None = None) -> str:
        said = f"{self.what.format(n=self.value)} ({self.setting})"
        return said if count is None else f"{said}; this would make {count}"

    def exceeded(self, field: str, count: int) -> LimitExceeded:
        message = self.message(count)
        return LimitExceeded(f"{field}: {message}", fields={field: [message]})

    def check(self, field: str, count: int) -> None:
        if count > self.value:
            raise self.exceeded(field, count)


SLOTS = Limit("CONSOLE_MAX_SLOTS_PER_TASK_CLASS", "a task class has at most {n} slots")
DECISIONS = Limit("CONSOLE_MAX_DECISIONS_PER_TASK_CLASS", "a task class has at most {n} decisions")
# A decision's slots are the class's, so the slots limit bounds them too.
DECISION_SLOTS = Limit("CONSOLE_MAX_SLOTS_PER_TASK_CLASS", "a decision has at most {n} slots")
# One belief per slot is all an open needs, so the slots limit bounds an open's beliefs.
OPENING_BELIEFS = Limit(
    "CONSOLE_MAX_SLOTS_PER_TASK_CLASS", "an open records at most {n} beliefs (one per slot)"
)
OPEN_INSTANCES = Limit(
    "CONSOLE_MAX_OPEN_INSTANCES",
    "a person has at most {n} open instances (open or awaiting them) from one runtime",
)


def body_problems(data: Mapping[str, Any], lists: Mapping[str, Limit]) -> dict[str, list[str]]:
    """{field: [message]} for each of `lists` (field → limit) that the raw body makes too
    long, and for each decision's `slots`: only lengths are read, nothing is validated."""
    problems: dict[str, list[str]] = {}
    for field, limit in lists.items():
        items = data.get(field)
        if isinstance(items, list) and len(items) > limit.value:
            problems[field] = [limit.message(len(items))]
    decisions = data.get("decisions")
    if "decisions" in lists and isinstance(decisions, list) and "decisions" not in problems:
        for index, decision in enumerate(decisions):
            slots = decision.get("slots") if isinstance(decision, Mapping) else None
            if isinstance(slots, list) and len(slots) > DECISION_SLOTS.value:
                problems[f"decisions[{index}].slots"] = [DECISION_SLOTS.message(len(slots))]
    return problems


def check_open_instances(count: int) -> None:
    """Refuse one more open instance when the person already has `count` from this runtime."""
    if count >= OPEN_INSTANCES.value:
        raise TooManyOpenInstances(
            f"principal: {OPEN_INSTANCES.message()}. Cancel some, or wait until the person "
            "answers them, before opening another.",
            fields={"principal": [OPEN_INSTANCES.message()]},
        )
