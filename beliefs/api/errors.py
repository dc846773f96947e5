"""Every API error is JSON: {"error": code, "detail": ..., "fields": {...}}."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from beliefs.errors import ServiceError, ServiceUnavailable
from beliefs.schemas import invalid_input
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
