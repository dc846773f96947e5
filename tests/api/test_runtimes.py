"""Runtimes own their keys: what one key of a runtime opened, every key of it sees and plans;
another runtime gets 404 on it, 403 opening instances of a task class it was not shared, and 403
changing a task class it did not register."""

from __future__ import annotations

from beliefs.models import AuditEvent, RuntimeAPIKey, Slot, TaskClass
from tests.conftest import JsonClient, runtime_key_of
from tests.support.api import API, Driver

SLOTS = [{"key": "iban", "label": "Refund to IBAN"}, {"key": "note", "label": "Note"}]


def _client(key: str) -> JsonClient:
    client = JsonClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {key}")
    return client


def test_a_second_key_of_the_same_runtime_sees_and_plans_what_the_first_opened(
    api: Driver,
) -> None:
    api.register("payments.refund", SLOTS)
    instance_id = api.open("payments.refund")
    second_key, second = runtime_key_of("test-runtime")
    rotated = _client(second)

    seen = rotated.get(f"{API}/instances/{instance_id}/")
    assert seen.status_code == 200, seen.json()
    assert seen.json()["id"] == instance_id
    planned = rotated.post_json(f"{API}/instances/{instance_id}/plan/")
    assert planned.status_code == 200, planned.json()
    assert planned.json()["status"] == "awaiting_user"
    # The audit log tells the two keys apart by prefix, under one runtime.
    plan_event = AuditEvent.objects.get(kind="instance.planned", instance_id=instance_id)
    assert plan_event.actor == "runtime:test-runtime"
    assert plan_event.actor_key_prefix == second_key.prefix
    open_event = AuditEvent.objects.get(kind="instance.opened", instance_id=instance_id)
    assert open_event.actor_key_prefix != second_key.prefix


def test_a_revoked_key_stops_working_but_the_runtime_keeps_its_instances(api: Driver) -> None:
    api.register("payments.refund", SLOTS)
    instance_id = api.open("payments.refund")
    first = RuntimeAPIKey.objects.get(runtime__name="test-runtime")
    _, second = runtime_key_of("test-runtime")
    first.revoked = True
    first.save()

    assert api.runtime.get(f"{API}/instances/{instance_id}/").status_code == 401
    assert _client(second).get(f"{API}/instances/{instance_id}/").status_code == 200


def test_another_runtime_gets_404_on_the_instance(api: Driver) -> None:
    api.register("payments.refund", SLOTS)
    instance_id = api.open("payments.refund")
    _, other_key = runtime_key_of("billing-agent")
    other = _client(other_key)

    for response in (
        other.get(f"{API}/instances/{instance_id}/"),
        other.post_json(f"{API}/instances/{instance_id}/plan/"),
        other.put_json(f"{API}/instances/{instance_id}/world/", {"world": {}}),
        other.post_json(
            f"{API}/instances/{instance_id}/beliefs/",
            {"slot": "iban", "value": "x", "source": "tool"},
        ),
    ):
        assert response.status_code == 404, response.json()


def test_another_runtime_opens_a_task_class_once_shared_but_gets_403_changing_it(
    api: Driver,
) -> None:
    api.register("payments.refund", SLOTS)
    _, other_key = runtime_key_of("billing-agent")
    other = _client(other_key)
    not_yet = other.post_json(
        f"{API}/instances/", {"task_class": "payments.refund", "principal": "alice"}
    )
    assert not_yet.status_code == 403, not_yet.json()
    assert not_yet.json()["error"] == "not_shared"
    shared = api.runtime.put_json(f"{API}/task-classes/payments.refund/shares/billing-agent/", {})
    assert shared.status_code == 200, shared.json()

    changed = other.put_json(
        f"{API}/task-classes/payments.refund/",
        {"name": "Hijacked", "slots": [{"key": "iban", "label": "Send everything to"}]},
    )
    assert changed.status_code == 403, changed.json()
    assert changed.json()["error"] == "not_owner"
    task_class = TaskClass.objects.get(key="payments.refund")
    assert task_class.name == "payments.refund"
    assert task_class.slots.get(key="iban").label == "Refund to IBAN"
    assert task_class.owner.name == "test-runtime"

    opened = other.post_json(
        f"{API}/instances/", {"task_class": "payments.refund", "principal": "alice"}
    )
    assert opened.status_code == 201, opened.json()
    # A belief cannot add an undeclared slot to the class either (nobody's belief can).
    sneaked = other.post_json(
        f"{API}/instances/{opened.json()['id']}/beliefs/",
        {"slot": "bcc_account", "value": "x", "source": "tool"},
    )
    assert sneaked.status_code == 400, sneaked.json()
    assert sneaked.json()["error"] == "unknown_slot"
    assert not Slot.objects.filter(key="bcc_account").exists()
    # The owner still may.
    mine = api.runtime.put_json(
        f"{API}/task-classes/payments.refund/", {"name": "Refund a customer"}
    )
    assert mine.status_code == 200, mine.json()
    assert TaskClass.objects.get(key="payments.refund").name == "Refund a customer"


def test_a_class_nobody_owns_is_adopted_by_the_first_runtime_to_change_it(
    runtime: JsonClient,
) -> None:
    TaskClass.objects.create(key="legacy.task", name="Legacy")
    response = runtime.put_json(f"{API}/task-classes/legacy.task/", {"name": "Legacy task"})
    assert response.status_code == 200, response.json()
    assert TaskClass.objects.get(key="legacy.task").owner.name == "test-runtime"
    _, other_key = runtime_key_of("billing-agent")
    refused = _client(other_key).put_json(f"{API}/task-classes/legacy.task/", {"name": "x"})
    assert refused.status_code == 403
