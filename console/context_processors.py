from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from beliefs.roles import is_classifier, is_reviewer, role_names


def roles(request: HttpRequest) -> dict[str, Any]:
    """The person's roles, for the page's navigation. Read when a template first uses them (a
    permission lookup, two queries): a fragment without the navigation reads none."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"roles": [], "is_classifier": False, "is_reviewer": False}
    return {
        "roles": SimpleLazyObject(lambda: role_names(user)),
        "is_classifier": SimpleLazyObject(lambda: is_classifier(user)),
        "is_reviewer": SimpleLazyObject(lambda: is_reviewer(user)),
    }


def site(request: HttpRequest) -> dict[str, Any]:
    """`site_debug`: the page's script shows a server error's traceback in place (DEBUG only)."""
    return {"site_debug": settings.DEBUG}
