from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.cache import add_never_cache_headers


class ApiBodyLimitMiddleware:
    """Refuse API bodies over API_MAX_BODY_BYTES with a JSON 413 before anything reads them.

    Django's DATA_UPLOAD_MAX_MEMORY_SIZE guards form posts only; DRF's JSON parser reads the
    stream directly, so without this an API body could be any size.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
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
        return self.get_response(request)


class NoStorePagesMiddleware:
    """Pages are never kept by the browser: Back and Forward fetch the current state.

    A page shows a person's answers and what still waits for them; a copy from the browser's
    cache (or its back/forward cache) would show a Confirm button for something already
    answered. `Cache-Control: no-store` on every HTML answer; the page's script also reloads a
    page restored from the back/forward cache.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.get("Content-Type", "").startswith("text/html"):
            add_never_cache_headers(response)
        return response
