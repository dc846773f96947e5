"""Error pages: JSON under /api/, the site's own page elsewhere."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

MESSAGES = {
    400: ("invalid", "The request could not be understood; nothing was changed."),
    403: ("forbidden", "You do not have access to this."),
    404: ("not_found", "No such page or resource."),
    500: ("server_error", "Something went wrong on our side; nothing was changed."),
}


CSRF_DETAIL = (
    "This page was out of date (you may have signed in again in another tab). Reload the "
    "page and try again; nothing was changed."
)


def _answer(request: HttpRequest, status: int, detail: str = "") -> HttpResponse:
    code, default = MESSAGES[status]
    detail = detail or default
    if request.path.startswith("/api/"):
        return JsonResponse({"error": code, "detail": detail, "fields": {}}, status=status)
    context = {"status": status, "detail": detail}
    if getattr(request, "htmx", False):
        # A part of a page asked: the message replaces the page's content, not the part (a
        # whole page inside a card would be a page within a page).
        response = render(request, "_error.html", context, status=status)
        response["HX-Retarget"] = "#main"
        response["HX-Reswap"] = "innerHTML"
        return response
    return render(request, "error.html", context, status=status)


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return _answer(request, 400)


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return _answer(request, 403)


def page_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return _answer(request, 404)


def server_error(request: HttpRequest) -> HttpResponse:
    return _answer(request, 500)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    return _answer(request, 403, CSRF_DETAIL)
