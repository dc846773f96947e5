"""Error pages: JSON under /api/, the site's own page elsewhere."""

from __future__ import annotations

import sys

from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from beliefs.errors import DatabaseUnavailable, ServiceUnavailable
from beliefs.services.retry import BUSY_DETAIL, UNAVAILABLE_DETAIL, as_unavailable

MESSAGES = {
    400: ("invalid", "The request could not be understood; nothing was changed."),
    403: ("forbidden", "You do not have access to this."),
    404: ("not_found", "No such page or resource."),
    500: ("server_error", "Something went wrong on our side; nothing was changed."),
    503: ("busy", "The database is busy; try again in a moment."),
}


# Marks a response as one of these pages (`OwnNotFoundMiddleware` leaves it as it is).
OWN_PAGE = "console_error_page"

CSRF_DETAIL = (
    "This page was out of date (you may have signed in again in another tab). Reload the "
    "page and try again; nothing was changed."
)


def _answer(request: HttpRequest, status: int, detail: str = "", code: str = "") -> HttpResponse:
    default_code, default = MESSAGES[status]
    code = code or default_code
    detail = detail or default
    if request.path.startswith("/api/") or request.path == "/healthz":
        return JsonResponse({"error": code, "detail": detail, "fields": {}}, status=status)
    context = {"status": status, "detail": detail}
    if getattr(request, "htmx", False):
        # A part of a page asked: the message replaces the page's content, not the part (a
        # whole page inside a card would be a page within a page).
        response = render(request, "_error.html", context, status=status)
        response["HX-Retarget"] = "#main"
        response["HX-Reswap"] = "innerHTML"
    else:
        response = render(request, "error.html", context, status=status)
    setattr(response, OWN_PAGE, True)
    return response


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return _answer(request, 400)


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return _answer(request, 403)


def page_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return _answer(request, 404)


def unavailable(request: HttpRequest, error: ServiceUnavailable) -> HttpResponse:
    """503 with Retry-After: the database was busy, or out of reach."""
    detail = BUSY_DETAIL
    if isinstance(error, DatabaseUnavailable):
        detail = UNAVAILABLE_DETAIL
        # The page renders without the database: its header would read the session and the
        # person's roles, and fail again.
        request.user = AnonymousUser()
    if request.path.startswith("/api/"):
        detail = error.detail  # the service's own words (API views answer through DRF)
    response = _answer(request, 503, detail, error.code)
    response["Retry-After"] = str(error.retry_after)
    return response


def server_error(request: HttpRequest) -> HttpResponse:
    """Django's last resort, also for what fails outside a view (the session read that the
    sign-in check makes before one): the database's trouble is a 503, anything else a 500."""
    error = as_unavailable(sys.exc_info()[1] or Exception())
    if error is not None:
        return unavailable(request, error)
    return _answer(request, 500)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    return _answer(request, 403, CSRF_DETAIL)
