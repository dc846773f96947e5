"""What anyone may fetch without signing in: the health and readiness checks and the receipts'
public keys.

They are plain Django views, served outside the API (`/healthz`, `/readyz`,
`/.well-known/jwks.json`).
"""

from __future__ import annotations

from django.db import Error as DatabaseError
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from beliefs import signing
from beliefs.selectors.health import database_answers, pending_migrations


@require_GET
def jwks(request: HttpRequest) -> JsonResponse:
    """The receipts' public keys (RFC 7517): anyone may verify a receipt offline."""
    response = JsonResponse(signing.jwks())
    response["Cache-Control"] = "public, max-age=300"
    response["Access-Control-Allow-Origin"] = "*"
    return response


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    database_answers()
    return JsonResponse({"status": "ok"})


@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    """Whether this process should get traffic: 200 when the database answers and its schema
    is the code's; 503 (with what is wrong, and Retry-After) while the database is out of reach
    or migrations are pending, so an orchestrator routes around the process. `/healthz` stays
    the liveness check."""
    checks: dict[str, str] = {}
    try:
        database_answers()
        checks["database"] = "ok"
        pending = pending_migrations()
        checks["migrations"] = "pending: " + ", ".join(pending) if pending else "ok"
    except DatabaseError as error:
        checks["database"] = f"unreachable: {type(error).__name__}"
    ready = all(value == "ok" for value in checks.values()) and "migrations" in checks
    response = JsonResponse({"status": "ready" if ready else "not_ready", "checks": checks})
    if not ready:
        response.status_code = 503
        response["Retry-After"] = "5"
    response["Cache-Control"] = "no-store"
    return response
