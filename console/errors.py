"""Error pages: JSON under /api/, the site's own page elsewhere."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

MESSAGES = {
    400: ("invalid", "Bad request."),
    403: ("forbidden", "You do not have access to this."),
    404: ("not_found", "No such page or resource."),
    500: ("server_error", "Something went wrong on our side; nothing was changed."),
}


def _answer(request: HttpRequest, status: int) -> HttpResponse:
    code, detail = MESSAGES[status]
    if request.path.startswith("/api/"):
        return JsonResponse({"error": code, "detail": detail, "fields": {}}, status=status)
    return render(request, "error.html", {"status": status, "detail": detail}, status=status)


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return _answer(request, 400)


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return _answer(request, 403)


def page_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return _answer(request, 404)


def server_error(request: HttpRequest) -> HttpResponse:
    return _answer(request, 500)
