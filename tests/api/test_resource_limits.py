"""Limits on what one runtime can make the console hold: slots and decisions per task class,
beliefs per open, open instances per person and runtime. Each is refused with a 400 (or 409)
naming the limit, before any work that grows with it, and writes nothing."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection, connections
from django.test import override_settings

from beliefs import schemas as s
from beliefs.errors import TooManyOpenInstances
from beliefs.models import Belief, Decision, InstanceStatus, RuntimeAPIKey, Slot, TaskInstance
from beliefs.services.audit import Actor
from tests.builders import open_instance, register_task_class
from tests.conftest import JsonClient, runtime_key_of
from tests.support.api import API, Driver

pytestmark = pytest.mark.django_db

SMALL = override_settings(
    CONSOLE_MAX_SLOTS_PER_TASK_CLASS=3,
    CONSOLE_MAX_DECISIONS_PER_TASK_CLASS=2,
    CONSOLE_MAX_OPEN_INSTANCES=2,
)


def _slots(count: int, prefix: str = "s") -> list[dict[str, Any]]:
    return [{"key": f"{prefix}{i}"} for i in range(count)]


def _put(runtime: JsonClient, key: str, **body: Any) -> Any:
    return runtime.put_json(f"{API}/task-classes/{key}/", {"name": key, **body})


def _refused(response: Any, field: str, words: str) -> dict[str, Any]:
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["error"] == "limit_exceeded"
    assert words in body["detail"]
    assert field in body["fields"] and words in body["fields"][field][0]
    return body


# --- slots and decisions per task class ----------------------------------------------------


def test_it_refuses_20000_slots_while_validating_before_reading_any_of_them(
    runtime: JsonClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    read: list[Any] = []
    monkeypatch.setattr(s.SlotIn, "run_validation", lambda self, data: read.append(data))

    def must_not_run(**kwargs: Any) -> None:
        raise AssertionError("the service ran")

    from beliefs.api import views

    # Where the API's view finds the service.
    monkeypatch.setattr(views, "task_class_register", must_not_run)
    response = _put(runtime, "huge", slots=_slots(20_000))
    body = _refused(response, "slots", "at most 300 slots")
    assert "CONSOLE_MAX_SLOTS_PER_TASK_CLASS" in body["detail"]
    assert "20000" in body["detail"]
    assert read == []  # refused by the list's length: no slot was validated
    assert not Slot.objects.exists()


@SMALL
@pytest.mark.parametrize("count", [0, 1, 3])
def test_it_accepts_a_registration_up_to_the_slot_limit(runtime: JsonClient, count: int) -> None:
    assert _put(runtime, "ok", slots=_slots(count)).status_code == 200
    assert Slot.objects.filter(task_class__key="ok").count() == count


@SMALL
def test_it_refuses_one_slot_over_the_limit(runtime: JsonClient) -> None:
    _refused(_put(runtime, "over", slots=_slots(4)), "slots", "at most 3 slots")
    assert not Slot.objects.exists()


@SMALL
def test_it_counts_the_slots_already_registered(runtime: JsonClient) -> None:
    assert _put(runtime, "grows", slots=_slots(2)).status_code == 200
    # Naming the existing slots again adds nothing: allowed, and their labels change.
    relabel = [{"key": "s0", "label": "First"}, {"key": "s1", "label": "Second"}]
    assert _put(runtime, "grows", slots=[*relabel, {"key": "t0"}]).status_code == 200
    response = _put(runtime, "grows", slots=[{"key": "t1", "label": "One too many"}])
    _refused(response, "slots", "at most 3 slots")
    assert "would make 4" in response.json()["detail"]
    assert sorted(Slot.objects.values_list("key", flat=True)) == ["s0", "s1", "t0"]
    assert Slot.objects.get(key="s0").label == "First"


@SMALL
def test_it_refuses_decisions_over_the_limit_in_one_body_and_across_bodies(
    runtime: JsonClient,
) -> None:
    decisions = [{"key": f"d{i}", "slots": ["s0"]} for i in range(3)]
    _refused(_put(runtime, "acts", slots=_slots(1), decisions=decisions), "decisions", "at most 2")
    assert not Decision.objects.exists()
    assert _put(runtime, "acts", slots=_slots(1), decisions=decisions[:2]).status_code == 200
    response = _put(runtime, "acts", decisions=decisions[2:])
    _refused(response, "decisions", "at most 2 decisions")
    assert Decision.objects.count() == 2


@SMALL
def test_it_refuses_a_decision_naming_more_slots_than_a_class_may_have(
    runtime: JsonClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    read: list[Any] = []
    monkeypatch.setattr(s.DecisionIn, "run_validation", lambda self, data: read.append(data))
    decision = {"key": "d", "slots": ["s0"] * 20_000}
    response = _put(runtime, "acts", slots=_slots(1), decisions=[decision])
    _refused(response, "decisions[0].slots", "a decision has at most 3 slots")
    assert read == []
    assert not Slot.objects.exists()


@SMALL
def test_it_refuses_a_belief_that_would_register_a_slot_over_the_limit(
    api: Driver, alice: User
) -> None:
    _put(api.runtime, "full", slots=_slots(3), open_slots=True)  # beliefs may grow it
    instance_id = api.open("full")
    response = api.runtime.post_json(
        f"{API}/instances/{instance_id}/beliefs/",
        {"slot": "undeclared", "value": 1, "source": "tool"},
    )
    _refused(response, "slot", "at most 3 slots")
    assert not Slot.objects.filter(key="undeclared").exists()
    assert not Belief.objects.exists()
    # A belief for a declared slot is still recorded.
    response = api.runtime.post_json(
        f"{API}/instances/{instance_id}/beliefs/", {"slot": "s0", "value": 1, "source": "tool"}
    )
    assert response.status_code == 201, response.json()


@SMALL
def test_it_refuses_an_open_whose_beliefs_register_slots_over_the_limit(
    api: Driver, alice: User
) -> None:
    _put(api.runtime, "almost", slots=_slots(2), open_slots=True)
    beliefs = [{"slot": key, "value": 1, "source": "tool"} for key in ("s0", "new1", "new2")]
    response = api.runtime.post_json(
        f"{API}/instances/", {"task_class": "almost", "principal": "alice", "beliefs": beliefs}
    )
    _refused(response, "slot", "at most 3 slots")
    assert Slot.objects.count() == 2
    assert not TaskInstance.objects.exists()  # the whole open rolled back


def test_it_refuses_an_open_with_more_beliefs_than_slots_allowed_before_reading_them(
    api: Driver, alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    read: list[Any] = []
    monkeypatch.setattr(s.BeliefIn, "run_validation", lambda self, data: read.append(data))
    _put(api.runtime, "t", slots=_slots(1))
    beliefs = [{"slot": "s0", "value": i, "source": "tool"} for i in range(301)]
    response = api.runtime.post_json(
        f"{API}/instances/", {"task_class": "t", "principal": "alice", "beliefs": beliefs}
    )
    _refused(response, "beliefs", "at most 300 beliefs")
    assert read == []
    assert not TaskInstance.objects.exists()


# --- open instances per person and runtime -------------------------------------------------


def _open(runtime: JsonClient, principal: str = "alice") -> Any:
    return runtime.post_json(f"{API}/instances/", {"task_class": "t", "principal": principal})


@pytest.fixture
def small_class(runtime: JsonClient) -> str:
    assert _put(runtime, "t", slots=_slots(1)).status_code == 200
    return "t"


@SMALL
def test_it_refuses_an_open_past_the_limit_with_409_naming_it(
    runtime: JsonClient, small_class: str, alice: User
) -> None:
    assert _open(runtime).status_code == 201
    assert _open(runtime).status_code == 201
    response = _open(runtime)
    assert response.status_code == 409
    body = response.json()
    assert body["error"] == "too_many_open_instances"
    assert "at most 2 open instances" in body["detail"]
    assert "CONSOLE_MAX_OPEN_INSTANCES" in body["detail"]
    assert body["fields"] == {"principal": [body["fields"]["principal"][0]]}
    assert TaskInstance.objects.count() == 2


@SMALL
def test_it_counts_per_person_and_per_runtime(
    runtime: JsonClient, small_class: str, alice: User, mallory: User
) -> None:
    for _ in range(2):
        assert _open(runtime).status_code == 201
    assert _open(runtime).status_code == 409
    assert _open(runtime, "mallory").status_code == 201  # another person
    other = JsonClient()
    other.credentials(HTTP_AUTHORIZATION=f"Api-Key {runtime_key_of('other-runtime')[1]}")
    shared = runtime.put_json(f"{API}/task-classes/{small_class}/shares/other-runtime/", {})
    assert shared.status_code == 200
    assert _open(other).status_code == 201  # another runtime, for the same person


@SMALL
@pytest.mark.parametrize("status", list(InstanceStatus.values))
def test_it_counts_exactly_the_open_and_awaiting_instances(
    runtime: JsonClient, small_class: str, alice: User, status: str
) -> None:
    assert _open(runtime).status_code == 201
    assert _open(runtime).status_code == 201
    TaskInstance.objects.filter(pk=TaskInstance.objects.order_by("created_at")[0].pk).update(
        status=status
    )
    counts = status in InstanceStatus.open()  # awaiting approval is still open
    assert _open(runtime).status_code == (409 if counts else 201)


@SMALL
def test_it_opens_again_once_one_is_cancelled(
    runtime: JsonClient, small_class: str, alice: User
) -> None:
    ids = [_open(runtime).json()["id"] for _ in range(2)]
    assert _open(runtime).status_code == 409
    assert runtime.post_json(f"{API}/instances/{ids[0]}/cancel/").status_code == 200
    assert _open(runtime).status_code == 201


@SMALL
def test_an_idempotent_replay_is_not_a_new_open(
    runtime: JsonClient, small_class: str, alice: User
) -> None:
    assert _open(runtime).status_code == 201
    body = {"task_class": "t", "principal": "alice"}
    first = runtime.post_json(f"{API}/instances/", body, HTTP_IDEMPOTENCY_KEY="k")
    assert first.status_code == 201
    again = runtime.post_json(f"{API}/instances/", body, HTTP_IDEMPOTENCY_KEY="k")
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"]


@pytest.mark.postgres
@pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="needs PostgreSQL row locks; SQLite serialises writers",
)
@pytest.mark.django_db(transaction=True)
@override_settings(CONSOLE_MAX_OPEN_INSTANCES=3)
def test_racing_opens_never_pass_the_limit(
    runtime_key: tuple[RuntimeAPIKey, str], alice: User
) -> None:
    actor = Actor(key=runtime_key[0])
    register_task_class(key="t", slots=[{"key": "s0"}], actor=actor)
    barrier = threading.Barrier(8)
    results: list[Any] = [None] * 8

    def run(index: int) -> None:
        try:
            barrier.wait(timeout=10)
            results[index] = open_instance(task_class_key="t", principal="alice", actor=actor)
        except Exception as exc:  # noqa: BLE001 - the test inspects what each thread got
            results[index] = exc
        finally:
            connections.close_all()

    threads: list[threading.Thread] = [
        threading.Thread(target=run, args=(i,)) for i in range(len(results))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not any(thread.is_alive() for thread in threads)
    opened = [r for r in results if isinstance(r, TaskInstance)]
    refused = [r for r in results if isinstance(r, TooManyOpenInstances)]
    assert (len(opened), len(refused)) == (3, 5), results
    assert TaskInstance.objects.filter(principal=alice).count() == 3
