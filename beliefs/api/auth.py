"""Runtime clients authenticate with `Authorization: Api-Key <key>`.

A runtime is not a person: `request.user` is a `Runtime` that is authenticated but holds no
permission and can never stand in for a principal; `request.auth` is the RuntimeAPIKey, whose
`runtime` owns what the key does.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions, permissions
from rest_framework.request import Request

from beliefs.domain.vocabulary import runtime_label
from beliefs.models import Runtime as RuntimeModel
from beliefs.models import RuntimeAPIKey
from beliefs.selectors.runtimes import usable_runtime_key

KEYWORD = "Api-Key"


class Runtime:
    """The `request.user` of a runtime key."""

    is_authenticated = True
    is_anonymous = False
    is_active = True
    is_staff = False
    is_superuser = False
    is_runtime = True
    pk = None
    id = None

    def __init__(self, key: RuntimeAPIKey) -> None:
        self.key = key
        self.runtime = key.runtime

    def get_username(self) -> str:
        return runtime_label(self.runtime.name)

    def has_perm(self, perm: str, obj: Any = None) -> bool:
        return False

    def __str__(self) -> str:
        return self.get_username()


class RuntimeKeyAuthentication(authentication.BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[Runtime, RuntimeAPIKey] | None:
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        keyword, _, key = header.partition(" ")
        if keyword != KEYWORD:
            return None
        key = key.strip()
        if not key:
            raise exceptions.AuthenticationFailed("Api-Key header without a key.")
        # As `RuntimeAPIKey.objects.get_from_key`, in one query with the key's runtime.
        prefix, _, _ = key.partition(".")
        api_key = usable_runtime_key(prefix)
        if api_key is None or not api_key.is_valid(key):
            raise exceptions.AuthenticationFailed("Unknown or revoked runtime key.")
        if api_key.has_expired or api_key.revoked:
            raise exceptions.AuthenticationFailed("Unknown or revoked runtime key.")
        assert isinstance(api_key, RuntimeAPIKey)
        return Runtime(api_key), api_key

    def authenticate_header(self, request: Request) -> str:
        return KEYWORD


def is_runtime(request: Request) -> bool:
    return isinstance(request.auth, RuntimeAPIKey)


class IsRuntime(permissions.BasePermission):
    message = "Only a runtime key may do this."

    def has_permission(self, request: Request, view: Any) -> bool:
        return is_runtime(request)


class IsPerson(permissions.BasePermission):
    message = "Only a signed-in person may do this; a runtime key never can."

    def has_permission(self, request: Request, view: Any) -> bool:
        return bool(request.user and request.user.is_authenticated and not is_runtime(request))


class RuntimeKeyScheme(OpenApiAuthenticationExtension):
    target_class = "beliefs.api.auth.RuntimeKeyAuthentication"
    name = "RuntimeKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "`Api-Key <key>`; create one with `python manage.py runtime_key NAME`.",
        }


def runtime_of(request: Request) -> RuntimeModel:
    """The runtime whose key authenticated the request (behind `IsRuntime`)."""
    assert isinstance(request.auth, RuntimeAPIKey)
    return request.auth.runtime
