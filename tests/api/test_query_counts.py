"""Every operation and page runs the same queries at 5 and at 200 slots, the first
plan included: planning writes its prompts in one statement, whatever their number."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from beliefs.models import AuditEvent, Belief, Prompt
from beliefs.roles import CLASSIFIERS_GROUP, REVIEWERS_GROUP, grant_role
from tests.conftest import notify_queries
from tests.support.api import API, Driver

pytestmark = pytest.mark.django_db

SLOT_COUNTS = [5, 200]


def _history(api: Driver, slots: int) -> str:
    """Run 1 with the person's values for every slot, then run 2 opened with a tool's belief
    for every slot (its first plan confirms each: one prompt per slot); returns run 2's id."""
    keys = [f"s{i}" for i in range(slots)]
    api.register(
        "many",
        slots=[{"key": k} for k in keys],
        decisions=[{"key": "act", "slots": keys}],
        risks=dict.fromkeys(keys, "irreversible"),
        decision_risks={"act": "irreversible"},
    )

    def beliefs(value: str, source: str) -> list[dict[str, Any]]:
        return [{"slot": k, "value": value, "source": source, "world_ref": {"v": 1}} for k in keys]

    api.open("many", beliefs=beliefs("old", "user"))
    return api.open("many", world={k: {"v": 2} for k in keys}, beliefs=beliefs("new", "tool"))


@pytest.fixture
def staff(carol: User, rita: User) -> Client:
    """A classifier who is also a reviewer: every staff page opens for them."""
    grant_role(carol, REVIEWERS_GROUP)
    grant_role(carol, CLASSIFIERS_GROUP)
    client = Client()
    client.force_login(carol)
    return client


@pytest.mark.parametrize("slots", SLOT_COUNTS)
def test_planning_runs_the_same_queries_at_5_and_200_slots(
    api: Driver, slots: int, django_assert_num_queries: Callable[[int], Any]
) -> None:
    run2 = _history(api, slots)
    plan = f"{API}/instances/{run2}/plan/"
    # 1 the API key; the service: 2 the instance (never planned: straight to the locked path,
    # its prompts unread), 3 savepoint, 4 the instance again under its lock and 5 its open
    # prompts (open: no expiry to check), 6 the slots with their decisions and chosen beliefs,
    # 7 the new prompts in one INSERT, 8 the instance, 9 the audit event; the outbox, in the
    # same transaction (the blocking prompts it names are planning's own, the runtime the
    # instance's id): 10 the event's sequence with the runtime's endpoints, 11 the event;
    # 12 release; and on PostgreSQL the change notification.
    with django_assert_num_queries(12 + notify_queries()):
        first = api.runtime.post_json(plan)
    assert first.status_code == 200
    assert Prompt.objects.filter(instance_id=run2).count() == slots
    # A re-plan with nothing changed writes nothing and takes no lock: it reads 1 the key,
    # 2 the instance, 3 its open prompts, 4 the slots with their decisions and beliefs.
    with django_assert_num_queries(4):
        again = api.runtime.post_json(plan)
    assert again.json() == first.json()


@pytest.mark.parametrize("slots", SLOT_COUNTS)
def test_reads_and_a_response_run_the_same_queries_at_5_and_200_slots(
    api: Driver, slots: int, django_assert_num_queries: Callable[[int], Any]
) -> None:
    run2 = _history(api, slots)
    api.plan(run2)
    # 1 the API key with its runtime, 2 the instance with its task class and principal, 3 its
    # prompts with slots and beliefs (whose expiry times settle the lazy expiry check).
    with django_assert_num_queries(3):
        read = api.runtime.get(f"{API}/instances/{run2}/")
    assert len(read.json()["prompts"]) == slots
    prompt = api.prompt(run2, "s0")
    # 1 session, 2 user; the service: 3 savepoint, 4 the instance locked (with its task class,
    # principal, runtime and last belief turn), 5 its open and answered prompts with slots and
    # beliefs, 6 the person's latest irreversible confirmations with the friction last
    # recorded, 7 that friction alone (there is no confirmation yet to carry it), 8 older
    # beliefs superseded, 9 the new belief, 10 the response, 11 the prompt, 12 the audit event;
    # the re-plan: 13 the slots with their decisions and beliefs, 14 the instance; 15 release;
    # the answer: 16 the prompt, 17 the instance's prompts; and on PostgreSQL the change
    # notification.
    with django_assert_num_queries(17 + notify_queries()):
        response = api.respond(prompt, "confirm", acknowledged=["v"])
    assert response.status_code == 200, response.json()


