"""POST /instances/ with an Idempotency-Key: a retried open returns the first instance."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import IntegrityError, connection, connections, transaction

from beliefs.domain import canonical
from beliefs.models import AuditEvent, Belief, RuntimeAPIKey, TaskInstance
from beliefs.services import idempotency
from beliefs.services.audit import Actor
from tests.builders import open_instance
from tests.builders import transfer as transfer_class
from tests.conftest import JsonClient, runtime_key_of
from tests.support.api import API, Driver

pytestmark = pytest.mark.django_db


@pytest.fixture
def transfer(api: Driver) -> str:
    api.register(
        "payments.transfer",
        slots=[{"key": "recipient_account"}, {"key": "memo"}],
        decisions=[{"key": "send_transfer", "slots": ["recipient_account"]}],
        risks={"memo": "reversible"},
        decision_risks={"send_transfer": "irreversible"},
    )
    return "payments.transfer"


def _body(**extra: Any) -> dict[str, Any]:
    return {
        "task_class": "payments.transfer",
        "principal": "alice",
        "world": {"recipient_account": {"holder": "Bob"}},
        "beliefs": [{"slot": "recipient_account", "value": "DE89", "source": "inference"}],
        **extra,
    }


def _open(client: JsonClient, key: str | None, body: dict[str, Any]) -> Any:
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key is not None else {}
    return client.post_json(f"{API}/instances/", body, **headers)


def test_a_repeat_with_the_same_key_and_body_returns_the_first_instance(
    api: Driver, transfer: str
) -> None:
    first = _open(api.runtime, "thread-1:step-2", _body())
    assert first.status_code == 201, first.json()
    assert "Idempotent-Replayed" not in first
    again = _open(api.runtime, "thread-1:step-2", _body())
    assert again.status_code == 200, again.json()
    assert again["Idempotent-Replayed"] == "true"
    assert again.json()["id"] == first.json()["id"]
    # One instance, one belief, one audit event: the repeat wrote nothing.
    assert TaskInstance.objects.count() == 1
    assert Belief.objects.count() == 1
    assert AuditEvent.objects.filter(kind="instance.opened").count() == 1


def test_a_repeat_returns_the_instance_as_it_is_now(api: Driver, transfer: str) -> None:
    instance_id = _open(api.runtime, "k", _body()).json()["id"]
    api.plan(instance_id)
    again = _open(api.runtime, "k", _body())
    assert again.status_code == 200
    assert again.json()["status"] == "awaiting_user"
    assert again.json()["blocking"] == 2
    # Planned since, it shows the prompts planning made (the first answer had none to show).
    shown = {p["slot"]: p["blocking"] for p in again.json()["prompts"]}
    assert shown == {p["slot"]: p["blocking"] for p in api.instance(instance_id)["prompts"]}
    assert sum(shown.values()) == 2


def test_the_same_body_in_another_key_order_is_the_same_body(api: Driver, transfer: str) -> None:
    first = _open(api.runtime, "k", _body()).json()["id"]
    reordered = dict(reversed(list(_body().items())))
    again = _open(api.runtime, "k", reordered)
    assert again.status_code == 200
    assert again.json()["id"] == first


def test_the_same_key_with_another_body_is_refused(api: Driver, transfer: str) -> None:
    first = _open(api.runtime, "k", _body()).json()["id"]
    response = _open(api.runtime, "k", _body(world={"recipient_account": {"holder": "Eve"}}))
    assert response.status_code == 409
    body = response.json()
    assert body["error"] == "idempotency_key_reused"
    assert "different body" in body["detail"] and first in body["detail"]
    assert body["fields"] == {"Idempotency-Key": ["already used with a different body"]}
    assert TaskInstance.objects.count() == 1


@pytest.mark.parametrize("stored_in", ["RFC8785", "legacy"])
@pytest.mark.parametrize("same", [True, False])
def test_a_key_stored_before_rfc_8785_still_tells_a_retry_from_another_body(
    api: Driver, transfer: str, stored_in: str, same: bool
) -> None:
    """A key stored before hashes moved to RFC 8785 holds the hash of Python's JSON form (it
    differs where the body has a float): a retry is still a replay, another body still 409."""
    body = _body(world={"recipient_account": {"holder": "Bob", "score": 120.0}})
    first = _open(api.runtime, "k", body).json()["id"]
    if stored_in == "legacy":
        legacy = canonical.text_digest(canonical.legacy_canonical_json(body))
        assert legacy != idempotency.body_hash(body)
        TaskInstance.objects.filter(pk=first).update(idempotency_hash=legacy)
    retry = body if same else _body(world={"recipient_account": {"holder": "Bob", "score": 121}})
    again = _open(api.runtime, "k", retry)
    assert again.status_code == (200 if same else 409), again.json()
    assert TaskInstance.objects.count() == 1


def test_without_a_key_every_open_is_a_new_run(api: Driver, transfer: str) -> None:
    first = _open(api.runtime, None, _body())
    second = _open(api.runtime, None, _body())
    assert (first.status_code, second.status_code) == (201, 201)
    assert first.json()["id"] != second.json()["id"]
    assert [first.json()["run_number"], second.json()["run_number"]] == [1, 2]


def test_different_keys_open_different_instances(api: Driver, transfer: str) -> None:
    first = _open(api.runtime, "a", _body()).json()
    second = _open(api.runtime, "b", _body()).json()
    assert first["id"] != second["id"]


def _client_for(key: str) -> JsonClient:
    client = JsonClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {key}")
    return client


def test_keys_are_per_runtime_not_per_key(api: Driver, transfer: str) -> None:
    first = _open(api.runtime, "shared", _body()).json()["id"]
    # Another key of the same runtime (a rotation) finds the same instance...
    same_runtime = _client_for(runtime_key_of("test-runtime")[1])
    replayed = _open(same_runtime, "shared", _body())
    assert replayed.status_code == 200
    assert replayed.json()["id"] == first
    # ...another runtime's key (of a runtime the class is shared with) is another namespace.
    other = _client_for(runtime_key_of("other-runtime")[1])
    api.runtime.put_json(f"/api/v1/task-classes/{transfer}/shares/other-runtime/", {})
    response = _open(other, "shared", _body())
    assert response.status_code == 201
    assert response.json()["id"] != first


def test_a_failed_open_does_not_take_the_key(api: Driver, transfer: str) -> None:
    bad = _open(api.runtime, "k", _body(principal="nobody"))
    assert bad.status_code == 404
    good = _open(api.runtime, "k", _body())
    assert good.status_code == 201


@pytest.mark.parametrize("key", ["", "   ", "x" * 201])
def test_it_refuses_an_empty_or_overlong_key(api: Driver, transfer: str, key: str) -> None:
    response = _open(api.runtime, key, _body())
    assert response.status_code == 400
    assert "Idempotency-Key" in response.json()["fields"]
    assert TaskInstance.objects.count() == 0


def test_the_database_refuses_two_instances_with_one_key(
    api: Driver, transfer: str, runtime_key: tuple[RuntimeAPIKey, str]
) -> None:
    """The rule that stops two racing repeats is the database's, not a check in Python."""
    instance = TaskInstance.objects.get(pk=_open(api.runtime, "k", _body()).json()["id"])
    with pytest.raises(IntegrityError), transaction.atomic():
        TaskInstance.objects.create(
            task_class=instance.task_class,
            principal=instance.principal,
            opened_by=runtime_key[0],
            runtime=runtime_key[0].runtime,
            run_number=2,
            idempotency_key="k",
        )
    # Instances without a key are not constrained by it.
    for run in (2, 3):
        TaskInstance.objects.create(
            task_class=instance.task_class,
            principal=instance.principal,
            opened_by=runtime_key[0],
            runtime=runtime_key[0].runtime,
            run_number=run,
        )


