"""The live pages' endpoints: what changed on an instance page or an inbox, when it changes.

Each takes `?since=<version>&seen=<digest>` (the `data-live-version` and `data-live-digest` the
page carries) and answers the fragment the page swaps in, with its version in `Live-Version`
(above `since`), as soon as its digest differs from `seen`; or 204 after the wait with no
change (see `console.live`). Without `since` the inbox rows answer at once, as they always did.
Outsiders get 404, like the page itself.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from beliefs.selectors import PageRead
from beliefs.services import changes
from console import live
from console.http import AuthedHttpRequest
from console.views.enduser import _inbox_context, _instance_context, settled_page


def _rendered(request: AuthedHttpRequest, template: str, context: dict[str, Any]) -> HttpResponse:
    response = render(request, template, context)
    response["Live-Version"] = str(context["live_version"].number)
    return response


@require_GET
@changes.waits(on="instance_id")
def instance_live(request: AuthedHttpRequest, instance_id: UUID) -> HttpResponse:
    """`#instance-view` afresh once this person's view of the instance differs from `seen`
    (sent Cache-Control: no-store, as every page answer is, by the middleware)."""
    since, seen = live.requested_since(request), request.GET.get("seen", "")

    def read() -> tuple[HttpResponse | None, float | None]:
        # A cheap look first; a change is then read again, with the fragment, in one snapshot.
        found = live.instance_version(instance_id, request.user.pk)
        if found is None:
            raise Http404("No such instance.")
        if found.digest == seen:
            return None, found.recheck

        def show(page: PageRead) -> HttpResponse:
            version = live.page_version(page).after(since)
            context = _instance_context(request, page, live_version=version)
            return _rendered(request, "console/_instance_view.html", context)

        return settled_page(request, instance_id, show), None

    return live.unchanged_or(read, request)


@require_GET
@changes.waits(on=None)
def inbox_rows(request: AuthedHttpRequest) -> HttpResponse:
    """The inbox list alone: at once, or with `since` once it differs (any instance's change
    may add, drop or change a row)."""
    since, seen = live.requested_since(request), request.GET.get("seen")

    def read() -> tuple[HttpResponse | None, float | None]:
        with live.snapshot():
            context = _inbox_context(request)
            version = context["live_version"]
            if seen is not None and version.digest == seen:
                return None, version.recheck
            context["live_version"] = version.after(since)
            return _rendered(request, "console/_inbox_rows.html", context), None

    if seen is None:
        return read()[0] or HttpResponse(status=204)
    return live.unchanged_or(read, request)
