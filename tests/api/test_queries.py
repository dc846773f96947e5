"""The API's reads run a number of queries that does not grow with the rows they return."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.support.api import API, Driver

pytestmark = pytest.mark.django_db


def _task_class(api: Driver, key: str, slots: int) -> None:
    keys = [f"s{i}" for i in range(slots)]
    api.register(
        key,
        slots=[{"key": k} for k in keys],
        decisions=[{"key": "act", "slots": keys}, {"key": "other", "slots": keys[:1]}],
        risks=dict.fromkeys(keys, "reversible"),
        decision_risks={"act": "irreversible", "other": "policy"},
    )


def _count(call: Any) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = call()
    assert response.status_code == 200, response.content
    return len(queries)


def _instance_with(api: Driver, key: str, slots: int) -> str:
    _task_class(api, key, slots)
    beliefs = [
        {"slot": f"s{i}", "value": i, "source": "tool", "world_ref": {"i": i}} for i in range(slots)
    ]
    instance_id = api.open(key, beliefs=beliefs)
    api.plan(instance_id)
    return instance_id


def test_it_reads_an_instance_in_constant_queries(api: Driver) -> None:
    small = _instance_with(api, "small", 2)
    large = _instance_with(api, "large", 12)
    for client in (api.runtime, api.person):
        counts = [
            _count(lambda i=i, c=client: c.get(f"{API}/instances/{i}/")) for i in (small, large)
        ]
        assert counts[0] == counts[1], counts


def test_it_lists_prompts_in_constant_queries(api: Driver) -> None:
    _instance_with(api, "small", 2)
    few = _count(lambda: api.person.get(f"{API}/prompts/"))
    _instance_with(api, "large", 12)
    many = _count(lambda: api.person.get(f"{API}/prompts/"))
    assert few == many


def test_it_reads_a_task_class_in_constant_queries(api: Driver) -> None:
    _task_class(api, "small", 2)
    _task_class(api, "large", 12)
    small = _count(lambda: api.runtime.get(f"{API}/task-classes/small/"))
    large = _count(lambda: api.runtime.get(f"{API}/task-classes/large/"))
    assert small == large


def test_it_replans_an_unchanged_instance_in_constant_queries(api: Driver) -> None:
    small = _instance_with(api, "small", 2)
    large = _instance_with(api, "large", 12)
    counts = [
        _count(lambda i=i: api.runtime.post_json(f"{API}/instances/{i}/plan/"))
        for i in (small, large)
    ]
    assert counts[0] == counts[1], counts


def _prompt_reads(call: Any) -> tuple[int, int]:
    """How many reads of open prompts `call` made, and how many queries in all."""
    with CaptureQueriesContext(connection) as queries:
        response = call()
    assert response.status_code == 200, response.content
    table = 'FROM "beliefs_prompt" WHERE'
    reads = [q["sql"] for q in queries if q["sql"].startswith("SELECT") and table in q["sql"]]
    return len(reads), len(queries)


def test_a_first_plan_reads_the_open_prompts_once_under_the_lock(api: Driver) -> None:
    _task_class(api, "first", 3)
    instance_id = api.open("first", beliefs=[{"slot": "s0", "value": 1, "source": "tool"}])
    plan = lambda: api.runtime.post_json(f"{API}/instances/{instance_id}/plan/")  # noqa: E731
    first, _ = _prompt_reads(plan)
    # Never planned: it has no plan to answer with unlocked, so its prompts are read once,
    # under the lock that plans it.
    assert first == 1
    again, _ = _prompt_reads(plan)
    assert again == 1  # planned and unchanged: read once, unlocked, and answered from them


def test_a_ready_instance_replans_without_reading_its_prompts(api: Driver) -> None:
    api.register("done", slots=[{"key": "s0"}], risks={"s0": "cosmetic"})
    instance_id = api.open("done", beliefs=[{"slot": "s0", "value": 1, "source": "user"}])
    assert api.plan(instance_id)["status"] == "ready"
    reads, queries = _prompt_reads(
        lambda: api.runtime.post_json(f"{API}/instances/{instance_id}/plan/")
    )
    assert reads == 0
    # The key, the instance, and its final plan (deferred: read to answer with it).
    assert queries == 3, queries