@pytest.mark.parametrize("slots", SLOT_COUNTS)
def test_pages_run_the_same_queries_at_5_and_200_slots(
    api: Driver,
    alice: User,
    staff: Client,
    slots: int,
    django_assert_num_queries: Callable[[int], Any],
) -> None:
    run2 = _history(api, slots)
    api.plan(run2)
    person = Client()
    person.force_login(alice)
    person.get(f"/instances/{run2}/")  # shown once: no shown_at UPDATE below
    pages: list[tuple[Client, str, int]] = [
        # 1 session, 2 user, in one snapshot (console.live): 3 waiting instances with their
        # runtime and counts, 4 their decisions, 5 the decisions' slots (the decisive values),
        # 6 recent instances, 7 the instances waiting for this person's approval (none: no
        # decisions prefetched), 8 the person's own actions waiting for approvers (none: their
        # approvals, groups and decisions are not read), 9 the person's ready actions done on a
        # runtime's report (none: no decisions prefetched), 10 the latest write (the live
        # version), 11 the person's permissions for the header (their own and their groups').
        (person, "/", 11),
        # 1 session, 2 user; in one snapshot (console.live): 3 the instance with its task
        # class, principal, receipt and latest belief, 4 its prompts with slots and beliefs
        # (the live version and the expiry check are read off these two), 5 the decisions with
        # their slots' keys, 6 the person's latest irreversible confirmations (is friction
        # raised?), 7 the person's permissions.
        (person, f"/instances/{run2}/", 7),
        # 1 session, 2 user, 3 permissions (the role check; the header reuses them), 4 task
        # classes with their counts (pending requests included), 5 unclassified slots,
        # 6 unclassified decisions, 7 the requests waiting for this classifier's approval.
        (staff, "/classify/", 7),
        # 1 session, 2 user, 3 permissions, 4 task class, 5 slots, 6 decisions, 7 their
        # slots, 8 pending requests, 9 open instances, 10 the groups approvers may come from.
        (staff, "/classify/many/", 10),
        # 1 session, 2 user, 3 permissions, 4 count, 5 a page of events, 6 task classes,
        # 7 actors (the kinds are an enum: no query).
        (staff, "/activity/", 7),
        # 1 session, 2 user, 3 permissions, 4 the latest planned instances with their
        # blocking prompts counted, 5 their task classes, 6 the latest answered prompts, 7 the
        # approval rounds that reached their quorum, 8 and 9 the latest changes of friction
        # (raised, lowered: each off its own index).
        (staff, "/insights/", 9),
    ]
    for client, url, count in pages:
        client.get(url)
        with django_assert_num_queries(count):
            response = client.get(url)
        assert response.status_code == 200, url


