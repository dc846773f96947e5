"""Holds an answer to the OpenAPI document, strictly: every key of every object it holds is one
the document declares for it, every key the document requires is there, and each value has
the declared type, format and choices. (Schemathesis checks answers against the document too,
but as OpenAPI reads it an object may hold keys it does not declare.) The validator is
jsonschema-rs, which schemathesis brings: a hundred times quicker than jsonschema at this, so
that every API test can afford it.

`tests/conftest.py` holds every JSON answer of the API a test gets to it."""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any

import jsonschema_rs
from drf_spectacular.generators import SchemaGenerator
from rest_framework.utils.encoders import JSONEncoder

SCHEMA_PATH = "/api/v1/schema/"


@cache
def document() -> dict[str, Any]:
    """The OpenAPI document the API serves at `SCHEMA_PATH`, made the way that view makes it
    (without a request: no query, so no test's query count sees it)."""
    made = SchemaGenerator().get_schema(request=None, public=True)
    body: dict[str, Any] = json.loads(json.dumps(made, cls=JSONEncoder))
    return body


def _strict(schema: Any) -> Any:
    """An OpenAPI 3.0 schema as a JSON Schema that refuses keys it does not declare:
    `nullable` becomes "or null", and every object with properties gets
    `additionalProperties: false`."""
    if not isinstance(schema, dict):
        return schema
    strict: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "properties":
            strict[key] = {name: _strict(child) for name, child in value.items()}
        elif key in ("items", "additionalProperties", "not"):
            strict[key] = _strict(value)
        elif key in ("allOf", "oneOf", "anyOf"):
            strict[key] = [_strict(child) for child in value]
        elif key != "nullable":
            strict[key] = value
    if "properties" in strict and "additionalProperties" not in strict:
        strict["additionalProperties"] = False
    if schema.get("nullable"):
        return {"anyOf": [strict, {"type": "null"}]}
    return strict


def operation_path(url: str) -> str | None:
    """The document's path of a request's URL (its ids and keys as the parameters they are,
    e.g. /api/v1/instances/{instance_id}/); None where the document has none."""
    for path in document()["paths"]:
        pattern = re.sub(r"\\{[^}]+\\}", "[^/]+", re.escape(path))
        if re.fullmatch(pattern, url):
            return path
    return None


@cache
def validator(path: str, method: str, status: int) -> jsonschema_rs.Draft202012Validator | None:
    """The strict validator of the JSON answer of `method` on `path` with `status`; None where
    the document declares no JSON body for it."""
    responses = document()["paths"][path].get(method.lower(), {}).get("responses", {})
    content = responses.get(str(status), {}).get("content", {}).get("application/json")
    if content is None:
        return None
    schemas = document()["components"]["schemas"]
    root = {
        **_strict(content["schema"]),
        "components": {"schemas": {name: _strict(s) for name, s in schemas.items()}},
    }
    # Formats checked too: an id is a UUID, a time is RFC 3339 with its offset.
    return jsonschema_rs.Draft202012Validator(root, validate_formats=True)


def check(response: Any) -> None:
    """Where the document declares a JSON answer for this request's operation and status, the
    answer's JSON is what it says (a `jsonschema_rs.ValidationError` otherwise)."""
    url = response.request["PATH_INFO"]
    path = operation_path(url) if url != SCHEMA_PATH else None
    if path is None or "json" not in response.get("Content-Type", ""):
        return
    found = validator(path, response.request["REQUEST_METHOD"], response.status_code)
    if found is not None:
        found.validate(response.json())


def assert_documented(response: Any) -> Any:
    """`response` answers an operation of the document with a status it declares a JSON body
    for, and its JSON is what the document says; returns the JSON."""
    url, method = response.request["PATH_INFO"], response.request["REQUEST_METHOD"]
    path = operation_path(url)
    assert path is not None, f"{url} is in no path of the document"
    found = validator(path, method, response.status_code)
    assert found is not None, f"no JSON answer of {method} {path} {response.status_code}"
    body = response.json()
    found.validate(body)
    return body
