"""What the API answers for an instance, its plan and its prompts is exactly what the OpenAPI
document says, in every state the instance passes through: no key the document does not
declare, none it requires missing, each value of its declared type. The document's components
for these bodies are made from the same TypedDicts their builders return
(`beliefs.selectors.shapes`), by `serializer_for`; this holds the bytes to them."""

from __future__ import annotations

from typing import Annotated, Any, NotRequired, TypedDict

import jsonschema_rs
import pytest
from django.contrib.auth.models import Group, User

from beliefs.api.serializers import serializer_for
from beliefs.models import Decision
from beliefs.selectors.shapes import Doc
from tests.api import documented
from tests.api.documented import assert_documented
from tests.conftest import JsonClient
from tests.support.api import API, Driver

pytestmark = pytest.mark.django_db


class _PartJSON(TypedDict):
    n: int


class _ExampleJSON(TypedDict):
    """An example."""

    id: Annotated[str, Doc(format="uuid")]
    at: Annotated[str | None, Doc("when", format="date-time")]
    kind: Annotated[str, Doc(choices=("a", "b"))]
    value: Any
    world: dict[str, Any] | None
    names: list[str]
    parts: list[_PartJSON]
    part: _PartJSON | None
    note: NotRequired[str]


def test_a_shape_makes_the_serializer_the_document_reads() -> None:
    made = serializer_for(_ExampleJSON)
    assert (made.__name__, made.__doc__) == ("_ExampleOut", "An example.")
    fields = made().fields
    assert type(fields["id"]).__name__ == "UUIDField"
    at = fields["at"]
    assert (type(at).__name__, at.allow_null, at.help_text) == ("DateTimeField", True, "when")
    assert list(fields["kind"].choices) == ["a", "b"]
    assert fields["value"].allow_null and fields["world"].allow_null
    assert type(fields["names"]).__name__ == "ListField"
    assert type(fields["parts"].child) is serializer_for(_PartJSON)  # one component, nested
    assert fields["part"].allow_null and not fields["note"].required
    assert all(field.required for name, field in fields.items() if name != "note")

    class _UnknownJSON(TypedDict):
        ratio: float

    with pytest.raises(TypeError, match="no field documents"):
        serializer_for(_UnknownJSON)


def _trip(api: Driver) -> None:
    api.register(
        "trip",
        slots=[{"key": "card"}, {"key": "seat"}, {"key": "meal"}, {"key": "note"}],
        decisions=[{"key": "pay", "slots": ["card"]}],
        risks={"card": "irreversible", "seat": "reversible", "meal": "irreversible"},
        decision_risks={"pay": "irreversible"},
    )


def _open(api: Driver, body: dict[str, Any]) -> dict[str, Any]:
    opened = api.runtime.post_json(f"{API}/instances/", {"principal": "alice", **body})
    assert opened.status_code == 201, opened.json()
    return assert_documented(opened)


def _read(api: Driver, instance_id: str) -> dict[str, Any]:
    """The instance as its runtime and as its person read it, each held to the document."""
    url = f"{API}/instances/{instance_id}/"
    assert_documented(api.person.get(url))
    return assert_documented(api.runtime.get(url))


def _plan(api: Driver, instance_id: str) -> dict[str, Any]:
    return assert_documented(api.runtime.post_json(f"{API}/instances/{instance_id}/plan/"))


def _plan_is_the_instance_less(plan: dict[str, Any], instance: dict[str, Any]) -> None:
    """A plan's answer shows its instance as the instance's own body does, less what planning
    does not read, and the plan's items as the instance's plan."""
    shared = [key for key in plan if key != "items"]
    assert {k: plan[k] for k in shared} == {k: instance[k] for k in shared}
    assert plan["items"] == instance["plan"]


def _respond(api: Driver, prompt: dict[str, Any], action: str, **data: Any) -> Any:
    return api.person.post_json(
        f"{API}/prompts/{prompt['id']}/respond/",
        {"action": action, "version": prompt["version"], **data},
    )


def test_the_document_checked_is_the_one_the_api_serves(runtime: JsonClient) -> None:
    served = runtime.get(documented.SCHEMA_PATH + "?format=json")
    assert served.json() == documented.document()