def _open_args(body: dict[str, Any]) -> dict[str, Any]:
    return {
        "task_class_key": body["task_class"],
        "principal": body["principal"],
        "world": body.get("world"),
        "beliefs": body.get("beliefs"),
    }


@pytest.mark.postgres
@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="needs PostgreSQL; SQLite serialises writers"
)
@pytest.mark.django_db(transaction=True)
def test_two_racing_repeats_open_one_instance(
    runtime_key: tuple[RuntimeAPIKey, str], alice: Any
) -> None:
    actor = Actor(key=runtime_key[0])
    transfer_class(actor)
    body = _body(task_class="payments.transfer")
    barrier = threading.Barrier(2)
    results: list[Any] = [None, None]

    def run(index: int) -> None:
        try:
            barrier.wait(timeout=10)
            results[index] = idempotency.instance_open_idempotent(
                body=body,
                open_=lambda: open_instance(**_open_args(body), actor=actor),
                key="k",
                actor=actor,
            )
        except Exception as exc:  # noqa: BLE001 - the test inspects what each thread got
            results[index] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert all(isinstance(result, idempotency.Opened) for result in results), results
    assert results[0].instance.pk == results[1].instance.pk
    assert sorted(result.replayed for result in results) == [False, True]
    assert TaskInstance.objects.count() == 1
