"""The console's middlewares, each a `MiddlewareMixin` (hooks, no `__call__` of its own). A
request that waits for a change is repeated by the server's handler, between requests
(`console.asgi`), not here."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from io import BytesIO
from typing import Any

from django.conf import settings
from django.core.handlers.wsgi import LimitedStream
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils.cache import add_never_cache_headers
from django.utils.deprecation import MiddlewareMixin

from beliefs.domain import jsonguard
from beliefs.domain.jsonguard import Problem
from beliefs.jsonbody import PARSED_JSON
from beliefs.services.retry import as_unavailable
from console import errors
from console.templatetags.reveal import reveal


class ApiBodyLimitMiddleware(MiddlewareMixin):
    """Refuse API bodies over API_MAX_BODY_BYTES with a JSON 413 before anything reads them.

    Django's DATA_UPLOAD_MAX_MEMORY_SIZE guards form posts only; DRF's JSON parser reads the
    stream directly, so without this an API body could be any size.
    """

    def process_request(self, request: HttpRequest) -> HttpResponse | None:
        if request.path.startswith("/api/"):
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = 0
            if length > settings.API_MAX_BODY_BYTES:
                return JsonResponse(
                    {
                        "error": "too_large",
                        "detail": f"The request body is over {settings.API_MAX_BODY_BYTES} bytes.",
                        "fields": {},
                    },
                    status=413,
                )
        return None


class NoStorePagesMiddleware(MiddlewareMixin):
    """Pages are never kept by the browser: Back and Forward fetch the current state.

    A page shows a person's answers and what still waits for them; a copy from the browser's
    cache (or its back/forward cache) would show a Confirm button for something already
    answered. `Cache-Control: no-store` on every HTML answer; the page's script also reloads a
    page restored from the back/forward cache.
    """

    def process_response(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        if response.get("Content-Type", "").startswith("text/html"):
            add_never_cache_headers(response)
        return response


class InputGuardMiddleware(MiddlewareMixin):
    """One guard at the edge, before CSRF or a view reads the request.

    It refuses, with a 400 naming the field, what the database cannot store or what would only
    feed recursion further down: NUL characters and unpaired surrogates in a JSON body, a form
    post, a query string or the URL; numbers out of range; JSON nested deeper than
    MAX_JSON_DEPTH. The API answers with its JSON error, the pages with the error page. A JSON
    body that passes is left parsed on the request, so the API does not parse it again.

    A chunked body (no Content-Length) is read whole where the server marks its input as
    terminated (gunicorn does), and refused with 411 elsewhere: Django would read it as empty.
    """

    def process_request(self, request: HttpRequest) -> HttpResponse | None:
        return _read_chunked_body(request)

    def process_view(
        self,
        request: HttpRequest,
        view_func: Callable[..., Any],
        view_args: tuple[Any, ...],
        view_kwargs: dict[str, Any],
    ) -> HttpResponse | None:
        problem = jsonguard.find_text_problem(
            [(name, str(value)) for name, value in view_kwargs.items()] + [("path", request.path)]
        )
        if problem is None:
            problem = jsonguard.find_text_problem(
                (name, value) for name, values in request.GET.lists() for value in values
            )
            if problem is not None:
                # A query string holds a list's filters: the API names this as a bad filter.
                problem = dataclasses.replace(problem, code="invalid_filter")
        if problem is None and request.method not in ("GET", "HEAD", "OPTIONS"):
            problem = _body_problem(request, view_func)
        if problem is None:
            return None
        return _refuse(request, problem)


def _read_chunked_body(request: HttpRequest) -> HttpResponse | None:
    meta = request.META
    if "chunked" not in meta.get("HTTP_TRANSFER_ENCODING", "").lower():
        return None
    if meta.get("CONTENT_LENGTH"):
        return None
    limit = _body_limit(request)
    stream = meta.get("wsgi.input")
    if not meta.get("wsgi.input_terminated") or stream is None:
        return _error(
            request,
            411,
            "length_required",
            "This server needs a Content-Length for a request body; send it unchunked.",
        )
    raw = stream.read(limit + 1)
    if len(raw) > limit:
        return _error(request, 413, "too_large", f"The request body is over {limit} bytes.")
    # What Django's WSGIRequest would have set up had the length been given.
    meta["CONTENT_LENGTH"] = str(len(raw))
    request._stream = LimitedStream(BytesIO(raw), len(raw))  # type: ignore[assignment]
    return None


def _body_limit(request: HttpRequest) -> int:
    if request.path.startswith("/api/"):
        return settings.API_MAX_BODY_BYTES
    return settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 2_621_440


def _body_problem(request: HttpRequest, view_func: Callable[..., Any]) -> Problem | None:
    content_type = request.content_type or ""
    if content_type == "application/json" or content_type.endswith("+json"):
        return _json_problem(request, view_func)
    # The API reads JSON only and refuses forms (415) unread; the pages read forms.
    if not request.path.startswith("/api/") and content_type in (
        "application/x-www-form-urlencoded",
        "multipart/form-data",
    ):
        return jsonguard.find_text_problem(
            (name, value) for name, values in request.POST.lists() for value in values
        )
    return None


def _json_problem(request: HttpRequest, view_func: Callable[..., Any]) -> Problem | None:
    if request.path.startswith("/api/"):
        # The API's own limit (a proposal carries its whole graph) was checked from
        # Content-Length already; reading the stream keeps Django's smaller form limit out.
        raw = request.read()
        request._body = raw  # as HttpRequest.body caches it
    else:
        raw = request.body
    try:
        data = json.loads(raw, parse_constant=_refuse_constant)
    except RecursionError:
        field = jsonguard.field_too_deep(raw.decode("utf-8", "replace"))
        # Too deep for the parser itself: the body is refused unread, as malformed JSON.
        return Problem(field, "nested too deeply to read", "malformed_json")
    except ValueError:
        return None  # not JSON: the view answers that (400 malformed_json, or 415)
    view_class = getattr(view_func, "view_class", None) or getattr(view_func, "cls", None)
    documents = getattr(view_class, "json_documents", ())
    problem = jsonguard.find_problem(data, documents=documents)
    if problem is None:
        setattr(request, PARSED_JSON, data)
    return problem


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _refuse(request: HttpRequest, problem: Problem) -> HttpResponse:
    message = f"{problem.field}: {problem.message}."
    if request.path.startswith("/api/"):
        return JsonResponse(
            {
                "error": problem.code,
                "detail": message,
                "fields": {problem.field: [problem.message]},
            },
            status=400,
        )
    detail = (
        f"The field “{reveal(problem.field)}” {problem.message}. Nothing was saved; "
        "go back and remove it."
    )
    return render(request, "error.html", {"status": 400, "detail": detail}, status=400)


def _error(request: HttpRequest, status: int, code: str, detail: str) -> HttpResponse:
    if request.path.startswith("/api/"):
        return JsonResponse({"error": code, "detail": detail, "fields": {}}, status=status)
    return render(request, "error.html", {"status": status, "detail": detail}, status=status)


class DatabaseBusyMiddleware(MiddlewareMixin):
    """A page whose database was busy (a write lost every retry to competing changes) or out of
    reach (a restart, a cut connection) answers 503 with a message and Retry-After, not a 500:
    trying again will work. What fails before or after the view (the session) reaches the
    same answer through the 500 handler (`console.errors.server_error`)."""

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        error = as_unavailable(exception)
        return None if error is None else errors.unavailable(request, error)


class OwnNotFoundMiddleware(MiddlewareMixin):
    """With DEBUG on, Django answers a page that is not there with its technical 404, which
    lists every URL pattern of the site: a page person would read as broken (and a map of the
    site). The console's own 404 page answers instead, as with DEBUG off (under /api/ its JSON
    error). Only the technical page is replaced: a 404 the console answers itself
    (`console.errors`) or in JSON (the API's views) is kept."""

    def process_response(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        if (
            settings.DEBUG
            and response.status_code == 404
            and not getattr(response, errors.OWN_PAGE, False)
            and response.get("Content-Type", "").startswith("text/html")
        ):
            return errors.page_not_found(request)
        return response
