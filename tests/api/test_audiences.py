"""A runtime's receipts and task-class definitions are its own.

The `audience` named at open (a receipt's `aud`) is the runtime's own name or one that staff
registered for it; any other, another runtime's name above all, is refused with 400
`unknown_audience` and nothing is stored. A task class's definition is read by its owner, by
the runtimes it is shared with (and by anyone while nobody owns it); any other runtime gets the
404 of a class that does not exist.
"""

from __future__ import annotations

from typing import Any

import jwt
import pytest
from django.contrib.auth.models import User
from django.test import Client

from beliefs.models import AuditEvent, Belief, Prompt, Runtime, TaskClass, TaskInstance
from tests.conftest import JsonClient, runtime_key_of
from tests.support.api import API, Driver

CLASS = "payments.pay"


def _client(key: str) -> JsonClient:
    client = JsonClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {key}")
    return client


@pytest.fixture
def runtime_b(db: None) -> JsonClient:
    """Another runtime, "billing-agent", whose tool server trusts receipts for its name."""
    _, key = runtime_key_of("billing-agent")
    Runtime.objects.filter(name="billing-agent").update(audiences=["ledger-service"])
    return _client(key)


@pytest.fixture
def pay(api: Driver) -> str:
    api.register(CLASS, slots=[{"key": "iban"}], risks={"iban": "irreversible"})
    Runtime.objects.filter(name="test-runtime").update(
        audiences=["payments-service", "refunds-service"]
    )
    return CLASS


def _open(runtime: JsonClient, audience: str | None) -> Any:
    body: dict[str, Any] = {
        "task_class": CLASS,
        "principal": "alice",
        "beliefs": [{"slot": "iban", "value": "NL91ABNA0417164300", "source": "user"}],
    }
    if audience is not None:
        body["audience"] = audience
    return runtime.post_json(f"{API}/instances/", body)


def _stored() -> tuple[int, ...]:
    return (
        TaskInstance.objects.count(),
        Belief.objects.count(),
        Prompt.objects.count(),
        AuditEvent.objects.count(),
    )


@pytest.mark.parametrize(
    ("audience", "aud"),
    [
        (None, "test-runtime"),
        ("", "test-runtime"),
        ("test-runtime", "test-runtime"),
        ("payments-service", "payments-service"),
        ("refunds-service", "refunds-service"),
    ],
)
def test_a_receipt_is_for_the_runtime_or_an_audience_registered_for_it(
    api: Driver, pay: str, runtime_b: JsonClient, audience: str | None, aud: str
) -> None:
    opened = _open(api.runtime, audience)
    assert opened.status_code == 201, opened.json()
    api.plan(opened.json()["id"])
    receipt = api.instance(opened.json()["id"])["receipt"]
    assert jwt.decode(receipt, options={"verify_signature": False})["aud"] == aud


@pytest.mark.parametrize(
    "audience",
    [
        "billing-agent",  # another runtime's own name: its tool server would accept the receipt
        "ledger-service",  # an audience registered for another runtime
        "Payments-Service",  # one registered for this runtime, but not as written
        "payments",
        "console",
        "x" * 200,
    ],
)
def test_any_other_audience_is_refused_and_nothing_is_stored(
    api: Driver, pay: str, runtime_b: JsonClient, audience: str
) -> None:
    before = _stored()
    refused = _open(api.runtime, audience)
    assert refused.status_code == 400, refused.json()
    body = refused.json()
    assert body["error"] == "unknown_audience"
    assert list(body["fields"]) == ["audience"]
    assert "registered for it" in body["detail"]
    assert "payments-service" in body["detail"]  # the ones it may name, said to it
    assert _stored() == before


def test_another_runtime_cannot_mint_a_receipt_for_the_first(
    api: Driver, pay: str, runtime_b: JsonClient
) -> None:
    shared = api.runtime.put_json(f"{API}/task-classes/{CLASS}/shares/billing-agent/", {})
    assert shared.status_code == 200
    before = _stored()
    for audience in ("test-runtime", "payments-service"):
        refused = _open(runtime_b, audience)
        assert refused.status_code == 400 and refused.json()["error"] == "unknown_audience"
        assert "test-runtime" not in refused.json()["detail"].split("(")[-1]
    assert _stored() == before
    # Its own names it may use.
    assert _open(runtime_b, "ledger-service").status_code == 201


def test_a_refused_audience_under_an_idempotency_key_leaves_the_key_free(
    api: Driver, pay: str, runtime_b: JsonClient
) -> None:
    body = {"task_class": CLASS, "principal": "alice", "audience": "billing-agent"}
    key = {"HTTP_IDEMPOTENCY_KEY": "open-1"}
    assert api.runtime.post_json(f"{API}/instances/", body, **key).status_code == 400
    again = api.runtime.post_json(f"{API}/instances/", body, **key)
    assert again.status_code == 400 and again.json()["error"] == "unknown_audience"
    assert TaskInstance.objects.count() == 0


# --- task-class definitions ------------------------------------------------------------------


def _read(client: JsonClient | Client, key: str = CLASS) -> Any:
    return client.get(f"{API}/task-classes/{key}/")


@pytest.mark.parametrize("shared", [False, True])
@pytest.mark.parametrize("reader", ["owner", "other runtime", "person"])
def test_a_task_class_is_read_by_its_owner_those_it_is_shared_with_and_people(
    api: Driver,
    pay: str,
    runtime_b: JsonClient,
    person_client: Any,
    alice: User,
    reader: str,
    shared: bool,
) -> None:
    if shared:
        put = api.runtime.put_json(f"{API}/task-classes/{CLASS}/shares/billing-agent/", {})
        assert put.status_code == 200
    client = {"owner": api.runtime, "other runtime": runtime_b, "person": person_client(alice)}
    answer = _read(client[reader])
    if reader == "other runtime" and not shared:
        assert answer.status_code == 404
        # The same answer as for a class that does not exist: not even its existence shows.
        missing = _read(runtime_b, "payments.nothing").json()
        assert answer.json() == {**missing, "detail": missing["detail"].replace("nothing", "pay")}
        assert answer.json()["error"] == "unknown_task_class"
        assert "iban" not in str(answer.json())
    else:
        assert answer.status_code == 200, answer.json()
        assert [s["key"] for s in answer.json()["slots"]] == ["iban"]


def test_unsharing_hides_the_definition_again(api: Driver, pay: str, runtime_b: JsonClient) -> None:
    share = f"{API}/task-classes/{CLASS}/shares/billing-agent/"
    assert api.runtime.put_json(share, {}).status_code == 200
    assert _read(runtime_b).status_code == 200
    assert api.runtime.delete(share).status_code == 204
    assert _read(runtime_b).status_code == 404


def test_a_class_nobody_owns_is_read_by_any_runtime(
    api: Driver, pay: str, runtime_b: JsonClient
) -> None:
    # A class registered before runtimes owned classes: any runtime may open and adopt it.
    TaskClass.objects.filter(key=CLASS).update(owner=None)
    assert _read(runtime_b).status_code == 200
