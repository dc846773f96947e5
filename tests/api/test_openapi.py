"""The OpenAPI document says what the API does: every body it answers, and every input it
refuses for its shape."""

from __future__ import annotations

import json
import re
import sys
from typing import Any

import pytest

from beliefs.api.schema import NON_BLANK_TEXT
from tests.conftest import JsonClient

pytestmark = pytest.mark.django_db


@pytest.fixture
def schema(runtime: JsonClient) -> dict[str, Any]:
    response = runtime.get("/api/v1/schema/?format=json")
    assert response.status_code == 200
    return response.json()


def _operations(schema: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method, path, operation)
        for path, item in schema["paths"].items()
        for method, operation in item.items()
        if method in ("get", "put", "post", "patch", "delete")
    ]


def test_it_describes_the_body_of_every_success_response(schema: dict[str, Any]) -> None:
    bare = [
        (method, path, code)
        for method, path, operation in _operations(schema)
        for code, response in operation["responses"].items()
        if code.startswith("2")
        and code != "204"  # No Content: the answer has no body by definition
        and "schema" not in response.get("content", {}).get("application/json", {})
        and path not in ("/api/v1/schema/",)  # the document itself
    ]
    assert bare == []


def test_it_documents_the_json_error_body_for_every_refusal(schema: dict[str, Any]) -> None:
    for method, path, operation in _operations(schema):
        if path == "/api/v1/schema/":
            continue
        for code in ("400", "401", "403", "404"):
            assert code in operation["responses"], (method, path, code)


def test_it_says_every_request_body_refuses_unknown_fields(schema: dict[str, Any]) -> None:
    requests = {
        name: component
        for name, component in schema["components"]["schemas"].items()
        if name.endswith("Request")
    }
    assert {"TaskClassInRequest", "SlotInRequest", "RespondInRequest"} <= set(requests)
    assert {name for name, c in requests.items() if c.get("additionalProperties") is not False} == (
        set()
    )


def test_it_matches_what_the_api_accepts(schema: dict[str, Any]) -> None:
    components = schema["components"]["schemas"]
    version = components["RespondInRequest"]["properties"]["version"]
    assert (version["type"], version["minimum"]) == ("integer", 1)  # version 0 is refused
    graph = components["ValidateInRequest"]["properties"]["graph"]
    assert graph.get("nullable") is True  # null is judged (a REJECT), not refused
    world = components["WorldInRequest"]
    assert world["required"] == ["world"]  # an empty body no longer replaces the world


def test_a_text_that_may_not_be_blank_needs_a_character_other_than_white_space() -> None:
    # Over every character: the document's pattern takes it alone exactly when the API would,
    # which trims white space (str.strip) before it refuses blank text, and refuses NUL.
    pattern = re.compile(NON_BLANK_TEXT)
    wrong = [
        hex(code)
        for code in range(sys.maxunicode + 1)
        if bool(pattern.fullmatch(chr(code))) != (code != 0 and chr(code).strip() != "")
    ]
    assert wrong == []
    assert pattern.fullmatch(" \u3000key\t") and not pattern.fullmatch("\u2028 \x1c")


def test_every_text_that_may_not_be_blank_says_so(schema: dict[str, Any]) -> None:
    found = {
        (name, field): prop.get("items", prop).get("pattern")
        for name, component in schema["components"]["schemas"].items()
        if name.endswith("Request")
        for field, prop in component.get("properties", {}).items()
        if prop.get("items", prop).get("type") == "string"
        and prop.get("items", prop).get("minLength", 0) >= 1
    }
    assert {("InstanceInRequest", "task_class"), ("SlotInRequest", "key")} <= set(found)
    assert {key for key, pattern in found.items() if pattern != NON_BLANK_TEXT} == set()


@pytest.mark.parametrize("space", [c for c in map(chr, range(sys.maxunicode + 1)) if c.isspace()])
def test_a_key_of_white_space_alone_is_refused_as_the_document_says(
    space: str, runtime: JsonClient
) -> None:
    assert not re.fullmatch(NON_BLANK_TEXT, space * 2)
    body = {"task_class": space * 2, "principal": "alice"}
    refused = runtime.post_json("/api/v1/instances/", body)
    assert refused.status_code == 400
    assert refused.json()["fields"] == {"task_class": ["must be a non-empty string"]}
    # Around a key, white space is trimmed: this one is looked up, and is not there.
    body["task_class"] = f"{space}no.such.class{space}"
    assert runtime.post_json("/api/v1/instances/", body).json()["error"] == "unknown_task_class"


# Free-form JSON by design: the values, worlds and graphs the runtimes and models send (data
# the console stores and shows, never interprets beyond comparing), and a JWK.
FREE_FORM = {
    "value",
    "value_confirmation",
    "prefill",
    "context_value",
    "response_value",
    "old",
    "new",
    "world",
    "world_ref",
    "world_now",
    "bindings",
    "graph",
    "update",
    "public_key_jwk",
}


def _free_form(prop: dict[str, Any]) -> bool:
    """A property whose content the document does not describe: any JSON, or an object or a
    list of objects with no declared keys."""
    if any(k in prop for k in ("$ref", "allOf", "oneOf", "enum")):
        return False
    if "type" not in prop:
        return True
    items = prop.get("items") if prop.get("type") == "array" else None
    if isinstance(items, dict) and items.get("type") == "object":
        return "properties" not in items
    return (
        prop["type"] == "object"
        and "properties" not in prop
        and (prop.get("additionalProperties") in (None, True, {}, {"nullable": True}))
    )


def test_every_field_is_typed_but_the_data_it_carries(schema: dict[str, Any]) -> None:
    untyped = {
        f"{name}.{key}"
        for name, component in schema["components"]["schemas"].items()
        for key, prop in (component.get("properties") or {}).items()
        if _free_form(prop) and key not in FREE_FORM
    }
    assert untyped == set()


@pytest.mark.parametrize(
    ("method", "path", "status", "header"),
    [
        ("get", "/api/v1/instances/{instance_id}/", "200", "ETag"),
        ("get", "/api/v1/instances/{instance_id}/", "304", "ETag"),
        ("get", "/api/v1/instances/{instance_id}/", "200", "Preference-Applied"),
        ("get", "/api/v1/instances/{instance_id}/", "304", "Preference-Applied"),
        ("post", "/api/v1/instances/", "200", "Idempotent-Replayed"),
    ],
)
def test_the_headers_the_api_answers_with_are_declared(
    schema: dict[str, Any], method: str, path: str, status: str, header: str
) -> None:
    response = schema["paths"][path][method]["responses"][status]
    assert header in response.get("headers", {}), response


def test_the_lists_have_their_own_operation_ids(schema: dict[str, Any]) -> None:
    ids = [operation["operationId"] for _, _, operation in _operations(schema)]
    assert len(ids) == len(set(ids))
    assert {"instances_list", "task_classes_list"} <= set(ids)
    assert not any(re.search(r"_\d+$", i) for i in ids), "a numbered id: a collision resolved"


def test_the_typescript_clients_document_is_the_current_one(tmp_path: Any) -> None:
    """clients/typescript/openapi.json is what `make typescript` writes: regenerate and commit
    it (and its types) with an API change."""
    from pathlib import Path

    from django.core.management import call_command

    written = tmp_path / "openapi.json"
    call_command("spectacular", "--format", "openapi-json", "--file", str(written))
    committed = Path(__file__).resolve().parents[2] / "clients" / "typescript" / "openapi.json"
    assert json.loads(committed.read_text()) == json.loads(written.read_text()), (
        "the API changed: run `make typescript` and commit clients/typescript"
    )
