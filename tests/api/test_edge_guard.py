"""One guard at the edge: text a database cannot store and over-deep JSON are refused with a 400
naming the field, in JSON bodies, form posts, query strings and URLs, for the API and the pages,
before anything else reads the request, and nothing is stored."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils.crypto import get_random_string

from beliefs.models import AuditEvent, Prompt, TaskInstance
from tests.conftest import JsonClient
from tests.support.api import API, Driver

pytestmark = pytest.mark.django_db

NUL = "\x00"
SURROGATE = "\ud800"  # sent as the JSON escape \ud800: valid JSON, not valid Unicode text


def _refused(response: Any, field: str) -> dict[str, Any]:
    assert response.status_code == 400, (response.status_code, response.content[:300])
    body = response.json()
    assert {"error", "detail", "fields"} <= set(body), body
    assert field in body["fields"], body
    return body


# (caller, method, path, body with BAD where the hostile text goes, the field named)
RUNTIME_CASES = [
    ("put", "/task-classes/x.y/", {"name": "BAD"}, "name"),
    ("put", "/task-classes/x.y/", {"slots": [{"key": "BAD"}]}, "slots[0].key"),
    ("put", "/task-classes/x.y/", {"slots": [{"key": "a", "label": "BAD"}]}, "slots[0].label"),
    (
        "put",
        "/task-classes/x.y/",
        {"slots": [{"key": "a"}], "decisions": [{"key": "d", "label": "BAD"}]},
        "decisions[0].label",
    ),
    ("post", "/instances/", {"task_class": "payments.transfer", "principal": "BAD"}, "principal"),
    ("post", "/instances/", {"task_class": "BAD", "principal": "alice"}, "task_class"),
    (
        "post",
        "/instances/",
        {"task_class": "payments.transfer", "principal": "alice", "world": {"memo": {"BAD": 1}}},
        "world.memo",
    ),
    (
        "post",
        "/instances/",
        {
            "task_class": "payments.transfer",
            "principal": "alice",
            "beliefs": [{"slot": "memo", "value": "BAD", "source": "tool"}],
        },
        "beliefs[0].value",
    ),
    ("post", "/instances/ID/beliefs/", {"slot": "memo", "value": "BAD", "source": "tool"}, "value"),
    (
        "post",
        "/instances/ID/beliefs/",
        {"slot": "memo", "value": {"a": ["x", "BAD"]}, "source": "tool"},
        "value.a[1]",
    ),
    ("post", "/instances/ID/beliefs/", {"slot": "BAD", "value": 1, "source": "tool"}, "slot"),
    (
        "post",
        "/instances/ID/beliefs/",
        {"slot": "memo", "value": 1, "source": "tool", "world_ref": {"BAD": 1}},
        "world_ref",
    ),
    ("put", "/instances/ID/world/", {"world": {"memo": {"BAD": "x"}}}, "world.memo"),
    ("put", "/instances/ID/world/", {"world": {"memo": {"zip": "BAD"}}}, "world.memo.zip"),
    ("post", "/instances/ID/cancel/", {"reason": "BAD"}, "reason"),
    (
        "post",
        "/proposals/validate/",
        {"graph": {}, "update": {}, "source": {"run": "BAD"}},
        "source.run",
    ),
]


def _with(body: Any, bad: str) -> Any:
    return json.loads(json.dumps(body).replace("BAD", json.dumps(bad)[1:-1]))


@pytest.mark.parametrize("bad", [NUL, SURROGATE], ids=["nul", "surrogate"])
@pytest.mark.parametrize(("method", "path", "body", "field"), RUNTIME_CASES)
def test_it_refuses_unstorable_text_from_a_runtime(
    api: Driver, instance_id: str, bad: str, method: str, path: str, body: Any, field: str
) -> None:
    before = (AuditEvent.objects.count(), TaskInstance.objects.get(pk=instance_id).world)
    url = API + path.replace("ID", instance_id)
    raw = json.dumps(body).replace("BAD", json.dumps(bad)[1:-1])  # the JSON escape, \u0000

    response = getattr(api.runtime, method)(url, data=raw, content_type="application/json")

    _refused(response, field)
    assert (AuditEvent.objects.count(), TaskInstance.objects.get(pk=instance_id).world) == before


@pytest.mark.parametrize("bad", [NUL, SURROGATE], ids=["nul", "surrogate"])
@pytest.mark.parametrize("field", ["value", "reason", "value_confirmation"])
def test_it_refuses_unstorable_text_in_a_response(
    api: Driver, instance_id: str, bad: str, field: str
) -> None:
    prompt = api.prompt(instance_id, "memo")
    body = {"action": "answer", "version": 1, "value": "ok", field: "BAD"}
    raw = json.dumps(body).replace("BAD", json.dumps(bad)[1:-1])
    response = api.person.post(
        f"{API}/prompts/{prompt['id']}/respond/", data=raw, content_type="application/json"
    )
    _refused(response, field)
    assert Prompt.objects.get(pk=prompt["id"]).state == "open"


def test_it_refuses_a_nul_in_a_query_string_and_a_url(api: Driver, instance_id: str) -> None:
    body = _refused(api.person.get(f"{API}/prompts/?state=open%00"), "state")
    assert body["error"] == "invalid_filter"
    _refused(api.runtime.get(f"{API}/task-classes/pay%00ments/"), "key")
    _refused(api.runtime.put_json(f"{API}/task-classes/x%00y/", {"name": "x"}), "key")
    assert (
        not AuditEvent.objects.filter(kind__startswith="task_class.")
        .exclude(task_class__key="payments.transfer")
        .exists()
    )


def test_it_refuses_a_nul_in_the_pages_forms_and_filters(
    api: Driver, instance_id: str, alice: User, carol: User
) -> None:
    alice_page = Client()
    alice_page.force_login(alice)
    prompt = Prompt.objects.get(instance_id=instance_id, slot__key="memo")
    posted = alice_page.post(
        f"/instances/{instance_id}/prompts/{prompt.pk}/respond/",
        {"action": "answer", "version": prompt.version, "value": f"a{NUL}b"},
    )
    assert posted.status_code == 400
    assert "value" in posted.content.decode() and "NUL" in posted.content.decode()
    prompt.refresh_from_db()
    assert prompt.state == "open"

    carol_page = Client()
    carol_page.force_login(carol)
    for query in ("actor=x%00", "task_class=%00", "kind=a%00b"):
        listed = carol_page.get(f"/activity/?{query}")
        assert listed.status_code == 400, query
        assert "NUL" in listed.content.decode()


def _csrf_client(user: User) -> JsonClient:
    """A signed-in browser session, CSRF checks on, with a valid token (cookie and header)."""
    token = get_random_string(32)
    client = JsonClient(enforce_csrf_checks=True, HTTP_X_CSRFTOKEN=token)
    client.force_login(user)
    client.cookies["csrftoken"] = token
    return client


def test_it_refuses_deep_json_from_a_signed_in_person_before_the_csrf_check_reads_it(
    api: Driver, instance_id: str, alice: User
) -> None:
    prompt = api.prompt(instance_id, "memo")
    url = f"{API}/prompts/{prompt['id']}/respond/"
    browser = _csrf_client(alice)
    too_deep = '{"action": "answer", "version": 1, "value": ' + "[" * 100_000 + "]" * 100_000
    response = browser.post(url, data=too_deep + "}", content_type="application/json")
    _refused(response, "value")
    nested = '{"action": "answer", "version": 1, "value": ' + "[" * 40 + "]" * 40 + "}"
    body = _refused(browser.post(url, data=nested, content_type="application/json"), "value")
    assert body["error"] == "too_deep"
    # The token is good: a sound answer from the same session goes through.
    ok = browser.post_json(url, {"action": "answer", "version": 1, "value": "fine"})
    assert ok.status_code == 200, ok.content


# --- bodies: empty, chunked, unknown fields ------------------------------------------------


def test_it_refuses_an_empty_body_where_a_world_belongs(api: Driver, instance_id: str) -> None:
    api.runtime.put_json(f"{API}/instances/{instance_id}/world/", {"world": {"memo": {"a": 1}}})
    for raw in ("", "{}"):
        response = api.runtime.put(
            f"{API}/instances/{instance_id}/world/", data=raw, content_type="application/json"
        )
        body = _refused(response, "world")
        assert body["error"] == "missing_field"
    assert TaskInstance.objects.get(pk=instance_id).world == {"memo": {"a": 1}}


def test_it_refuses_unknown_fields_on_every_endpoint_the_same_way(
    api: Driver, instance_id: str
) -> None:
    prompt = api.prompt(instance_id, "memo")
    calls: list[tuple[Callable[..., Any], str, dict[str, Any]]] = [
        (api.runtime.put_json, "/task-classes/x.y/", {}),
        (api.runtime.put_json, "/task-classes/x.y/", {"slots": [{"key": "a", "why": 1}]}),
        (api.runtime.post_json, "/instances/", {"task_class": "t", "principal": "alice"}),
        (
            api.runtime.post_json,
            "/instances/ID/beliefs/",
            {"slot": "m", "value": 1, "source": "tool"},
        ),
        (api.runtime.put_json, "/instances/ID/world/", {"world": {}}),
        (api.runtime.post_json, "/instances/ID/cancel/", {}),
        (api.runtime.post_json, "/proposals/validate/", {"graph": {}, "update": {}}),
        (
            api.person.post_json,
            f"/prompts/{prompt['id']}/respond/",
            {"action": "confirm", "version": 1},
        ),
    ]
    for call, path, body in calls:
        url = API + path.replace("ID", instance_id)
        extra = {**body, "why": 1} if "slots" not in body else body
        response = call(url, extra)
        answer = response.json()
        assert response.status_code == 400, (path, answer)
        assert answer["error"] == "unknown_field", (path, answer)
        assert answer["fields"] in ({"why": ["unknown field"]}, {"slots[0].why": ["unknown field"]})
    assert TaskInstance.objects.get(pk=instance_id).status == "awaiting_user"


def test_it_reads_a_chunked_body_where_the_server_terminates_its_input(
    api: Driver, instance_id: str
) -> None:
    url = f"{API}/instances/{instance_id}/cancel/"
    body = json.dumps({"reason": "sent in chunks"}).encode()
    chunked = {"HTTP_TRANSFER_ENCODING": "chunked", "CONTENT_LENGTH": ""}

    unterminated = api.runtime.generic("POST", url, body, "application/json", **chunked)
    assert unterminated.status_code == 411, unterminated.content
    assert TaskInstance.objects.get(pk=instance_id).status == "awaiting_user"

    # As gunicorn does: the input stream ends where the body ends, and says so.
    server = {"wsgi.input": io.BytesIO(body), "wsgi.input_terminated": True}
    read = api.runtime.generic("POST", url, body, "application/json", **chunked, **server)
    assert read.status_code == 200, read.content
    assert read.json()["status_reason"] == "sent in chunks"


# --- a write that lost every retry -----------------------------------------------------------


def test_it_answers_503_with_a_message_when_the_database_stays_busy(
    api: Driver, instance_id: str, alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    from beliefs.errors import ServiceUnavailable
    from beliefs.services import responses

    def busy(*args: Any, **kwargs: Any) -> None:
        raise ServiceUnavailable("busy", code="busy")

    monkeypatch.setattr(responses, "_respond", busy)
    prompt = Prompt.objects.get(instance_id=instance_id, slot__key="memo")

    answered = api.person.post_json(
        f"{API}/prompts/{prompt.pk}/respond/", {"action": "answer", "version": 1, "value": "x"}
    )
    assert (answered.status_code, answered.json()["error"]) == (503, "busy")
    assert answered["Retry-After"] == "1"

    page = Client()
    page.force_login(alice)
    posted = page.post(
        f"/instances/{instance_id}/prompts/{prompt.pk}/respond/",
        {"action": "answer", "version": 1, "value": "x"},
    )
    assert posted.status_code == 503
    assert "nothing was recorded" in posted.content.decode()
