"""Errors that services raise; the API and the pages turn them into 4xx answers."""

from __future__ import annotations

from typing import Any


class ServiceError(Exception):
    status = 400
    code = "invalid"

    def __init__(
        self,
        detail: str,
        *,
        code: str | None = None,
        fields: dict[str, list[str]] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        if code:
            self.code = code
        self.fields = fields or {}
        self.extra = extra or {}

    def as_body(self) -> dict[str, Any]:
        return {"error": self.code, "detail": self.detail, "fields": self.fields, **self.extra}


class InvalidInput(ServiceError):
    status = 400
    code = "invalid"


class NotFound(ServiceError):
    status = 404
    code = "not_found"


class PermissionDenied(ServiceError):
    status = 403
    code = "forbidden"


class Conflict(ServiceError):
    status = 409
    code = "conflict"


class StaleVersion(Conflict):
    code = "stale_version"


def field_error(field: str, message: str) -> InvalidInput:
    return InvalidInput(f"{field}: {message}", fields={field: [message]})


class IdempotencyKeyMismatch(ServiceError):
    """An Idempotency-Key sent again with a different request: the first answer stands."""

    status = 422
    code = "idempotency_key_mismatch"


class ServiceUnavailable(ServiceError):
    status = 503
    code = "busy"
