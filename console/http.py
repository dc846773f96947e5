"""The request type the views receive (Django's, with django-htmx's details attached) and the
decorator that keeps a view to the people holding a role."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar, cast

from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django_htmx.middleware import HtmxDetails


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


class AuthedHttpRequest(HtmxHttpRequest):
    """A request behind `login_required`: its user is a signed-in person."""

    user: User


View = TypeVar("View", bound=Callable[..., HttpResponseBase])


def role_required(
    has_role: Callable[[User | AnonymousUser], bool], message: str
) -> Callable[[View], View]:
    """A view decorator: signed-in people without the role get 403 with `message`. Anonymous
    visitors never get here: LoginRequiredMiddleware sends them to sign in first."""

    def decorator(view: View) -> View:
        @wraps(view)
        def wrapped(request: AuthedHttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
            if not has_role(request.user):
                raise PermissionDenied(message)
            return view(request, *args, **kwargs)

        return cast(View, wrapped)

    return decorator
