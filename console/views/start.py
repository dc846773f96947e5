"""Signing in, and where a person lands afterwards: on their work, not on an empty inbox."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.views import LoginView
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_GET

from beliefs import selectors
from beliefs.roles import is_classifier, is_reviewer
from console import sso
from console.http import AuthedHttpRequest

PASSWORDS_OFF = "Signing in with a password is turned off here: sign in with {provider}."


class SignInView(LoginView):
    """The sign-in page. Coming from the inbox's own address ("/", where a signed-out visit
    starts) counts as no wish of one's own: the person lands where their work is."""

    redirect_authenticated_user = True

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not settings.CONSOLE_PASSWORD_SIGN_IN:
            # Refused before the form reads anything (PasswordSignInGate refuses it again).
            context = self.get_context_data(
                refused=PASSWORDS_OFF.format(provider=sso.provider_name())
            )
            return self.render_to_response(context, status=403)
        return super().post(request, *args, **kwargs)

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context["sso_provider"] = sso.provider_name() if sso.enabled() else ""
        context["password_sign_in"] = settings.CONSOLE_PASSWORD_SIGN_IN
        return context

    def get_redirect_url(self, request: HttpRequest | None = None) -> str:
        # Django 5.2 takes no request here; newer releases (and their stubs) may pass one.
        url = super().get_redirect_url()
        return "" if url == reverse("inbox") else url


@require_GET
def home(request: AuthedHttpRequest) -> HttpResponse:
    """The inbox when something waits there; else a classifier's queue or a reviewer's list."""
    user = request.user
    if not selectors.inbox_instances(user).exists():
        if is_classifier(user):
            return redirect("classify-index")
        if is_reviewer(user):
            return redirect("proposals")
    return redirect("inbox")
