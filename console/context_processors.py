from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest

from beliefs.roles import is_classifier, is_reviewer, role_names


def roles(request: HttpRequest) -> dict[str, Any]:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"roles": [], "is_classifier": False, "is_reviewer": False}
    return {
        "roles": role_names(user),
        "is_classifier": is_classifier(user),
        "is_reviewer": is_reviewer(user),
    }


def site(request: HttpRequest) -> dict[str, Any]:
    """`site_debug`: the page's script shows a server error's traceback in place (DEBUG only)."""
    return {"site_debug": settings.DEBUG}
