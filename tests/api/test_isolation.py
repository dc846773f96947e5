"""Values belong to the runtime that reported them.

Runtime A owns a transfer class; runtime B was shared the class. B's instances for alice read
nothing of A's runs (no value, no world reference, no earlier run's amount or memo), and what B
records (even as `source: user`) is never carried into A's runs. Only when A shares the class's
history with B do the two carry each other's values, and then every value names the runtime
that reported it.
"""

from __future__ import annotations

from typing import Any

import pytest

from beliefs.models import AuditEvent, TaskClassShare
from tests.conftest import JsonClient, runtime_key_of
from tests.support.api import API, Driver, by_slot

CLASS = "payments.transfer"
IBAN_A = "NL91ABNA0417164300"
IBAN_B = "GB33BUKB20201555555555"
WORLD = {"recipient_account": {"account_holder": "Bob Example"}}


def _client(key: str) -> JsonClient:
    client = JsonClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {key}")
    return client


@pytest.fixture
def a_history(api: Driver) -> Driver:
    """A's class, a finished run 1 of A for alice (she answered every value in the console)
    and an open run 2 of A with a tool's amount."""
    api.register(
        CLASS,
        slots=[
            {"key": "recipient_account"},
            {"key": "amount", "value_type": "number"},
            {"key": "memo"},
            {"key": "reference"},
        ],
        decisions=[{"key": "send_transfer", "slots": ["recipient_account", "amount"]}],
        risks={
            "recipient_account": "irreversible",
            "amount": "irreversible",
            "memo": "cosmetic",
            "reference": "reversible",
        },
        decision_risks={"send_transfer": "irreversible"},
    )
    run_1 = api.open(CLASS, world=WORLD)
    api.plan(run_1)
    done = api.answer_all(
        run_1,
        {"recipient_account": IBAN_A, "amount": 250, "memo": "Rent November", "reference": "A-1"},
    )
    assert done["status"] == "ready"
    open_run = api.open(
        CLASS, world=WORLD, beliefs=[{"slot": "amount", "value": 999, "source": "tool"}]
    )
    api.plan(open_run)
    return api


@pytest.fixture
def runtime_b(a_history: Driver) -> JsonClient:
    _, key = runtime_key_of("billing-agent")
    shared = a_history.runtime.put_json(f"{API}/task-classes/{CLASS}/shares/billing-agent/", {})
    assert shared.status_code == 200, shared.json()
    assert shared.json()["history"] is False
    return _client(key)


def _open_and_plan(runtime: JsonClient, beliefs: list[dict[str, Any]] | None = None) -> Any:
    body: dict[str, Any] = {"task_class": CLASS, "principal": "alice", "world": WORLD}
    if beliefs is not None:
        body["beliefs"] = beliefs
    opened = runtime.post_json(f"{API}/instances/", body)
    assert opened.status_code == 201, opened.json()
    planned = runtime.post_json(f"{API}/instances/{opened.json()['id']}/plan/")
    assert planned.status_code == 200, planned.json()
    return planned.json()


def _nothing_of_a(plan: dict[str, Any], instance: dict[str, Any]) -> None:
    for item in plan["items"]:
        assert item["rule"] == "R0", item
        assert item["belief"] is None and item["value"] is None, item
        assert item["world_diff"] == [] or all(e["old"] is None for e in item["world_diff"])
    for prompt in instance["prompts"]:
        assert prompt["belief"] is None, prompt
        assert prompt["prefill"] is None and prompt["context_value"] is None, prompt
        assert prompt["world_ref"] is None, prompt
    text = str(plan) + str(instance)
    for secret in (IBAN_A, "Rent November", "A-1"):
        assert secret not in text


def test_a_runtime_reads_nothing_of_another_runtimes_runs(runtime_b: JsonClient) -> None:
    plan = _open_and_plan(runtime_b)
    instance = runtime_b.get(f"{API}/instances/{plan['id']}/").json()
    _nothing_of_a(plan, instance)


def test_what_another_runtime_records_is_never_carried_into_the_owners_runs(
    a_history: Driver, runtime_b: JsonClient
) -> None:
    planted = [
        {"slot": "recipient_account", "value": IBAN_B, "source": "user", "world_ref": {"x": 1}},
        {"slot": "memo", "value": "planted", "source": "user"},
    ]
    _open_and_plan(runtime_b, planted)

    items = by_slot(_open_and_plan(a_history.runtime))
    account = items["recipient_account"]
    assert account["rule"] == "R6" and account["value"] == IBAN_A  # A's own run 1, not B's
    assert account["belief"]["runtime"] == "test-runtime"
    assert account["belief"]["recorded_via"] == "console"
    assert items["memo"]["value"] == "Rent November"
    assert IBAN_B not in str(items) and "planted" not in str(items)


