"""What the instance page shows: the instance with its task class, principal and receipt, when
its latest belief was recorded, and every prompt with its slot and belief (`instance_page`); the
decisions it restates (`instance_decisions`); once it is finished, the next instance waiting for
the person (`next_waiting`). The page, its live updates and the answer to each click read them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.db.models import Max, OuterRef, Subquery

from beliefs.models import Belief, Decision, Prompt, TaskInstance
from beliefs.selectors.access import Owner
from beliefs.selectors.instances import instance_prompts


@dataclass(frozen=True)
class PageRead:
    """The instance with its task class, principal and receipt attached; every prompt of it in
    the page's order (`instance_prompts`'); when its latest belief was recorded (None: none)."""

    instance: TaskInstance
    prompts: list[Prompt]
    beliefs_at: datetime | None


def instance_page(instance_id: Any, *, principal_id: int) -> PageRead | None:
    """The instance page's read, if `principal_id` is the instance's principal; else None."""
    latest = Subquery(
        Belief.objects.filter(instance=OuterRef("pk"))
        .order_by()
        .values("instance")
        .annotate(at=Max("created_at"))
        .values("at")
    )
    instance = (
        TaskInstance.objects.select_related("task_class", "principal", "receipt")
        .annotate(beliefs_at=latest)
        .filter(Owner.of(principal_id=principal_id).q(), pk=instance_id)
        .first()
    )
    if instance is None:
        return None
    return PageRead(instance, instance_prompts(instance), instance.beliefs_at)


@dataclass(frozen=True)
class DecisionView:
    """A decision as the pages restate it: its key, its label and the keys of its slots."""

    key: str
    label: str
    slot_keys: frozenset[str]


def instance_decisions(instance: TaskInstance) -> list[DecisionView]:
    """The decisions of the instance's task class, each with its slots' keys, in declared
    order (one query): what the pages restate and check an answer against."""
    found = (
        Decision.objects.filter(task_class_id=instance.task_class_id)
        .order_by("id")
        .values_list("id", "key", "label", "slots__key")
    )
    decisions: dict[int, tuple[str, str, set[str]]] = {}
    for pk, key, label, slot_key in found:
        _, _, keys = decisions.setdefault(pk, (key, label, set()))
        if slot_key is not None:
            keys.add(slot_key)
    return [DecisionView(key, label, frozenset(keys)) for key, label, keys in decisions.values()]


def next_waiting(user: User, now: datetime, after: TaskInstance) -> TaskInstance | None:
    """The instance to go to once `after` is finished: the newest other one still waiting for
    this person (the inbox's first row, `after` left out), with its task class (of the
    instance itself, what the link to it shows: its id and run number)."""
    mine = TaskInstance.objects.select_related("task_class").filter(principal=user)
    return mine.waiting(now).exclude(pk=after.pk).order_by("-created_at").first()
