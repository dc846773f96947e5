"""Every error path of the API answers 4xx JSON {"error", "detail", "fields"}, never a 500."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from beliefs.models import AuditEvent, Belief, PromptResponse, Slot, TaskInstance
from tests.conftest import JsonClient, runtime_key_of
from tests.examples import examples
from tests.support.api import API, Driver

pytestmark = pytest.mark.django_db


def _error(response: Any, status: int, field: str | None = None, code: str | None = None) -> dict:
    assert response.status_code == status, (response.status_code, response.content)
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert {"error", "detail", "fields"} <= set(body), body
    assert isinstance(body["detail"], str) and body["detail"]
    if field is not None:
        assert field in body["fields"], body
        assert body["fields"][field], body
    if code is not None:
        assert body["error"] == code, body
    return body


# --- opening instances ---------------------------------------------------------------------


def test_it_names_an_unknown_task_class(api: Driver) -> None:
    response = api.runtime.post_json(
        f"{API}/instances/", {"task_class": "nope", "principal": "alice"}
    )
    _error(response, 404, "task_class", "unknown_task_class")


def test_it_names_an_unknown_principal(api: Driver, transfer: str) -> None:
    response = api.runtime.post_json(
        f"{API}/instances/", {"task_class": transfer, "principal": "nobody"}
    )
    _error(response, 404, "principal", "unknown_principal")


def test_it_names_a_missing_principal(api: Driver, transfer: str) -> None:
    response = api.runtime.post_json(f"{API}/instances/", {"task_class": transfer})
    _error(response, 400, "principal")


def test_it_names_a_bad_source(api: Driver, instance_id: str) -> None:
    response = api.runtime.post_json(
        f"{API}/instances/{instance_id}/beliefs/",
        {"slot": "memo", "value": "x", "source": "oracle"},
    )
    _error(response, 400, "source")


def test_it_names_a_bad_source_in_the_opening_beliefs(api: Driver, transfer: str) -> None:
    response = api.runtime.post_json(
        f"{API}/instances/",
        {
            "task_class": transfer,
            "principal": "alice",
            "beliefs": [{"slot": "memo", "value": "x", "source": "oracle"}],
        },
    )
    _error(response, 400, "beliefs[0].source")
    assert not AuditEvent.objects.filter(kind="instance.opened").exists()  # nothing half-written


@pytest.mark.parametrize("turn", [-1, 1.5, "3", True, 2**31, 10**30])
def test_it_names_a_bad_turn(api: Driver, instance_id: str, turn: Any) -> None:
    response = api.runtime.post_json(
        f"{API}/instances/{instance_id}/beliefs/",
        {"slot": "memo", "value": "x", "source": "tool", "turn": turn},
    )
    _error(response, 400, "turn")


def test_it_refuses_a_stale_version_after_the_world_changed(api: Driver, transfer: str) -> None:
    world = {"recipient_account": {"iban": "DE89"}}
    run1 = api.open(transfer, world=world)
    api.plan(run1)
    api.answer_all(run1, {"recipient_account": "DE89", "memo": "m"})
    run2 = api.open(transfer, world=world)
    api.plan(run2)
    seen = api.prompt(run2, "recipient_account")
    assert (seen["rule"], seen["version"]) == ("R6", 1)
    moved = api.runtime.put_json(
        f"{API}/instances/{run2}/world/", {"world": {"recipient_account": {"iban": "GB33"}}}
    )
    assert moved.status_code == 200
    body = _error(api.respond(seen, "confirm"), 409, code="stale_version")
    assert body["prompt"]["version"] == 2
    assert [e["change"] for e in body["prompt"]["world_diff"]] == ["changed"]


@pytest.mark.parametrize("world_ref", ["yesterday", 3, ["a"], True])
def test_it_names_a_non_object_world_reference(
    api: Driver, instance_id: str, world_ref: Any
) -> None:
    response = api.runtime.post_json(
        f"{API}/instances/{instance_id}/beliefs/",
        {"slot": "memo", "value": "x", "source": "tool", "world_ref": world_ref},
    )
    _error(response, 400, "world_ref")


@pytest.mark.parametrize("world", ["now", 1, [{"memo": {}}]])
def test_it_names_a_non_object_world_when_opening(api: Driver, transfer: str, world: Any) -> None:
    response = api.runtime.post_json(
        f"{API}/instances/", {"task_class": transfer, "principal": "alice", "world": world}
    )
    _error(response, 400, "world")


def test_it_names_a_non_object_world_of_one_slot_when_opening(api: Driver, transfer: str) -> None:
    response = api.runtime.post_json(
        f"{API}/instances/",
        {"task_class": transfer, "principal": "alice", "world": {"memo": "today"}},
    )
    _error(response, 400, "world.memo")


def test_it_names_a_non_object_world_when_replacing_it(api: Driver, instance_id: str) -> None:
    response = api.runtime.put_json(
        f"{API}/instances/{instance_id}/world/", {"world": {"memo": "today"}}
    )
    _error(response, 400, "world.memo")
    response = api.runtime.put_json(f"{API}/instances/{instance_id}/world/", {"world": "now"})
    _error(response, 400, "world")


def test_it_names_an_unknown_field(api: Driver, transfer: str) -> None:
    response = api.runtime.post_json(
        f"{API}/instances/", {"task_class": transfer, "principal": "alice", "risk": "low"}
    )
    _error(response, 400, "risk")


# --- bodies --------------------------------------------------------------------------------


@pytest.mark.parametrize("raw", ['{"task_class": ', "{'a': 1}", "NaN", "\x00", '{"a": Infinity}'])
def test_it_refuses_malformed_json(runtime: JsonClient, raw: str) -> None:
    response = runtime.post(f"{API}/instances/", data=raw, content_type="application/json")
    body = _error(response, 400)
    assert body["error"] in ("malformed_json", "invalid_body")


@pytest.mark.parametrize("payload", [[], [1, 2], "text", 3, None])
def test_it_refuses_a_body_that_is_not_an_object(runtime: JsonClient, payload: Any) -> None:
    response = runtime.post(
        f"{API}/instances/", data=json.dumps(payload), content_type="application/json"
    )
    _error(response, 400, code="invalid_body")


@pytest.mark.parametrize("number", ["1e400", "-1" + "0" * 400, "2" + "0" * 308])
def test_it_refuses_a_number_beyond_a_double(api: Driver, instance_id: str, number: str) -> None:
    response = api.runtime.post(
        f"{API}/instances/{instance_id}/beliefs/",
        data='{"slot": "memo", "value": ' + number + ', "source": "tool"}',
        content_type="application/json",
    )
    _error(response, 400, "value")
    assert not Belief.objects.filter(slot__key="memo").exists()


def test_it_refuses_a_body_nested_too_deeply(api: Driver, instance_id: str) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    response = api.runtime.post(
        f"{API}/instances/{instance_id}/beliefs/",
        data='{"slot": "memo", "source": "tool", "value": ' + deep + "}",
        content_type="application/json",
    )
    _error(response, 400)
    nested = '{"a":' * 500 + "1" + "}" * 500
    response = api.runtime.post(
        f"{API}/instances/{instance_id}/beliefs/",
        data='{"slot": "memo", "source": "tool", "value": ' + nested + "}",
        content_type="application/json",
    )
    _error(response, 400, "value")


def test_it_refuses_a_form_encoded_body(runtime: JsonClient) -> None:
    response = runtime.post(f"{API}/instances/", data="task_class=x", content_type="text/plain")
    _error(response, 415)


# --- registration --------------------------------------------------------------------------


def test_it_refuses_a_risk_class_from_a_runtime_and_stores_a_suggestion(
    runtime: JsonClient,
) -> None:
    refused = runtime.put_json(
        f"{API}/task-classes/x.y/",
        {"slots": [{"key": "a", "risk_class": "cosmetic", "suggested_risk": "cosmetic"}]},
    )
    _error(refused, 400, "slots[0].risk_class")
    decision = runtime.put_json(
        f"{API}/task-classes/x.y/",
        {"slots": [{"key": "a"}], "decisions": [{"key": "d", "risk_class": "cosmetic"}]},
    )
    _error(decision, 400, "decisions[0].risk_class")
    ok = runtime.put_json(
        f"{API}/task-classes/x.y/", {"slots": [{"key": "a", "suggested_risk": "cosmetic"}]}
    )
    assert ok.status_code == 200
    (slot,) = ok.json()["slots"]
    assert (slot["risk_class"], slot["suggested_risk"], slot["effective_risk"]) == (
        "unclassified",
        "cosmetic",
        "irreversible",
    )


def test_it_refuses_a_monotonic_flag_from_a_runtime(runtime: JsonClient) -> None:
    response = runtime.put_json(
        f"{API}/task-classes/x.y/", {"slots": [{"key": "a", "monotonic": False}]}
    )
    _error(response, 400, "slots[0].monotonic")


def test_it_refuses_registration_by_a_person(
    person_client: Callable[[User], JsonClient], alice: User
) -> None:
    response = person_client(alice).put_json(f"{API}/task-classes/x.y/", {"slots": []})
    _error(response, 403)


def test_it_refuses_a_belief_for_a_slot_the_class_does_not_have(
    api: Driver, instance_id: str
) -> None:
    before = api.runtime.get(f"{API}/task-classes/payments.transfer/").json()
    response = api.runtime.post_json(
        f"{API}/instances/{instance_id}/beliefs/",
        {"slot": "ship_to", "value": "1 Main St", "source": "user", "world_ref": {"zip": "1"}},
    )
    body = _error(response, 400, code="unknown_slot")
    assert body["fields"] == {"slot": ["unknown slot 'ship_to'"]}
    # Nothing is stored: the class is as it was, and no belief was recorded.
    assert api.runtime.get(f"{API}/task-classes/payments.transfer/").json() == before
    assert not Belief.objects.filter(value="1 Main St").exists()


def test_it_refuses_opening_an_action_with_an_unknown_slot(api: Driver, transfer: str) -> None:
    response = api.runtime.post_json(
        f"{API}/instances/",
        {"task_class": transfer, "principal": "alice", "slots": ["recipient_account", "ref"]},
    )
    body = _error(response, 400, code="unknown_slot")
    assert body["fields"] == {"slots": ["unknown slot 'ref'"]}
    assert not TaskInstance.objects.exists()


@pytest.mark.parametrize("not_a_boolean", [0, 1, "true", "yes"])
def test_a_boolean_is_true_or_false_and_nothing_like_it(
    api: Driver, transfer: str, not_a_boolean: Any
) -> None:
    """JSON has a boolean type and the document says boolean: 0, 1 and words are refused
    (they had been taken as booleans), and nothing stored changes."""
    before = api.runtime.get(f"{API}/task-classes/{transfer}/").json()
    registered = api.runtime.put_json(
        f"{API}/task-classes/{transfer}/", {**before, "open_slots": not_a_boolean}
    )
    _error(registered, 400, "open_slots")
    assert api.runtime.get(f"{API}/task-classes/{transfer}/").json() == before
    shared = api.runtime.put_json(
        f"{API}/task-classes/{transfer}/shares/billing-agent/", {"history": not_a_boolean}
    )
    _error(shared, 400, "history")
    endpoint = api.runtime.post_json(
        f"{API}/webhook-endpoints/", {"url": "https://hooks.example.org/", "active": not_a_boolean}
    )
    _error(endpoint, 400, "active")
    assert api.runtime.get(f"{API}/webhook-endpoints/").json() == {"results": []}


# --- responding ----------------------------------------------------------------------------


def test_it_refuses_a_stale_version_with_the_fresh_prompt(api: Driver, instance_id: str) -> None:
    seen = api.prompt(instance_id, "recipient_account")
    changed = api.runtime.post_json(
        f"{API}/instances/{instance_id}/beliefs/",
        {"slot": "recipient_account", "value": "DE02", "source": "tool", "turn": 2},
    )
    assert changed.status_code == 201
    body = _error(api.respond(seen, "confirm"), 409, code="stale_version")
    assert body["prompt"]["version"] == seen["version"] + 1
    assert body["prompt"]["prefill"] == "DE02"
    assert not PromptResponse.objects.exists()


def test_it_records_a_double_submit_once(api: Driver, instance_id: str) -> None:
    prompt = api.prompt(instance_id, "recipient_account")
    first = api.respond(prompt, "confirm")
    second = api.respond(prompt, "confirm")
    assert (first.status_code, second.status_code) == (200, 200)
    assert (first.json()["replayed"], second.json()["replayed"]) == (False, True)
    assert Belief.objects.filter(source="user").count() == 1
    assert AuditEvent.objects.filter(kind="prompt.confirm").count() == 1
    different = api.respond(prompt, "edit", value="DE03")
    _error(different, 409, code="already_answered")


def test_it_returns_the_first_answer_for_a_retried_idempotency_key(
    api: Driver, instance_id: str
) -> None:
    prompt = api.prompt(instance_id, "memo")
    url = f"{API}/prompts/{prompt['id']}/respond/"
    first = api.person.post_json(
        url, {"action": "answer", "version": 1, "value": "a"}, HTTP_IDEMPOTENCY_KEY="retry-1"
    )
    retry = api.person.post_json(
        url, {"action": "answer", "version": 1, "value": "a"}, HTTP_IDEMPOTENCY_KEY="retry-1"
    )
    assert (first.status_code, retry.status_code) == (200, 200)
    assert retry.json()["replayed"] is True
    assert retry.json()["prompt"]["response_value"] == "a"
    assert list(Belief.objects.filter(slot__key="memo").values_list("value", flat=True)) == ["a"]


@pytest.mark.parametrize(
    "changed",
    [
        {"value": "b"},
        {"action": "reject"},
        {"reason": "changed my mind"},
        {"version": 2},
    ],
)
def test_it_refuses_an_idempotency_key_sent_again_with_a_different_answer(
    api: Driver, instance_id: str, changed: dict[str, Any]
) -> None:
    prompt = api.prompt(instance_id, "memo")
    url = f"{API}/prompts/{prompt['id']}/respond/"
    answer = {"action": "answer", "version": 1, "value": "a"}
    first = api.person.post_json(url, answer, HTTP_IDEMPOTENCY_KEY="retry-1")
    assert first.status_code == 200
    other = api.person.post_json(url, {**answer, **changed}, HTTP_IDEMPOTENCY_KEY="retry-1")
    body = _error(other, 422, code="idempotency_key_mismatch")
    assert "first answer stands" in body["detail"]
    assert list(Belief.objects.filter(slot__key="memo").values_list("value", flat=True)) == ["a"]
    assert PromptResponse.objects.get().action == "answer"
    assert AuditEvent.objects.filter(kind__startswith="prompt.").count() == 1


def test_it_names_an_overlong_idempotency_key(api: Driver, instance_id: str) -> None:
    prompt = api.prompt(instance_id, "memo")
    response = api.person.post_json(
        f"{API}/prompts/{prompt['id']}/respond/",
        {"action": "answer", "version": 1, "value": "a"},
        HTTP_IDEMPOTENCY_KEY="k" * 201,
    )
    _error(response, 400, "Idempotency-Key")


def test_it_hides_someone_elses_prompt(
    api: Driver, instance_id: str, person_client: Callable[[User], JsonClient], mallory: User
) -> None:
    prompt = api.prompt(instance_id, "recipient_account")
    response = person_client(mallory).post_json(
        f"{API}/prompts/{prompt['id']}/respond/", {"action": "confirm", "version": 1}
    )
    body = _error(response, 404)
    missing = person_client(mallory).post_json(
        f"{API}/prompts/999999/respond/", {"action": "confirm", "version": 1}
    )
    assert _error(missing, 404) == body  # the same answer: existence is not leaked
    assert not PromptResponse.objects.exists()
    listed = person_client(mallory).get(f"{API}/prompts/").json()
    assert listed["results"] == []


def test_it_refuses_a_runtime_key_responding(api: Driver, instance_id: str) -> None:
    prompt = api.prompt(instance_id, "recipient_account")
    response = api.runtime.post_json(
        f"{API}/prompts/{prompt['id']}/respond/", {"action": "confirm", "version": 1}
    )
    _error(response, 403, code="forbidden")
    assert not PromptResponse.objects.exists()


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"action": "confirm"}, "version"),
        ({"action": "confirm", "version": "one"}, "version"),
        ({"action": "confirm", "version": "²"}, "version"),
        ({"action": "confirm", "version": "9" * 5000}, "version"),
        ({"action": "confirm", "version": 10**30}, "version"),
        ({"action": "confirm", "version": 1.5}, "version"),
        ({"action": "confirm", "version": True}, "version"),
        ({"action": "launch", "version": 1}, "action"),
        ({"action": ["confirm"], "version": 1}, "action"),
        ({"action": "answer", "version": 1, "value": "x"}, "action"),  # a CONFIRM prompt
        ({"action": "edit", "version": 1}, "value"),
        ({"action": "edit", "version": 1, "value": "   "}, "value"),
        ({"action": "reject", "version": 1, "reason": 5}, "reason"),
    ],
)
def test_it_names_the_field_of_a_bad_response(
    api: Driver, instance_id: str, data: dict, field: str
) -> None:
    prompt = api.prompt(instance_id, "recipient_account")
    response = api.person.post_json(f"{API}/prompts/{prompt['id']}/respond/", data)
    _error(response, 400, field)
    assert not PromptResponse.objects.exists()


def test_it_names_a_bad_prompt_state_filter(api: Driver) -> None:
    _error(api.person.get(f"{API}/prompts/?state=bogus"), 400, "state")


# --- reading -------------------------------------------------------------------------------


def test_it_hides_someone_elses_instance(
    api: Driver, instance_id: str, person_client: Callable[[User], JsonClient], mallory: User
) -> None:
    _error(person_client(mallory).get(f"{API}/instances/{instance_id}/"), 404)
    assert api.person.get(f"{API}/instances/{instance_id}/").status_code == 200


def test_it_hides_an_instance_from_a_runtime_that_did_not_open_it(
    api: Driver, instance_id: str
) -> None:
    _, other_key = runtime_key_of("other-runtime")
    other = JsonClient()
    other.credentials(HTTP_AUTHORIZATION=f"Api-Key {other_key}")
    _error(other.get(f"{API}/instances/{instance_id}/"), 404)
    _error(other.post_json(f"{API}/instances/{instance_id}/plan/"), 404)
    _error(other.post_json(f"{API}/instances/{instance_id}/cancel/"), 404)
    _error(
        other.post_json(
            f"{API}/instances/{instance_id}/beliefs/",
            {"slot": "memo", "value": "x", "source": "tool"},
        ),
        404,
    )


def test_it_answers_404_for_an_unknown_instance(runtime: JsonClient) -> None:
    _error(runtime.get(f"{API}/instances/00000000-0000-0000-0000-000000000000/"), 404)
    _error(runtime.get(f"{API}/task-classes/nope/"), 404)


def test_it_refuses_to_plan_a_cancelled_instance(api: Driver, instance_id: str) -> None:
    cancelled = api.runtime.post_json(
        f"{API}/instances/{instance_id}/cancel/", {"reason": "user left"}
    )
    assert cancelled.status_code == 200
    assert cancelled.json()["status_reason"] == "user left"
    _error(api.runtime.post_json(f"{API}/instances/{instance_id}/plan/"), 409)
    _error(
        api.runtime.post_json(
            f"{API}/instances/{instance_id}/beliefs/",
            {"slot": "memo", "value": "x", "source": "tool"},
        ),
        409,
    )
    prompt = next(p for p in api.instance(instance_id)["prompts"] if p["slot"] == "memo")
    _error(api.respond(prompt, "answer", value="x"), 409)


def test_it_reads_a_reject_reason_from_the_instance(api: Driver, instance_id: str) -> None:
    prompt = api.prompt(instance_id, "recipient_account")
    response = api.respond(prompt, "reject", reason="not my account")
    assert response.status_code == 200
    instance = api.instance(instance_id)
    assert (instance["status"], instance["status_reason"]) == ("cancelled", "not my account")


# --- authentication, methods, service endpoints --------------------------------------------


def test_it_answers_401_json_without_credentials(client: Any, instance_id: str) -> None:
    for url in (f"{API}/instances/{instance_id}/", f"{API}/prompts/", f"{API}/instances/"):
        response = client.get(url)
        _error(response, 401, code="not_authenticated")


def test_it_answers_401_json_for_an_unknown_key(client: Any) -> None:
    response = client.get(f"{API}/prompts/", HTTP_AUTHORIZATION="Api-Key nope.nope")
    _error(response, 401)


def test_it_refuses_a_session_post_without_a_csrf_token(
    api: Driver, instance_id: str, alice: User
) -> None:
    prompt = api.prompt(instance_id, "recipient_account")
    browser = JsonClient(enforce_csrf_checks=True)
    browser.force_login(alice)
    response = browser.post_json(
        f"{API}/prompts/{prompt['id']}/respond/", {"action": "confirm", "version": 1}
    )
    _error(response, 403)
    assert not PromptResponse.objects.exists()


def test_it_answers_json_404_for_an_unknown_api_path(runtime: JsonClient) -> None:
    _error(runtime.get(f"{API}/instances/not-a-uuid/"), 404)
    _error(runtime.get(f"{API}/nothing-here/"), 404)


def test_it_answers_405_json_for_a_wrong_method(runtime: JsonClient, instance_id: str) -> None:
    _error(runtime.delete(f"{API}/instances/"), 405, code="method_not_allowed")
    _error(runtime.delete(f"{API}/instances/{instance_id}/"), 405, code="method_not_allowed")


def test_it_answers_healthz(client: Any) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_it_renders_the_schema_and_the_docs(runtime: JsonClient, client: Any) -> None:
    schema = runtime.get(f"{API}/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert schema.status_code == 200
    assert b"/api/v1/instances/" in schema.content
    docs = client.get(f"{API}/docs/")
    assert docs.status_code == 200
    assert b"swagger" in docs.content.lower()


# --- fuzz ----------------------------------------------------------------------------------

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)
FIELDS = st.sampled_from(
    ["task_class", "principal", "world", "beliefs", "slot", "value", "source", "turn", "world_ref"]
)
BODIES = JSON | st.dictionaries(FIELDS, JSON, max_size=6)
FUZZ = settings(
    max_examples=examples(25),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.mark.fuzz
@FUZZ
@given(body=BODIES)
def test_it_never_answers_500_to_random_instance_bodies(
    api: Driver, instance_id: str, body: Any
) -> None:
    for url in (f"{API}/instances/", f"{API}/instances/{instance_id}/beliefs/"):
        response = api.runtime.post(url, data=json.dumps(body), content_type="application/json")
        assert response.status_code < 500, (url, body, response.content)
        if response.status_code >= 400:
            _error(response, response.status_code)


@pytest.mark.fuzz
@FUZZ
@given(
    beliefs=st.lists(st.dictionaries(FIELDS, JSON, max_size=6), max_size=3),
    world=JSON,
)
def test_it_never_answers_500_to_random_beliefs_when_opening(
    api: Driver, transfer: str, beliefs: list, world: Any
) -> None:
    body = {"task_class": transfer, "principal": "alice", "beliefs": beliefs, "world": world}
    response = api.runtime.post_json(f"{API}/instances/", body)
    assert response.status_code < 500, (body, response.content)
    if response.status_code == 201:
        plan = api.runtime.post_json(f"{API}/instances/{response.json()['id']}/plan/")
        assert plan.status_code == 200, plan.content
    else:
        _error(response, response.status_code)


RESPONSES = st.dictionaries(
    st.sampled_from(["action", "version", "value", "value_confirmation", "reason"]),
    st.sampled_from(["confirm", "edit", "answer", "reject", "veto"])
    | st.integers(min_value=-2, max_value=3)
    | JSON,
    max_size=5,
)


@pytest.mark.fuzz
@FUZZ
@given(body=RESPONSES | BODIES, slot=st.sampled_from(["memo", "recipient_account"]))
def test_it_never_answers_500_to_random_responses(
    api: Driver, instance_id: str, body: Any, slot: str
) -> None:
    prompts = api.person.get(f"{API}/instances/{instance_id}/").json()["prompts"]
    prompt = next(p for p in prompts if p["slot"] == slot)
    response = api.person.post(
        f"{API}/prompts/{prompt['id']}/respond/",
        data=json.dumps(body),
        content_type="application/json",
    )
    assert response.status_code < 500, (body, response.content)
    if response.status_code >= 400:
        _error(response, response.status_code)


def test_it_keeps_slot_rows_for_unknown_slots_out_of_a_refused_request(
    api: Driver, instance_id: str
) -> None:
    response = api.runtime.post_json(
        f"{API}/instances/{instance_id}/beliefs/",
        {"slot": "brand_new", "value": "x", "source": "oracle"},
    )
    _error(response, 400, "source")
    assert not Slot.objects.filter(key="brand_new").exists()