def test_sharing_history_pools_values_both_ways_and_names_who_reported_them(
    a_history: Driver, runtime_b: JsonClient
) -> None:
    changed = a_history.runtime.put_json(
        f"{API}/task-classes/{CLASS}/shares/billing-agent/", {"history": True}
    )
    assert changed.status_code == 200 and changed.json()["history"] is True
    assert AuditEvent.objects.filter(kind="task_class.share_changed").exists()

    # B now carries A's values...
    items = by_slot(_open_and_plan(runtime_b))
    assert items["recipient_account"]["value"] == IBAN_A
    assert items["recipient_account"]["belief"]["runtime"] == "test-runtime"
    # ... and A carries what B reported, named as B's report, not as an answer in the console.
    _open_and_plan(runtime_b, [{"slot": "memo", "value": "from B", "source": "user"}])
    memo = by_slot(_open_and_plan(a_history.runtime))["memo"]
    assert memo["value"] == "from B"
    assert memo["belief"]["runtime"] == "billing-agent"
    assert memo["belief"]["recorded_via"] == "runtime"


def test_unsharing_stops_opens_and_pooling(a_history: Driver, runtime_b: JsonClient) -> None:
    a_history.runtime.put_json(
        f"{API}/task-classes/{CLASS}/shares/billing-agent/", {"history": True}
    )
    listed = a_history.runtime.get(f"{API}/task-classes/{CLASS}/shares/")
    assert listed.status_code == 200
    assert listed.json()["shares"][0]["runtime"] == "billing-agent"

    gone = a_history.runtime.delete(f"{API}/task-classes/{CLASS}/shares/billing-agent/")
    assert gone.status_code == 204
    assert not TaskClassShare.objects.exists()
    refused = runtime_b.post_json(f"{API}/instances/", {"task_class": CLASS, "principal": "alice"})
    assert refused.status_code == 403 and refused.json()["error"] == "not_shared"
    assert AuditEvent.objects.filter(kind="task_class.unshared").exists()


def test_only_the_owner_manages_shares(a_history: Driver, runtime_b: JsonClient) -> None:
    for response in (
        runtime_b.get(f"{API}/task-classes/{CLASS}/shares/"),
        runtime_b.put_json(f"{API}/task-classes/{CLASS}/shares/billing-agent/", {"history": True}),
        runtime_b.delete(f"{API}/task-classes/{CLASS}/shares/billing-agent/"),
    ):
        assert response.status_code == 403, response.json()
        assert response.json()["error"] == "not_owner"
    assert not TaskClassShare.objects.get().history


def test_sharing_refuses_unknown_runtimes_and_the_owner_itself(a_history: Driver) -> None:
    unknown = a_history.runtime.put_json(f"{API}/task-classes/{CLASS}/shares/nobody/", {})
    assert unknown.status_code == 404 and unknown.json()["error"] == "unknown_runtime"
    itself = a_history.runtime.put_json(f"{API}/task-classes/{CLASS}/shares/test-runtime/", {})
    assert itself.status_code == 400 and itself.json()["error"] == "share_with_owner"
    bad = a_history.runtime.put_json(
        f"{API}/task-classes/{CLASS}/shares/test-runtime/", {"history": "yes please"}
    )
    assert bad.status_code == 400
    missing = a_history.runtime.get(f"{API}/task-classes/nothing.here/shares/")
    assert missing.status_code == 404


def test_a_veto_retires_only_values_the_vetoing_runtime_could_carry(
    a_history: Driver, runtime_b: JsonClient
) -> None:
    """Alice vetoes the reference B carried from its own earlier run: B's older values for the
    slot are retired, A's are not B's to retire (and A's next run still carries A's)."""
    _open_and_plan(runtime_b, [{"slot": "reference", "value": "B-1", "source": "user"}])
    plan = _open_and_plan(runtime_b)
    reference = by_slot(plan)["reference"]
    assert reference["route"] == "SURFACED" and reference["value"] == "B-1"
    vetoed = a_history.respond(a_history.prompt(plan["id"], "reference"), "veto", reason="wrong")
    assert vetoed.status_code == 200, vetoed.json()

    assert by_slot(_open_and_plan(runtime_b))["reference"]["rule"] == "R0"
    assert by_slot(_open_and_plan(a_history.runtime))["reference"]["value"] == "A-1"


def test_staff_see_whom_a_class_is_shared_with(
    a_history: Driver, runtime_b: JsonClient, signed_in: Any
) -> None:
    from django.contrib.auth.models import User

    a_history.runtime.put_json(
        f"{API}/task-classes/{CLASS}/shares/billing-agent/", {"history": True}
    )
    admin = User.objects.create_user("staffer", password="x", is_staff=True, is_superuser=True)
    client = signed_in(admin)
    page = client.get("/runtimes/").content.decode()
    assert "shared with billing-agent (with its history)" in page
    assert "pooling values with it" in page
    task_class = TaskClassShare.objects.get().task_class
    change = client.get(f"/admin/beliefs/taskclass/{task_class.pk}/change/")
    assert change.status_code == 200
    assert "billing-agent" in change.content.decode()
