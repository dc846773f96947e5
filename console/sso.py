"""Single sign-on through OpenID Connect, with mozilla-django-oidc: the authorization code flow
with PKCE (S256) and a nonce, against the provider `OIDC_ISSUER` names.

The provider's endpoints come from its discovery document, fetched at the first sign-in (never
at start-up: an unreachable provider must not keep the site from starting) and kept for
`DISCOVERY_TTL` seconds; a failed fetch is not kept, and the sign-in says so on the sign-in
page. People are found by (issuer, `sub`) alone (`SignInIdentity`), never by e-mail; their
membership of the groups `OIDC_GROUP_ROLES` maps is set from the groups claim at every sign-in.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import time
import unicodedata
from dataclasses import dataclass
from typing import Any

import jwt
import requests
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, SuspiciousOperation
from django.db import IntegrityError, transaction
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils import timezone
from django.views.generic import View
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.utils import import_from_settings
from mozilla_django_oidc.views import (
    OIDCAuthenticationCallbackView,
    OIDCAuthenticationRequestView,
)

from beliefs.models import SignInIdentity
from beliefs.roles import set_mapped_groups

log = logging.getLogger(__name__)

# How long a fetched discovery document is used before it is fetched again.
DISCOVERY_TTL = 3600.0

# The library's settings this console does not let anyone change: PKCE with S256 and a nonce
# on every sign-in, the client's secret sent as HTTP Basic (the specification's default).
FIXED: dict[str, Any] = {
    "OIDC_USE_PKCE": True,
    "OIDC_PKCE_CODE_CHALLENGE_METHOD": "S256",
    "OIDC_USE_NONCE": True,
    "OIDC_TOKEN_USE_BASIC_AUTH": True,
    "OIDC_AUTHENTICATION_CALLBACK_URL": "oidc-callback",
    "OIDC_CREATE_USER": True,
    "OIDC_STORE_ACCESS_TOKEN": False,
    "OIDC_STORE_ID_TOKEN": False,
}
# The library's names for the console's own settings.
RENAMED = {
    "OIDC_RP_CLIENT_ID": "OIDC_CLIENT_ID",
    "OIDC_RP_CLIENT_SECRET": "OIDC_CLIENT_SECRET",
    "OIDC_RP_SCOPES": "OIDC_SCOPES",
    "OIDC_RP_SIGN_ALGO": "OIDC_SIGN_ALGO",
    "OIDC_TIMEOUT": "OIDC_TIMEOUT_SECONDS",
}


def library_setting(name: str, *default: Any) -> Any:  # noqa: ANN401 - any setting's value
    """A setting as mozilla-django-oidc asks for it, read from the console's own settings (at
    call time, so tests can change them)."""
    if name in FIXED:
        return FIXED[name]
    return import_from_settings(RENAMED.get(name, name), *default)


def enabled() -> bool:
    return bool(settings.OIDC_ISSUER)


def provider_name() -> str:
    return str(settings.OIDC_PROVIDER_NAME)


# --- discovery -----------------------------------------------------------------------------------


class ProviderUnavailable(Exception):
    """The provider's discovery document could not be fetched, or is not one."""


@dataclass(frozen=True)
class Endpoints:
    issuer: str
    authorization: str
    token: str
    userinfo: str
    jwks: str


_discovered: dict[str, tuple[float, Endpoints]] = {}
_discovery_lock = threading.Lock()


def forget_discovery() -> None:
    """Fetch the discovery document afresh at the next sign-in."""
    with _discovery_lock:
        _discovered.clear()


def endpoints() -> Endpoints:
    issuer = str(settings.OIDC_ISSUER)
    with _discovery_lock:
        kept = _discovered.get(issuer)
        if kept and time.monotonic() - kept[0] < DISCOVERY_TTL:
            return kept[1]
    url = issuer.rstrip("/") + "/.well-known/openid-configuration"
    try:
        response = requests.get(url, timeout=settings.OIDC_TIMEOUT_SECONDS)
        response.raise_for_status()
        document = response.json()
    except (requests.RequestException, ValueError) as exc:
        raise ProviderUnavailable(f"{url}: {exc}") from exc
    if not isinstance(document, dict):
        raise ProviderUnavailable(f"{url}: not a discovery document")
    # The document must name the issuer we asked (OpenID Connect Discovery 1.0, 4.3): else a
    # document served elsewhere could point the sign-in at another provider's endpoints.
    if str(document.get("issuer", "")).rstrip("/") != issuer.rstrip("/"):
        raise ProviderUnavailable(f"{url} names another issuer: {document.get('issuer')!r}")
    fields = {
        "authorization": "authorization_endpoint",
        "token": "token_endpoint",
        "userinfo": "userinfo_endpoint",
        "jwks": "jwks_uri",
    }
    if not all(isinstance(document.get(key), str) for key in fields.values()):
        raise ProviderUnavailable(f"{url} lacks an endpoint: needs {', '.join(fields.values())}")
    found = Endpoints(issuer=document["issuer"], **{k: document[v] for k, v in fields.items()})
    with _discovery_lock:
        _discovered[issuer] = (time.monotonic(), found)
    return found


