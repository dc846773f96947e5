"""M-of-N approval: an approver's page of one action, and what its forms post to.
Outsiders get 404 (existence not leaked); the services decide everything else."""

from __future__ import annotations

from uuid import UUID

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from beliefs import selectors
from beliefs.errors import Conflict, InvalidInput, NotFound, PermissionDenied
from beliefs.models import TaskInstance
from beliefs.services.approvals import (
    approver_mark_away,
    instance_approve,
    instance_reject_approval,
)
from beliefs.services.expiry import instance_expire_if_due
from console.http import AuthedHttpRequest
from console.presenters.approval import approval_context


def _instance_or_404(request: AuthedHttpRequest, instance_id: UUID) -> TaskInstance:
    instance = selectors.instance_for_approver(instance_id, request.user)
    if instance is None:
        raise Http404("No such instance.")
    instance_expire_if_due(instance=instance)
    return instance


@require_GET
def approval_detail(request: AuthedHttpRequest, instance_id: UUID) -> HttpResponse:
    instance = _instance_or_404(request, instance_id)
    return render(request, "console/approval.html", approval_context(instance, request.user))


DONE = {
    "approve": "Approved. Your approval counts for exactly these values.",
    "reject": "Rejected: the action is cancelled, with your reason.",
    "away": "Marked away: they are no longer asked. It is not an approval.",
}

REPLAYED = "You had already approved these values: it counts once."


@require_POST
def approval_act(request: AuthedHttpRequest, instance_id: UUID) -> HttpResponse:
    instance = _instance_or_404(request, instance_id)
    action = request.POST.get("action", "")
    digest = request.POST.get("bindings_digest", "")
    worlds = request.POST.get("worlds_digest", "")
    reason = request.POST.get("reason", "")
    status = 200
    try:
        if action == "approve":
            result = instance_approve(
                instance_id=instance.pk,
                user=request.user,
                bindings_digest=digest,
                worlds_digest=worlds,
                acknowledged=request.POST.getlist("acknowledged"),
            )
            if result.replayed:
                messages.info(request, REPLAYED)
            else:
                messages.success(request, DONE["approve"])
        elif action == "reject":
            instance_reject_approval(
                instance_id=instance.pk,
                user=request.user,
                bindings_digest=digest,
                worlds_digest=worlds,
                reason=reason,
            )
            messages.success(request, DONE["reject"])
        elif action == "away":
            approver_mark_away(
                instance_id=instance.pk,
                user=request.user,
                approver=request.POST.get("approver", ""),
                bindings_digest=digest,
                worlds_digest=worlds,
                reason=reason,
            )
            messages.success(request, DONE["away"])
        else:
            raise InvalidInput("Choose Approve or Reject.")
    except InvalidInput as exc:
        status, message = 400, _first(exc)
    except (Conflict, PermissionDenied) as exc:
        status, message = (409 if isinstance(exc, Conflict) else 403), exc.detail
    except NotFound:
        raise Http404("No such instance.") from None
    if status == 200:
        return redirect(reverse("approval", args=[instance.pk]))
    instance.refresh_from_db()
    context = approval_context(instance, request.user)
    context["error"] = message
    return render(request, "console/approval.html", context, status=status)


def _first(exc: InvalidInput) -> str:
    for problems in exc.fields.values():
        if problems:
            return f"{problems[0][0].upper()}{problems[0][1:]}."
    return exc.detail
