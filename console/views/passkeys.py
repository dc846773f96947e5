"""Passkeys on the pages: registering and removing them on the account page,
signing in with one, and the review-and-sign page of an instance that awaits a signature.

The browser side is static/console/passkeys.js: it asks for options (JSON), hands them to
`navigator.credentials`, and posts the credential back as JSON. The relying party is
`CONSOLE_WEBAUTHN_RP_ID` or, unset, the host the page was served on (ALLOWED_HOSTS has checked
it); the accepted origins are `CONSOLE_WEBAUTHN_ORIGINS` or the request's own. WebAuthn needs a
secure context and a domain: https, or http://localhost (not an IP address).
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Callable
from functools import wraps
from typing import Any
from uuid import UUID

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_not_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from beliefs import selectors
from beliefs.domain.passkeys import b64url, b64url_decode
from beliefs.errors import Conflict, InvalidInput, PermissionDenied, ServiceError
from beliefs.models import InstanceStatus, TaskInstance
from beliefs.selectors.passkeys import (
    active_passkeys,
    decisions_requiring_signature,
    standing_signature,
)
from beliefs.services import passkeys
from beliefs.services.access import instance_for_principal
from beliefs.services.reask import prompt_reask_with_world
from console.http import AuthedHttpRequest
from console.presenters.restatement import restatement
from console.presenters.signing import binding_rows

REGISTRATION_CHALLENGE = "passkey_registration_challenge"
SIGN_IN_CHALLENGE = "passkey_sign_in_challenge"
MAX_BODY = 64 * 1024


def _host_name_instead(request: HttpRequest, address: str, host: str) -> str:
    """What to open instead of a page on an IP address (`host`, as the request named it):
    localhost for a loopback one, with the same scheme and port; else the console's host
    name."""
    if not ipaddress.ip_address(address).is_loopback:
        return "the console's host name (its address with a name, not numbers)"
    after = host.rsplit("]", 1)[-1]
    port = after.rsplit(":", 1)[1] if ":" in after else ""
    return f"{request.scheme}://localhost{f':{port}' if port else ''}/"


def relying_party(request: HttpRequest) -> passkeys.RelyingParty:
    """The relying party of this request's ceremony. A page served on an IP address cannot use
    passkeys at all (browsers refuse with "This is an invalid domain"): refused here, in
    words that say which address to open instead."""
    host = request.get_host()  # validated against ALLOWED_HOSTS
    name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    try:
        ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        pass
    else:
        instead = _host_name_instead(request, name.strip("[]"), host)
        raise InvalidInput(
            f"Passkeys do not work on an IP address ({name}): browsers allow them only on a "
            f"host name. Open {instead} instead, sign in there, and try again.",
            code="passkey_needs_host_name",
        )
    rp_id = settings.CONSOLE_WEBAUTHN_RP_ID or name.strip("[]")
    origins = tuple(settings.CONSOLE_WEBAUTHN_ORIGINS) or (f"{request.scheme}://{host}",)
    return passkeys.RelyingParty(rp_id, settings.CONSOLE_WEBAUTHN_RP_NAME, origins)


def _body(request: HttpRequest) -> dict[str, Any]:
    if len(request.body) > MAX_BODY:
        return {}
    try:
        data = json.loads(request.body or b"{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _refused(exc: ServiceError) -> JsonResponse:
    return JsonResponse(
        {"error": exc.code, "detail": exc.detail, "fields": exc.fields}, status=exc.status
    )


def _options(text: str, **extra: Any) -> JsonResponse:
    return JsonResponse({"options": json.loads(text), **extra})


def _refusing(view: Callable[..., JsonResponse]) -> Callable[..., JsonResponse]:
    """A JSON view whose service's refusal is answered as the API's error body."""

    @wraps(view)
    def answer(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
        try:
            return view(request, *args, **kwargs)
        except ServiceError as exc:
            return _refused(exc)

    return answer


def _ceremony(
    key: str, name: str
) -> Callable[[Callable[..., JsonResponse]], Callable[..., JsonResponse]]:
    """A view that ends the ceremony its options began: it is given the request's JSON body and
    the challenge the options put in the session under `key`, taken out (each is answered
    once). With no ceremony under way it is a 400 and the view is not called."""

    def decorate(view: Callable[..., JsonResponse]) -> Callable[..., JsonResponse]:
        @wraps(view)
        def answer(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
            data = _body(request)
            challenge = request.session.pop(key, None)
            if not challenge:
                detail = f"Start again: no {name} was under way."
                return JsonResponse({"error": "no_challenge", "detail": detail}, status=400)
            return view(request, data, b64url_decode(challenge), *args, **kwargs)

        return _refusing(answer)

    return decorate


# --- the account page's passkeys ----------------------------------------------------------------


def account_passkeys_context(request: AuthedHttpRequest) -> dict[str, Any]:
    """What the account page's passkey section shows (console.views.account includes it)."""
    return {"passkeys": active_passkeys(request.user)}


@require_POST
@_refusing
def passkey_registration_options(request: AuthedHttpRequest) -> JsonResponse:
    text, challenge = passkeys.passkey_registration_options(
        user=request.user, rp=relying_party(request)
    )
    request.session[REGISTRATION_CHALLENGE] = b64url(challenge)
    return _options(text)


