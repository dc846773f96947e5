"""Every API error is JSON: {"error": code, "detail": ..., "fields": {...}}."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from beliefs.errors import ServiceError

CODES = {
    400: "invalid",
    401: "not_authenticated",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    409: "conflict",
    415: "unsupported_media_type",
    429: "throttled",
}


def _flatten(detail: Any, prefix: str = "") -> dict[str, list[str]]:
    fields: dict[str, list[str]] = {}
    if isinstance(detail, dict):
        for key, value in detail.items():
            name = f"{prefix}.{key}" if prefix else str(key)
            fields.update(_flatten(value, name))
    elif isinstance(detail, list):
        if all(not isinstance(item, dict | list) for item in detail):
            fields[prefix or "non_field_errors"] = [str(item) for item in detail]
        else:
            for index, item in enumerate(detail):
                fields.update(_flatten(item, f"{prefix}[{index}]"))
    else:
        fields[prefix or "non_field_errors"] = [str(detail)]
    return fields


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, ServiceError):
        return Response(exc.as_body(), status=exc.status)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    code = CODES.get(response.status_code, "error")
    if isinstance(exc, exceptions.ParseError):
        code = "malformed_json"
    if isinstance(exc, exceptions.ValidationError):
        fields = _flatten(exc.detail)
        first = next(iter(fields.items()), ("", ["invalid input"]))
        body = {"error": "invalid", "detail": f"{first[0]}: {first[1][0]}", "fields": fields}
    else:
        detail = exc.detail if isinstance(exc, exceptions.APIException) else str(exc)
        body = {"error": code, "detail": str(detail), "fields": {}}
    response.data = body
    if response.status_code == status.HTTP_401_UNAUTHORIZED:
        response["WWW-Authenticate"] = "Api-Key"
    return response