@pytest.mark.parametrize("slots", SLOT_COUNTS)
def test_opening_with_a_belief_per_slot_runs_the_same_queries_at_5_and_200_slots(
    api: Driver, slots: int, django_assert_num_queries: Callable[[int], Any]
) -> None:
    keys = [f"s{i}" for i in range(slots)]
    api.register("many", slots=[{"key": k} for k in keys])
    body = {
        "task_class": "many",
        "principal": "alice",
        "beliefs": [{"slot": k, "value": "v", "source": "tool"} for k in keys],
    }
    # 1 the API key; the service: 2 savepoint, 3 the task class, 4 the principal (its row
    # locked as it is read), 5 the action's slots (every declared one, whole: the beliefs are
    # recorded against them), 6 its open instances from this runtime counted (the limit) with
    # its last run number, in one query, 7 the instance, 8 the beliefs in one INSERT, 9 the
    # instance's audit event and the beliefs' in one INSERT, 10 release. The answer reads no
    # prompts: never planned, the instance has none.
    with django_assert_num_queries(10):
        response = api.runtime.post_json(f"{API}/instances/", body)
    assert response.status_code == 201, response.json()
    assert response.json()["prompts"] == []
    instance_id = response.json()["id"]
    assert Belief.objects.filter(instance_id=instance_id, status="active").count() == slots
    recorded = AuditEvent.objects.filter(instance_id=instance_id, kind="belief.recorded")
    assert sorted(recorded.values_list("subject", flat=True)) == sorted(keys)
    # The opening's own event comes first, as when it was written on its own.
    first = AuditEvent.objects.filter(instance_id=instance_id).order_by("id").first()
    assert first is not None and first.kind == "instance.opened"


def test_a_slot_named_twice_in_one_open_keeps_its_last_belief(api: Driver) -> None:
    api.register("twice", slots=[{"key": "memo"}])
    beliefs = [
        {"slot": "memo", "value": "first", "source": "tool"},
        {"slot": "memo", "value": "second", "source": "inference"},
    ]
    instance_id = api.open("twice", beliefs=beliefs)
    stored = Belief.objects.filter(instance_id=instance_id).order_by("pk")
    assert [(b.value, b.status) for b in stored] == [
        ("first", "superseded"),
        ("second", "active"),
    ]
    events = AuditEvent.objects.filter(instance_id=instance_id, kind="belief.recorded")
    assert [e.data["superseded"] for e in events.order_by("pk")] == [0, 1]


@pytest.mark.parametrize("slots", SLOT_COUNTS)
def test_registering_runs_the_same_queries_at_5_and_200_slots(
    api: Driver, slots: int, django_assert_num_queries: Callable[[int], Any]
) -> None:
    keys = [f"s{i}" for i in range(slots)]
    url = f"{API}/task-classes/many/"
    body = {
        "name": "many",
        "slots": [{"key": k, "label": f"Slot {k}", "choices": ["a", "b"]} for k in keys],
        "decisions": [{"key": "act", "slots": keys}, {"key": "log", "slots": keys[:1]}],
    }
    # 1 the API key; the service: 2 savepoint, 3 get-or-create's read, 4 its savepoint, 5 the
    # class, 6 its release, 7 the class locked, 8 its slots, 9 the new slots in one INSERT,
    # 10 its decisions, 11 the new decisions in one INSERT, 12 their links in one INSERT, 13 the
    # audit event, 14 release; the answer: 15 the class, 16 its slots, 17 their decisions,
    # 18 its decisions, 19 their slots.
    with django_assert_num_queries(19):
        created = api.runtime.put_json(url, body)
    assert created.status_code == 200, created.json()
    described = api.runtime.get(url).json()
    assert [s["key"] for s in described["slots"]] == keys
    assert {d["key"]: sorted(d["slots"]) for d in described["decisions"]} == {
        "act": sorted(keys),
        "log": keys[:1],
    }
    # Registering again with new labels: the class read, locked and renamed, then every slot
    # updated in one statement, the links (already there) kept, one audit event.
    body["slots"] = [{"key": k, "label": f"Renamed {k}"} for k in keys]
    with django_assert_num_queries(16):
        updated = api.runtime.put_json(url, body)
    assert updated.status_code == 200, updated.json()
    described = api.runtime.get(url).json()
    assert {s["label"] for s in described["slots"]} == {f"Renamed {k}" for k in keys}
    assert all(s["choices"] == ["a", "b"] for s in described["slots"])
