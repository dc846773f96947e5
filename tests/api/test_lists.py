"""GET /api/v1/instances/ and GET /api/v1/task-classes/: a runtime lists its own instances and
the classes it may use, never another runtime's."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from beliefs.models import TaskClass
from tests.conftest import JsonClient, make_user, runtime_key_of
from tests.support.api import API, Driver


def _client(key: str) -> JsonClient:
    client = JsonClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {key}")
    return client


def _ids(response: Any) -> list[str]:
    assert response.status_code == 200, response.json()
    return [item["id"] for item in response.json()["results"]]


@pytest.fixture
def history(api: Driver, transfer: str) -> dict[str, str]:
    """Three instances of this runtime (alice: open, then awaiting_user; bob: open) and one of
    another runtime for alice."""
    make_user("bob")
    opened = {
        "first": api.open(transfer),
        "waiting": api.open(
            transfer, beliefs=[{"slot": "recipient_account", "value": "DE89", "source": "tool"}]
        ),
        "bobs": api.open(transfer, principal="bob"),
    }
    api.plan(opened["waiting"])
    _, other_key = runtime_key_of("billing-agent")
    TaskClass.objects.filter(key=transfer).update(owner=None)  # so the other runtime may open it
    other = _client(other_key).post_json(
        f"{API}/instances/", {"task_class": transfer, "principal": "alice"}
    )
    assert other.status_code == 201, other.json()
    opened["others"] = other.json()["id"]
    return opened


def test_a_runtime_lists_its_own_instances_newest_first(
    api: Driver, history: dict[str, str]
) -> None:
    listed = api.runtime.get(f"{API}/instances/")
    assert _ids(listed) == [history["bobs"], history["waiting"], history["first"]]
    body = listed.json()
    assert body["count"] == 3 and body["next"] is None
    waiting = body["results"][1]
    assert waiting["status"] == "awaiting_user"
    assert (waiting["task_class"], waiting["principal"]) == ("payments.transfer", "alice")
    assert set(waiting) == {
        "id",
        "task_class",
        "principal",
        "run_number",
        "status",
        "status_reason",
        "created_at",
        "updated_at",
    }


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("status=awaiting_user", ["waiting"]),
        ("status=open", ["bobs", "first"]),
        ("status=ready", []),
        ("principal=alice", ["waiting", "first"]),
        ("principal=bob&status=open", ["bobs"]),
        ("principal=nobody", []),
        ("limit=1", ["bobs"]),
        ("limit=2&offset=1", ["waiting", "first"]),
    ],
)
def test_the_list_narrows_and_pages(
    api: Driver, history: dict[str, str], query: str, expected: list[str]
) -> None:
    assert _ids(api.runtime.get(f"{API}/instances/?{query}")) == [history[n] for n in expected]


@pytest.mark.parametrize(
    "query", ["status=done", "limit=0", "limit=1001", "offset=-1", "principal=" + "x" * 151]
)
def test_a_bad_filter_is_a_clear_400(api: Driver, history: dict[str, str], query: str) -> None:
    refused = api.runtime.get(f"{API}/instances/?{query}")
    assert refused.status_code == 400
    name = query.split("=")[0]
    assert name in refused.json()["fields"], refused.json()


def test_people_and_strangers_do_not_list_instances(
    api: Driver, history: dict[str, str], person_client: Any, alice: User
) -> None:
    assert person_client(alice).get(f"{API}/instances/").status_code == 403
    assert JsonClient().get(f"{API}/instances/").status_code in (401, 403)
    assert _client("not-a-key").get(f"{API}/instances/").status_code in (401, 403)


def test_task_classes_a_runtime_may_use_with_what_waits_for_a_classifier(
    api: Driver, transfer: str
) -> None:
    api.runtime.put_json(
        f"{API}/task-classes/shop.order/",
        {"slots": [{"key": "item"}, {"key": "quantity", "value_type": "number"}]},
    )
    _, other_key = runtime_key_of("billing-agent")
    other = _client(other_key)
    assert other.put_json(f"{API}/task-classes/billing.invoice/", {}).status_code == 200

    listed = api.runtime.get(f"{API}/task-classes/")
    assert listed.status_code == 200, listed.json()
    by_key = {c["key"]: c for c in listed.json()["results"]}
    assert list(by_key) == ["shop.order", "payments.transfer"]  # newest change first
    assert by_key["shop.order"]["slots"] == ["item", "quantity"]
    assert by_key["shop.order"]["unclassified"] == ["item", "quantity"]
    assert by_key["shop.order"]["owned"] is True
    assert by_key["payments.transfer"]["unclassified"] == []  # classified by the fixture

    # The other runtime lists its own class only, until one is shared with it.
    assert [c["key"] for c in other.get(f"{API}/task-classes/").json()["results"]] == [
        "billing.invoice"
    ]
    shared = api.runtime.put_json(f"{API}/task-classes/shop.order/shares/billing-agent/", {})
    assert shared.status_code == 200
    seen = {c["key"]: c["owned"] for c in other.get(f"{API}/task-classes/").json()["results"]}
    assert seen == {"billing.invoice": True, "shop.order": False}


def test_a_person_lists_every_task_class(
    api: Driver, transfer: str, person_client: Any, alice: User
) -> None:
    listed = person_client(alice).get(f"{API}/task-classes/?limit=5")
    assert listed.status_code == 200
    (only,) = listed.json()["results"]
    assert only["key"] == transfer and only["owned"] is False
