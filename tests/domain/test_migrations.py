"""Data migrations fill what they add from the rows already there."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.apps.registry import Apps
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = ("beliefs", "0010_insights_early_runs_index")
AFTER = ("beliefs", "0011_instance_blocking_asked")


def _migrate(*targets: tuple[str, str]) -> Apps:
    """Migrate to `targets` (the latest migrations when none) and return the models there."""
    executor = MigrationExecutor(connection)
    chosen = list(targets) or executor.loader.graph.leaf_nodes()
    executor.migrate(chosen)
    return MigrationExecutor(connection).loader.project_state(chosen).apps


@pytest.fixture
def at_the_latest_afterwards() -> Iterator[None]:
    yield
    _migrate()


@pytest.mark.usefixtures("at_the_latest_afterwards")
def test_blocking_asked_starts_as_the_count_of_each_instances_blocking_prompts() -> None:
    old = _migrate(BEFORE)
    user = old.get_model("auth", "User").objects.create(username="p")
    task_class = old.get_model("beliefs", "TaskClass").objects.create(key="c", name="c")
    slots = [
        old.get_model("beliefs", "Slot").objects.create(task_class=task_class, key=k, label=k)
        for k in ("a", "b", "c")
    ]
    Instance = old.get_model("beliefs", "TaskInstance")
    Prompt = old.get_model("beliefs", "Prompt")
    asked = {}
    for run, blocking in enumerate([(True, True, False), (False, False), (True,), ()], 1):
        instance = Instance.objects.create(task_class=task_class, principal=user, run_number=run)
        for slot, flag in zip(slots, blocking, strict=False):
            Prompt.objects.create(
                instance=instance, slot=slot, route="ASK", rule="R1", reason="", blocking=flag,
                effective_risk="irreversible", risk_reason="", state="superseded",
            )  # fmt: skip
        asked[instance.pk] = sum(blocking)

    new = _migrate(AFTER)
    kept = new.get_model("beliefs", "TaskInstance").objects.values_list("pk", "blocking_asked")
    assert dict(kept) == asked
    assert sorted(asked.values()) == [0, 0, 1, 2]
