"""The OpenAPI document says what the API does: every body it answers, and every input it
refuses for its shape."""

from __future__ import annotations

from typing import Any

import pytest

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
