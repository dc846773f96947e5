"""/account/: a person's own settings (email notices on or off)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from beliefs.models import PersonSettings
from beliefs.services.people import person_email_notifications_set
from console.http import AuthedHttpRequest
from console.views.passkeys import account_passkeys_context


@require_http_methods(["GET", "POST"])
def account_page(request: AuthedHttpRequest) -> HttpResponse:
    if request.method == "POST":
        enabled = request.POST.get("email_notifications") == "on"
        person_email_notifications_set(user=request.user, enabled=enabled)
        messages.success(request, "Email notices are on." if enabled else "Email notices are off.")
        return redirect("account")
    prefs = PersonSettings.objects.filter(user=request.user).first()
    return render(
        request,
        "console/account.html",
        {
            "email_notifications": prefs is None or prefs.email_notifications,
            **account_passkeys_context(request),
        },
    )
