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
    if request.path.startswith("/api/") or request.path in ("/healthz", "/readyz"):
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


# A form refused because of the page's address, not its age: reloading does not help, the
# settings do. Said to whoever meets it (an operator trying their new deployment, most often).
CSRF_ORIGIN_DETAIL = (
    "This form was refused because the page's address ({origin}) is not one the console "
    "trusts, so nothing was changed. Reloading will not help. If you run the console: behind "
    "a proxy that terminates HTTPS, have the proxy send X-Forwarded-Proto: https (the "
    "console then knows the page was secure); if the console is reached under another "
    "address, add that origin (e.g. https://console.example.org) to "
    "DJANGO_CSRF_TRUSTED_ORIGINS."
)
CSRF_INSECURE_DETAIL = (
    "This form was refused because the page came over plain HTTP while the console believes "
    "it is served over HTTPS, so nothing was changed. If you run the console: open it by its "
    "https address, and have the proxy in front send X-Forwarded-Proto: https only for HTTPS "
    "requests."
)


def csrf_detail(reason: str) -> str:
    """What a CSRF refusal says, by Django's reason for it: an origin or referer that is not
    trusted names the two settings that cause it; anything else is a stale page."""
    for failed in ("Origin checking failed - ", "Referer checking failed - "):
        suffix = " does not match any trusted origins."
        if reason.startswith(failed) and reason.endswith(suffix):
            return CSRF_ORIGIN_DETAIL.format(origin=reason[len(failed) : -len(suffix)])
    if reason.startswith("Referer checking failed - Referer is insecure"):
        return CSRF_INSECURE_DETAIL
    return CSRF_DETAIL


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    return _answer(request, 403, csrf_detail(reason))
