"""Every API error is JSON: {"error": code, "detail": ..., "fields": {...}}."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from beliefs.errors import InvalidInput, ServiceError, ServiceUnavailable
from beliefs.services.retry import as_unavailable

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


def _flatten(detail: Any, prefix: str = "", codes: set[str] | None = None) -> dict[str, list[str]]:
    """DRF's nested errors as {"slots[0].risk_class": [messages]}; `codes` collects their codes.

    An object's own error (DRF's "non_field_errors") is named by the object's path.
    """
    fields: dict[str, list[str]] = {}
    if isinstance(detail, dict):
        for key, value in detail.items():
            if key == "non_field_errors" and prefix:
                name = prefix
            elif isinstance(key, int):  # a list's errors, keyed by index
                name = f"{prefix}[{key}]"
            else:
                name = f"{prefix}.{key}" if prefix else str(key)
            for path, messages in _flatten(value, name, codes).items():
                fields.setdefault(path, []).extend(messages)
    elif isinstance(detail, list):
        if all(not isinstance(item, dict | list) for item in detail):
            fields[prefix or "non_field_errors"] = [str(item) for item in detail]
            if codes is not None:
                codes.update(getattr(item, "code", "invalid") for item in detail)
        else:
            for index, item in enumerate(detail):
                fields.update(_flatten(item, f"{prefix}[{index}]", codes))
    else:
        fields[prefix or "non_field_errors"] = [str(detail)]
        if codes is not None:
            codes.add(getattr(detail, "code", "invalid"))
    return fields


def invalid_input(exc: exceptions.ValidationError) -> InvalidInput:
    """A serializer's refusal as the error the services raise (one shape for API and pages).

    The code says what kind of refusal it is when all of its parts agree: only unknown fields
    (`unknown_field`), only missing ones (`missing_field`), only lists over a limit
    (`limit_exceeded`); anything else is `invalid`.
    """
    codes: set[str] = set()
    fields = _flatten(exc.detail, codes=codes)
    first_field, first_messages = next(iter(fields.items()), ("", ["invalid input"]))
    code = "invalid"
    if codes == {"unknown_field"}:
        code = "unknown_field"
    elif codes == {"required"}:
        code = "missing_field"
    elif codes == {"limit_exceeded"}:
        code = "limit_exceeded"
    return InvalidInput(f"{first_field}: {first_messages[0]}", code=code, fields=fields)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, exceptions.ValidationError):
        exc = invalid_input(exc)
    else:
        # A race the retries could not win, or a database out of reach: 503, not 500.
        exc = as_unavailable(exc) or exc
    if isinstance(exc, ServiceError):
        response = Response(exc.as_body(), status=exc.status)
        if isinstance(exc, ServiceUnavailable):
            response["Retry-After"] = str(exc.retry_after)
        return response
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    handled = drf_exception_handler(exc, context)
    if handled is None:
        return None
    response = handled
    code = CODES.get(response.status_code, "error")
    if isinstance(exc, exceptions.ParseError):
        code = "malformed_json"
    detail = exc.detail if isinstance(exc, exceptions.APIException) else str(exc)
    response.data = {"error": code, "detail": str(detail), "fields": {}}
    if response.status_code == status.HTTP_401_UNAUTHORIZED:
        response["WWW-Authenticate"] = "Api-Key"
    return response