def test_an_instance_its_plan_and_its_prompts_are_as_documented(api: Driver) -> None:
    _trip(api)
    world = {"card": {"holder": "Ada", "n": 1}}
    first = _open(
        api,
        {
            "task_class": "trip",
            "world": world,
            "beliefs": [
                {"slot": "card", "value": "4111", "source": "user", "world_ref": {"holder": "Ada"}},
                {"slot": "seat", "value": "12A", "source": "tool"},
            ],
        },
    )["id"]
    plan = _plan(api, first)
    assert plan["id"] == first and "instance" not in plan
    assert any(item["belief"] for item in plan["items"])
    _plan_is_the_instance_less(plan, _read(api, first))
    page = assert_documented(api.person.get(f"{API}/prompts/"))
    assert page["results"]

    # Answered one by one, to ready (a receipt, who vouched for each value).
    for prompt in _read(api, first)["prompts"]:
        if prompt["state"] != "open" or not prompt["blocking"]:
            continue
        value = {"card": "4111", "seat": "12B", "meal": "veg", "note": "hi"}[prompt["slot"]]
        action = "answer" if prompt["route"] == "ASK" else "edit"
        answered = _respond(api, prompt, action, value=value, value_confirmation=value)
        assert answered.status_code == 200, answered.json()
        assert_documented(answered)
    ready = _read(api, first)
    assert ready["status"] == "ready" and ready["receipt"] and ready["bound"]
    _plan_is_the_instance_less(_plan(api, first), ready)

    # A second run: carried beliefs, a changed world; a stale answer shows the fresh prompt.
    second = _open(api, {"task_class": "trip", "world": {"card": {"holder": "Bob", "n": 2}}})["id"]
    plan = _plan(api, second)
    assert any(item["world_diff"] for item in plan["items"])
    prompt = api.prompt(second, "card")
    assert prompt["belief"] and prompt["belief"]["carried"]
    changed = [e["key"] for e in prompt["world_diff"] if e["change"] != "unchanged"]
    assert _respond(api, prompt, "confirm", acknowledged=changed).status_code == 200
    _read(api, second)
    meal = api.prompt(second, "meal")
    assert _respond(api, meal, "answer", value="veg", value_confirmation="veg").status_code == 200
    stale = _respond(api, meal, "answer", value="fish", value_confirmation="fish")
    assert stale.status_code == 409
    assert set(assert_documented(stale)["prompt"]) >= {"id", "version", "prefill"}

    # Cancelled.
    third = _open(api, {"task_class": "trip"})["id"]
    _plan(api, third)
    cancelled = api.runtime.post_json(f"{API}/instances/{third}/cancel/")
    assert assert_documented(cancelled)["status"] == "cancelled"


def test_an_instance_awaiting_approval_is_as_documented(api: Driver) -> None:
    treasury = Group.objects.create(name="treasury")
    bob = User.objects.create_user(username="bob")
    bob.groups.add(treasury)
    _trip(api)
    Decision.objects.filter(key="pay").update(approvals_required=1, approvers=treasury)
    instance_id = _open(api, {"task_class": "trip"})["id"]
    _plan(api, instance_id)
    api.answer_all(instance_id, {"card": "4111", "seat": "1A", "meal": "veg", "note": "hi"})
    waiting = _read(api, instance_id)
    assert waiting["status"] == "awaiting_approval" and waiting["quorum"]


def test_the_check_refuses_an_undeclared_key_and_a_missing_one(
    api: Driver, runtime: JsonClient
) -> None:
    """The check itself: a body with a key the document does not declare, or without one it
    requires, is refused (as a plan that still named its instance `instance` would be)."""
    _trip(api)
    instance_id = _open(api, {"task_class": "trip"})["id"]
    response = runtime.post_json(f"{API}/instances/{instance_id}/plan/")
    body = response.json()
    for wrong in ({**body, "instance": body["id"]}, {k: v for k, v in body.items() if k != "id"}):
        response.json = lambda wrong=wrong: wrong  # type: ignore[method-assign]
        with pytest.raises(jsonschema_rs.ValidationError):
            assert_documented(response)
