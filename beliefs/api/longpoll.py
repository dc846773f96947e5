"""`GET /api/v1/instances/{id}/` with `Prefer: wait=N`: answer when the instance changes.

A runtime waiting for a person sends the ETag it has in `If-None-Match` and `Prefer: wait=25`
(RFC 7240). The answer comes as soon as the instance's ETag differs (200 and the new body) or,
after N seconds with no change, 304; either way with `Preference-Applied: wait=N`, so a client
knows the server waited and need not back off. N is capped at `MAX_WAIT`; a `Prefer` without a
valid wait is ignored, and the request is the plain read.

The view itself is the plain read: a 304 it answers to a request that asked to wait is marked
`changes.unchanged` for N seconds, and the server's handler (`console.asgi`) asks it again at
each change notification for the instance (`beliefs.services.changes`), between requests,
holding no thread and no database connection while it waits. Under a server that does not wait
(a WSGI server, Django's test client) `Prefer` is ignored, so a client backs off by itself.
"""

from __future__ import annotations

import re
from uuid import UUID

from django.http import HttpRequest, HttpResponse

from beliefs.api.views import InstanceDetailApi
from beliefs.services import changes

MAX_WAIT = 60
_WAIT = re.compile(r'^\s*wait\s*=\s*"?(\d{1,9})"?\s*$', re.IGNORECASE)

_read_view = InstanceDetailApi.as_view()


def preferred_wait(header: str | None) -> int | None:
    """The seconds `Prefer: wait=N` asks for, capped at MAX_WAIT; None when it asks none validly.

    Preferences are comma-separated, each with optional `;` parameters (RFC 7240 §2)."""
    for preference in (header or "").split(","):
        found = _WAIT.match(preference.split(";", 1)[0])
        if found:
            return min(int(found.group(1)), MAX_WAIT)
    return None


@changes.waits(on="instance_id", prefer=True)
def instance_detail(request: HttpRequest, instance_id: UUID) -> HttpResponse:
    response = _read_view(request, instance_id=instance_id)
    wait = preferred_wait(request.headers.get("Prefer"))
    if wait is None or response.status_code not in (200, 304) or not changes.server_waits(request):
        return response
    response["Preference-Applied"] = f"wait={wait}"
    if response.status_code == 304:
        changes.mark_unchanged(response, wait)
    return response


# What the router, the CSRF and sign-in middlewares and the OpenAPI generator read off a view.
for _attribute in ("cls", "initkwargs", "view_class", "view_initkwargs", "csrf_exempt"):
    setattr(instance_detail, _attribute, getattr(_read_view, _attribute))
