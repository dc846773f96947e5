"""Planning's read of an action's slots stays linear in the slots on PostgreSQL, whatever the
statistics: the action's keys are read once (not compared with every slot in turn, as a nested
loop over `IN (SELECT ...)` did), and each carried belief's time is read by its key (not by
hashing the belief table again for every slot, as a join did on a table of few rows)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection

from beliefs.models import TaskInstance
from beliefs.selectors import beliefs as fast_beliefs
from beliefs.selectors import rows
from tests.support.api import Driver

SLOTS = 40

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="PostgreSQL's plans (SQLite's are fixed by hints)"
)


def _nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", []):
        yield from _nodes(child)


def _executed(instance: TaskInstance) -> list[dict[str, Any]]:
    """Every node of the plan the database ran the read with, with its actual loops."""
    sql = fast_beliefs._slot_rows_sql(rows.vendor())
    params = fast_beliefs._slot_rows_params(instance)
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}", params)
        (plan,) = cursor.fetchone()
    if isinstance(plan, str):
        plan = json.loads(plan)
    return list(_nodes(plan[0]["Plan"]))


@pytest.mark.django_db
def test_the_slots_read_is_linear_in_the_slots(api: Driver, alice: User) -> None:
    keys = [f"s{i:02d}" for i in range(SLOTS)]
    api.register(
        "wide",
        [{"key": k, "label": k} for k in keys],
        [{"key": "act", "label": "Act", "slots": keys}],
        risks=dict.fromkeys(keys, "reversible"),
        decision_risks={"act": "irreversible"},
    )
    beliefs = [{"slot": k, "value": k, "source": "user", "world_ref": {"v": 1}} for k in keys]
    api.plan(api.open("wide", world=dict.fromkeys(keys, {"v": 1}), beliefs=beliefs))
    second = api.open("wide", world=dict.fromkeys(keys, {"v": 2}))
    api.plan(second)
    instance = TaskInstance.objects.get(pk=second)

    # As the tables are right after writing (no statistics), and once analysed.
    for analysed in (False, True):
        if analysed:
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE")
        nodes = _executed(instance)
        assert sum(n.get("Actual Rows", 0) for n in nodes if n["Node Type"] == "Sort") >= SLOTS
        for node in nodes:
            if node["Node Type"] in ("ProjectSet", "Function Scan"):  # the action's keys
                assert node["Actual Loops"] == 1, (analysed, node)
            if node["Node Type"] == "Hash Join" and node["Actual Loops"] > 1:
                hashed = {n.get("Relation Name") for n in _nodes(node)}
                assert "beliefs_belief" not in hashed, (analysed, node)
