"""/runtimes/: for staff, each runtime's keys, webhook endpoints and recent deliveries, and a
button that sends an endpoint a test event."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from beliefs.errors import InvalidInput, NotFound
from beliefs.models import WebhookEndpoint
from beliefs.selectors.runtimes import runtimes_overview
from beliefs.services.audit import Actor
from beliefs.services.webhooks.events import send_test_event


@staff_member_required
def runtimes_page(request: HttpRequest) -> HttpResponse:
    return render(request, "console/runtimes.html", {"overviews": runtimes_overview()})


@staff_member_required
@require_POST
def endpoint_send_test(request: HttpRequest, endpoint_id: int) -> HttpResponse:
    endpoint = WebhookEndpoint.objects.select_related("runtime").filter(pk=endpoint_id).first()
    if endpoint is None:
        raise Http404("No such endpoint.")
    try:
        event = send_test_event(endpoint=endpoint, actor=Actor.person(request.user))
    except NotFound:
        raise Http404("No such endpoint.") from None
    except InvalidInput as exc:  # a stored row that is not valid (its problem is shown)
        messages.error(request, exc.detail)
        return redirect("runtimes")
    messages.success(
        request,
        f"Test event {event.webhook_id} queued for {endpoint.url}; a worker delivers it.",
    )
    return redirect("runtimes")