# --- who signed in -------------------------------------------------------------------------------

_NOT_IN_USERNAME = re.compile(r"[^A-Za-z0-9_.@+-]")


def username_for(claims: dict[str, Any]) -> str:
    """A new person's username: the provider's preferred_username in ASCII (accents dropped,
    other letters left out, so no lookalike of another script can pass for an existing name),
    else one made from the subject; made unique (ignoring case) with a number, so a provider's
    "alice" never becomes the console's existing alice."""
    wanted = claims.get("preferred_username")
    base = ""
    if isinstance(wanted, str):
        ascii_only = unicodedata.normalize("NFKD", wanted).encode("ascii", "ignore").decode()
        base = _NOT_IN_USERNAME.sub("", ascii_only)[:140]
    if not base:
        base = "sso-" + hashlib.sha256(str(claims["sub"]).encode()).hexdigest()[:12]
    candidate, number = base, 2
    while User.objects.filter(username__iexact=candidate).exists():
        candidate, number = f"{base}-{number}", number + 1
    return candidate


def groups_given(claims: dict[str, Any]) -> set[str]:
    """The console groups the claim's provider groups map to (`OIDC_GROUP_ROLES`). A claim
    that is missing gives none; one that is neither a name nor a list of names is refused."""
    value = claims.get(settings.OIDC_GROUPS_CLAIM, [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(name, str) for name in value):
        raise SuspiciousOperation(f"the {settings.OIDC_GROUPS_CLAIM!r} claim is not a list")
    roles: dict[str, list[str]] = settings.OIDC_GROUP_ROLES
    return {group for name in value for group in roles.get(name, [])}


def mapped_groups() -> set[str]:
    roles: dict[str, list[str]] = settings.OIDC_GROUP_ROLES
    return {group for groups in roles.values() for group in groups}


class SSOBackend(OIDCAuthenticationBackend):
    """The provider's answer, checked (signature, issuer, audience, nonce; the library checks
    the signature, the expiry and the nonce), turned into a person: found by issuer and `sub`,
    or created; their e-mail and mapped groups updated from the claims."""

    get_settings = staticmethod(library_setting)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Not the library's __init__: it reads the endpoints from settings, which here come
        # from discovery, at sign-in. This backend is also built to load every signed-in
        # person's session (get_user), which must not fetch anything.
        ModelBackend.__init__(self)
        self.UserModel = get_user_model()

    def authenticate(self, request: HttpRequest | None, **kwargs: Any) -> User | None:
        # Only the callback's call names a nonce and a code verifier. A password sign-in asks
        # every backend too: its query string must never be taken for a provider's answer.
        if request is None or not enabled() or "nonce" not in kwargs:
            return None
        if "code_verifier" not in kwargs:
            return None
        found = endpoints()
        self.issuer = found.issuer
        self.OIDC_OP_TOKEN_ENDPOINT = found.token
        self.OIDC_OP_USER_ENDPOINT = found.userinfo
        self.OIDC_OP_JWKS_ENDPOINT = found.jwks
        self.OIDC_RP_CLIENT_ID = settings.OIDC_CLIENT_ID
        self.OIDC_RP_CLIENT_SECRET = settings.OIDC_CLIENT_SECRET
        self.OIDC_RP_SIGN_ALGO = settings.OIDC_SIGN_ALGO
        self.OIDC_RP_IDP_SIGN_KEY = None
        user: User | None = super().authenticate(request, **kwargs)
        return user

    def get_user(self, user_id: int) -> User | None:
        # Django's, not the library's: that one keeps a deactivated person's session alive.
        user: User | None = ModelBackend.get_user(self, user_id)
        return user

    def verify_token(self, token: str, **kwargs: Any) -> dict[str, Any]:
        try:
            payload: dict[str, Any] = super().verify_token(token, **kwargs)
        except jwt.PyJWTError as exc:  # the library turns only a bad signature into a refusal
            raise SuspiciousOperation(f"the ID token is not valid: {exc}") from exc
        # The library leaves the audience unchecked: a token the provider issued to another
        # client (with this person's nonce) must not sign anyone in here.
        audience = payload.get("aud")
        audiences = [audience] if isinstance(audience, str) else audience or []
        if settings.OIDC_CLIENT_ID not in audiences:
            raise SuspiciousOperation("the ID token was issued to another client")
        if len(audiences) > 1 and payload.get("azp") != settings.OIDC_CLIENT_ID:
            raise SuspiciousOperation("the ID token's authorized party is another client")
        if str(payload.get("iss", "")).rstrip("/") != self.issuer.rstrip("/"):
            raise SuspiciousOperation("the ID token names another issuer")
        return payload

    def get_userinfo(
        self, access_token: str, id_token: str, payload: dict[str, Any]
    ) -> dict[str, Any]:
        """The ID token's claims, with the userinfo endpoint's on top (groups are often only
        there); both must be about the same subject (OpenID Connect Core 5.3.2)."""
        userinfo = super().get_userinfo(access_token, id_token, payload)
        if not isinstance(userinfo, dict) or userinfo.get("sub") != payload.get("sub"):
            raise SuspiciousOperation("the userinfo answer is about another subject")
        return {**payload, **userinfo}

    def verify_claims(self, claims: dict[str, Any]) -> bool:
        subject = claims.get("sub")
        return isinstance(subject, str) and 0 < len(subject) <= 255

    def describe_user_by_claims(self, claims: dict[str, Any]) -> str:
        return f"subject {claims.get('sub')}"

    def filter_users_by_claims(self, claims: dict[str, Any]) -> Any:  # noqa: ANN401 - a QuerySet
        return self.UserModel.objects.filter(
            sign_in_identities__issuer=self.issuer, sign_in_identities__subject=claims["sub"]
        )

    def get_or_create_user(
        self, access_token: str, id_token: str, payload: dict[str, Any]
    ) -> User | None:
        claims = self.get_userinfo(access_token, id_token, payload)
        if not self.verify_claims(claims):
            raise SuspiciousOperation("the provider named no subject")
        given = groups_given(claims)  # refused before anything is written
        for attempt in range(2):
            try:
                with transaction.atomic():
                    user = self.filter_users_by_claims(claims).first()
                    if user is None:
                        user = self.create_user(claims)
                    return self.update_user(user, claims, given)
            except IntegrityError:
                # Another sign-in of the same new subject created the person first: find it.
                if attempt:
                    raise
        return None

    def create_user(self, claims: dict[str, Any]) -> User:
        user = self.UserModel.objects.create_user(username_for(claims))  # no usable password
        SignInIdentity.objects.create(user=user, issuer=self.issuer, subject=claims["sub"])
        log.info("single sign-on created %s for %s", user.username, self.describe(claims))
        return user

    def update_user(
        self, user: User, claims: dict[str, Any], given: set[str] | None = None
    ) -> User:
        email = claims.get("email")
        # An address the provider says it has not verified is not one to send mail to.
        verified = claims.get("email_verified") is not False
        if isinstance(email, str) and verified and email != user.email:
            user.email = email
            user.save(update_fields=["email"])
        set_mapped_groups(user, mapped_groups(), groups_given(claims) if given is None else given)
        SignInIdentity.objects.filter(issuer=self.issuer, subject=claims["sub"]).update(
            last_sign_in_at=timezone.now()
        )
        return user

    def describe(self, claims: dict[str, Any]) -> str:
        return f"{self.describe_user_by_claims(claims)} at {self.issuer}"


def exempt_from_lockout(request: HttpRequest, credentials: dict[str, Any] | None) -> bool:
    """AXES_WHITELIST_CALLABLE: the callback's authentication (it alone names a nonce and a
    code verifier) is never counted or locked out. It has no password to guess (state, nonce
    and PKCE guard it), and its failures carry no username: counted, they would lock out
    everyone signing in through the provider from the same address."""
    return bool(credentials) and {"nonce", "code_verifier"} <= set(credentials or {})


class PasswordSignInGate:
    """After axes and before ModelBackend in AUTHENTICATION_BACKENDS: with password sign-in
    turned off (CONSOLE_PASSWORD_SIGN_IN), every password is refused before ModelBackend
    checks it, wherever it was typed (the sign-in page, the admin's own login)."""

    def authenticate(
        self, request: HttpRequest | None, password: str | None = None, **kwargs: Any
    ) -> None:
        if password is not None and not settings.CONSOLE_PASSWORD_SIGN_IN:
            raise PermissionDenied("password sign-in is turned off")


# --- the two views -------------------------------------------------------------------------------

NOT_STARTED_HERE = (
    "That sign-in was not started from this browser, or it has expired. Nothing was signed in: "
    "please start again."
)
NOT_VERIFIED = (
    "The sign-in provider's answer could not be verified, so nobody was signed in. Please "
    "start again; if it happens again, tell your administrator."
)


def _unreachable() -> str:
    return (
        f"{provider_name()} cannot be reached just now, so signing in through it is not "
        "possible. Please try again in a moment."
    )


def _back_to_sign_in(request: HttpRequest, text: str) -> HttpResponse:
    messages.error(request, text)
    return HttpResponseRedirect(reverse("login"))


class SSOStartView(OIDCAuthenticationRequestView):
    """Sends the browser to the provider with a fresh state, nonce and PKCE challenge (kept in
    the session for the callback), and the page to come back to (`next`, if it is ours)."""

    get_settings = staticmethod(library_setting)

    def __init__(self, **kwargs: Any) -> None:
        View.__init__(self, **kwargs)  # the endpoint is discovered in get(), not read here

    def get(self, request: HttpRequest) -> HttpResponse:
        if not enabled():
            raise Http404("Single sign-on is not set up.")
        try:
            found = endpoints()
        except ProviderUnavailable as exc:
            log.warning("single sign-on: the provider's discovery failed: %s", exc)
            return _back_to_sign_in(request, _unreachable())
        self.OIDC_OP_AUTH_ENDPOINT = found.authorization
        self.OIDC_RP_CLIENT_ID = settings.OIDC_CLIENT_ID
        response: HttpResponse = super().get(request)
        return response


class SSOCallbackView(OIDCAuthenticationCallbackView):
    """Where the provider sends the browser back. Anything that does not check out (a state
    this browser's session never started, a token whose nonce or signature is wrong, a provider
    that refused or cannot be reached) ends on the sign-in page with a message, signed in as
    nobody new, never with an error page."""

    get_settings = staticmethod(library_setting)

    def get(self, request: HttpRequest) -> HttpResponse:
        if not enabled():
            raise Http404("Single sign-on is not set up.")
        if request.GET.get("error"):
            log.info("single sign-on: the provider answered %s", request.GET["error"][:100])
            started = request.session.get("oidc_states")
            if isinstance(started, dict) and started.pop(request.GET.get("state", ""), None):
                request.session.modified = True  # the state is answered once, even refused
            return _back_to_sign_in(
                request,
                f"{provider_name()} did not sign you in. Please try again, or ask your "
                "administrator whether you may use the console.",
            )
        state = request.GET.get("state")
        if not state or not request.GET.get("code"):
            return _back_to_sign_in(request, NOT_STARTED_HERE)
        started = request.session.get("oidc_states")
        if not isinstance(started, dict) or state not in started:
            log.warning("single sign-on: a callback with a state this session never started")
            return _back_to_sign_in(request, NOT_STARTED_HERE)
        try:
            response: HttpResponse = super().get(request)
        except SuspiciousOperation as exc:
            log.warning("single sign-on refused: %s", exc)
            return _back_to_sign_in(request, NOT_VERIFIED)
        except requests.HTTPError as exc:  # the token endpoint refused the code or verifier
            log.warning("single sign-on: the provider refused: %s", exc)
            return _back_to_sign_in(request, NOT_VERIFIED)
        except (ProviderUnavailable, requests.RequestException) as exc:
            log.warning("single sign-on: the provider failed: %s", exc)
            return _back_to_sign_in(request, _unreachable())
        return response

    def login_failure(self) -> HttpResponse:
        return _back_to_sign_in(
            self.request,
            f"{provider_name()} signed you in, but the console could not: your account here may "
            "be deactivated, or the provider's answer lacked something. Ask your administrator.",
        )
