"""Errors that services raise; the API and the pages turn them into 4xx answers."""

from __future__ import annotations

from typing import Any

from beliefs.domain.problems import Problem


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
        problems: dict[str, list[Problem]] | None = None,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        if code:
            self.code = code
        self.fields = fields or {}
        self.extra = extra or {}
        # The same refusals as data, for the fields whose problems have a code: pages say them
        # in their own words. `fields` keeps the API's messages.
        self.problems = problems or {}

    def __init_subclass__(
        cls, *, status: int | None = None, code: str | None = None, **kwargs: Any
    ) -> None:
        """Each kind of error names its HTTP status and its default code in its class line."""
        super().__init_subclass__(**kwargs)
        if status is not None:
            cls.status = status
        if code is not None:
            cls.code = code

    def as_body(self) -> dict[str, Any]:
        return {"error": self.code, "detail": self.detail, "fields": self.fields, **self.extra}


class InvalidInput(ServiceError, status=400, code="invalid"):
    """The input is malformed or breaks a rule: `fields` names what is wrong."""


class NotFound(ServiceError, status=404, code="not_found"):
    """No such thing, or not the caller's to see."""


class PermissionDenied(ServiceError, status=403, code="forbidden"):
    """The caller may not do this."""


class Conflict(ServiceError, status=409, code="conflict"):
    """The current state does not allow it."""


class StaleVersion(Conflict, code="stale_version"):
    """An answer to a prompt version that has been replaced."""


def field_error(field: str, problem: Problem | str) -> InvalidInput:
    """One field's refusal: a `Problem` where a page shows it to a person, else a message."""
    if isinstance(problem, str):
        return InvalidInput(f"{field}: {problem}", fields={field: [problem]})
    message = problem.message
    return InvalidInput(
        f"{field}: {message}", fields={field: [message]}, problems={field: [problem]}
    )


class IdempotencyKeyMismatch(ServiceError, status=422, code="idempotency_key_mismatch"):
    """An Idempotency-Key sent again with a different request: the first answer stands."""


class ServiceUnavailable(ServiceError, status=503, code="busy"):
    """The database was busy with competing changes; nothing was recorded."""

    retry_after = 1  # seconds, sent as Retry-After


class DatabaseUnavailable(ServiceUnavailable, code="database_unavailable"):
    """The database could not be reached, or dropped the connection mid-request."""

    retry_after = 2


class LimitExceeded(InvalidInput, code="limit_exceeded"):
    """More than a configured limit allows (slots, decisions, beliefs in one open)."""


class TooManyOpenInstances(Conflict, code="too_many_open_instances"):
    """The principal already has as many open instances from this runtime as allowed."""
