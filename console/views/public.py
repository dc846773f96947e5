"""What anyone may fetch without signing in: the health check and the receipts' public keys.

They are plain Django views, served outside the API (`/healthz`, `/.well-known/jwks.json`).
"""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from beliefs import signing
from beliefs.selectors.health import database_answers


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
