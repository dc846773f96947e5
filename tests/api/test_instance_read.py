"""The instance read's fixed SQL answers exactly `instance_payload`'s body (same keys in the
same order, same values) in every state an instance passes through: open and unplanned,
awaiting the person with carried and current beliefs, partly and wholly answered, ready,
cancelled; and an instance whose blocking prompt is overdue expires before it is read."""

from __future__ import annotations

import json
from datetime import timedelta
from uuid import UUID

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from beliefs import selectors
from beliefs.models import Prompt, TaskInstance
from tests.support.api import API, Driver

pytestmark = pytest.mark.django_db


def _same(instance_id: str, alice: User) -> None:
    instance = TaskInstance.objects.select_related("task_class", "principal", "runtime").get(
        pk=instance_id
    )
    expected = selectors.instance_payload(instance)
    assert instance.runtime_id is not None
    for read in (
        selectors.instance_read(UUID(instance_id), runtime_id=instance.runtime_id),
        selectors.instance_read(UUID(instance_id), principal_id=alice.pk),
    ):
        assert read is not None and not read.expiry_due
        assert json.dumps(read.payload) == json.dumps(expected)


def test_it_answers_instance_payloads_body_in_every_state(api: Driver, alice: User) -> None:
    api.register(
        "trip",
        slots=[{"key": "card"}, {"key": "seat"}, {"key": "meal"}, {"key": "note"}],
        decisions=[{"key": "pay", "slots": ["card"]}],
        risks={"card": "irreversible", "seat": "reversible", "meal": "irreversible"},
        decision_risks={"pay": "irreversible"},
    )
    world = {"card": {"holder": "Ada", "n": 1}}
    first = api.open(
        "trip",
        world=world,
        beliefs=[
            {"slot": "card", "value": "4111", "source": "user", "world_ref": {"holder": "Ada"}},
            {"slot": "seat", "value": "12A", "source": "tool"},
        ],
    )
    _same(first, alice)  # open, never planned
    api.plan(first)
    _same(first, alice)  # awaiting the person
    api.answer_all(first, {"card": "4111", "seat": "12B", "meal": "veg", "note": "hi"})
    _same(first, alice)  # ready
    second = api.open("trip", world={"card": {"holder": "Bob", "n": 2}})
    api.plan(second)
    _same(second, alice)  # carried beliefs, a changed world
    prompt = api.prompt(second, "card")
    changed = [e["key"] for e in prompt["world_diff"] if e["change"] != "unchanged"]
    assert api.respond(prompt, "confirm", acknowledged=changed).status_code == 200
    _same(second, alice)  # partly answered
    third = api.open("trip")
    api.plan(third)
    assert api.runtime.post_json(f"{API}/instances/{third}/cancel/").status_code == 200
    _same(third, alice)  # cancelled


def test_it_is_nobody_elses_and_an_overdue_instance_expires_first(
    api: Driver, alice: User, mallory: User
) -> None:
    api.register("t", slots=[{"key": "card"}], risks={"card": "irreversible"})
    instance_id = api.open("t")
    api.plan(instance_id)
    instance = TaskInstance.objects.get(pk=instance_id)
    assert selectors.instance_read(UUID(instance_id), principal_id=mallory.pk) is None
    assert selectors.instance_read(UUID(instance_id), runtime_id=-1) is None
    Prompt.objects.filter(instance=instance).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    read = selectors.instance_read(UUID(instance_id), runtime_id=instance.runtime_id)
    assert read is not None and read.expiry_due
    body = api.runtime.get(f"{API}/instances/{instance_id}/").json()
    assert body["status"] == "expired"
    assert api.person.get(f"{API}/instances/{instance_id}/").json()["status"] == "expired"