@require_POST
@_ceremony(REGISTRATION_CHALLENGE, "registration")
def passkey_add(request: AuthedHttpRequest, data: dict[str, Any], challenge: bytes) -> JsonResponse:
    passkey = passkeys.passkey_register(
        user=request.user,
        name=data.get("name"),
        credential=data.get("credential"),
        challenge=challenge,
        rp=relying_party(request),
    )
    messages.success(request, f"Passkey “{passkey.name}” added.")
    return JsonResponse({"id": passkey.pk, "redirect": reverse("account")}, status=201)


@require_POST
def passkey_remove(request: AuthedHttpRequest, passkey_id: int) -> HttpResponse:
    try:
        removed = passkeys.passkey_remove(user=request.user, passkey_id=passkey_id)
    except ServiceError:
        raise Http404("No such passkey.") from None
    messages.success(request, f"Passkey “{removed.name}” removed.")
    return redirect(reverse("account") + "#passkeys-heading")


# --- signing in ---------------------------------------------------------------------------------


def _refuse_when_passwords_are_off() -> None:
    """With password sign-in off the provider is the only way in (so that removing someone
    there keeps them out); passkeys then sign approvals but sign no one in."""
    if not settings.CONSOLE_PASSWORD_SIGN_IN:
        raise PermissionDenied(
            "Signing in with a passkey is turned off here: sign in through single sign-on.",
            code="passkey_sign_in_off",
        )


@login_not_required
@require_POST
@_refusing
def passkey_sign_in_options(request: HttpRequest) -> JsonResponse:
    _refuse_when_passwords_are_off()
    text, challenge = passkeys.passkey_sign_in_options(rp=relying_party(request))
    request.session[SIGN_IN_CHALLENGE] = b64url(challenge)
    return _options(text)


@login_not_required
@require_POST
@_ceremony(SIGN_IN_CHALLENGE, "sign-in")
def passkey_sign_in(request: HttpRequest, data: dict[str, Any], challenge: bytes) -> JsonResponse:
    _refuse_when_passwords_are_off()
    user = passkeys.passkey_sign_in(
        credential=data.get("credential"), challenge=challenge, rp=relying_party(request)
    )
    login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    target = str(data.get("next") or "")
    allowed = url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    return JsonResponse({"redirect": target if target and allowed else reverse("home")})


# --- the review-and-sign page -------------------------------------------------------------------


def _instance_or_404(request: AuthedHttpRequest, instance_id: UUID) -> TaskInstance:
    try:
        return instance_for_principal(instance_id, request.user)
    except ServiceError:
        raise Http404("No such instance.") from None


@require_GET
def instance_review(request: AuthedHttpRequest, instance_id: UUID) -> HttpResponse:
    instance = _instance_or_404(request, instance_id)
    if instance.status != InstanceStatus.AWAITING_SIGNATURE and not instance.signature_due_at:
        return redirect("instance", instance.pk)
    decisions = selectors.instance_decisions(instance)
    prompts = selectors.instance_prompts(instance)
    context = {
        "instance": instance,
        "awaiting": instance.status == InstanceStatus.AWAITING_SIGNATURE,
        "sentences": restatement(instance, decisions),
        "rows": binding_rows(instance, prompts),
        "worlds": selectors.bound_world_changes(instance),
        # The decisions by their labels, as the person reads them (never their keys).
        "requiring": [
            d.label for d in decisions if d.key in set(decisions_requiring_signature(instance))
        ],
        "has_passkey": bool(active_passkeys(request.user)),
        "signature": standing_signature(instance.pk),
    }
    return render(request, "console/sign.html", context)


@require_POST
def instance_reask(request: AuthedHttpRequest, instance_id: UUID) -> HttpResponse:
    """ "Use the current value": the question asked again with the world's value filled in."""
    instance = _instance_or_404(request, instance_id)
    try:
        prompt_reask_with_world(
            instance_id=instance.pk, slot_key=request.POST.get("slot", ""), user=request.user
        )
    except (Conflict, InvalidInput) as exc:
        messages.error(request, exc.detail)
        return redirect("instance-sign", instance.pk)
    messages.success(
        request, "Asked again with the current value filled in: check it and confirm it."
    )
    return redirect("instance", instance.pk)


@require_POST
@_refusing
def instance_sign_options(request: AuthedHttpRequest, instance_id: UUID) -> JsonResponse:
    attempt, text = passkeys.signature_attempt_start(
        instance_id=instance_id, user=request.user, rp=relying_party(request)
    )
    return _options(text, attempt=str(attempt.pk))


@require_POST
@_refusing
def instance_sign(request: AuthedHttpRequest, instance_id: UUID) -> JsonResponse:
    data = _body(request)
    instance = passkeys.instance_sign(
        instance_id=instance_id,
        user=request.user,
        attempt_id=data.get("attempt"),
        credential=data.get("credential"),
    )
    if instance.status == InstanceStatus.READY:
        messages.success(request, "Signed with your passkey: the action may go ahead.")
    return JsonResponse(
        {"status": instance.status, "redirect": reverse("instance", args=[instance.pk])}
    )
