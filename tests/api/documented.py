"""Holds an answer to the OpenAPI document, strictly: every key of every object it holds is one
the document declares for it, every key the document requires is there, and each value has
the declared type, format and choices. (Schemathesis checks answers against the document too,
but as OpenAPI reads it an object may hold keys it does not declare.)"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import jsonschema
from django.test import Client

_DOCUMENT: dict[str, Any] = {}


def document(client: Client) -> dict[str, Any]:
    """The OpenAPI document, as the API serves it to `client` (read once: it never changes)."""
    if not _DOCUMENT:
        response = client.get("/api/v1/schema/?format=json")
        assert response.status_code == 200
        _DOCUMENT.update(response.json())
    return _DOCUMENT


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


_FORMATS = jsonschema.FormatChecker(formats=["uuid"])


@_FORMATS.checks("date-time", raises=ValueError)
def _date_time(value: object) -> bool:
    return not isinstance(value, str) or bool(datetime.fromisoformat(value).tzinfo)


def response_schema(doc: dict[str, Any], method: str, path: str, status: int) -> dict[str, Any]:
    """The document's schema of the JSON answer of `method` on `path` (as the document
    writes it, e.g. /api/v1/instances/{instance_id}/) with this status."""
    responses = doc["paths"][path][method.lower()]["responses"]
    schema: dict[str, Any] = responses[str(status)]["content"]["application/json"]["schema"]
    return schema


def operation_path(doc: dict[str, Any], url: str) -> str:
    """The document's path of a request's URL: its ids and keys as the parameters they are."""
    for path in doc["paths"]:
        pattern = re.sub(r"\\{[^}]+\\}", "[^/]+", re.escape(path))
        if re.fullmatch(pattern, url.split("?")[0]):
            return path
    raise AssertionError(f"{url} is in no path of the document")


def assert_documented(client: Client, response: Any) -> Any:
    """The JSON of `response`, which `client` was answered, is what the document says of that
    operation's answer with that status; returns the JSON."""
    doc = document(client)
    method, url = response.request["REQUEST_METHOD"], response.request["PATH_INFO"]
    schema = response_schema(doc, method, operation_path(doc, url), response.status_code)
    components = {"schemas": {name: _strict(s) for name, s in doc["components"]["schemas"].items()}}
    root = {**_strict(schema), "components": components}
    body = response.json()
    jsonschema.Draft202012Validator(root, format_checker=_FORMATS).validate(body)
    return body
