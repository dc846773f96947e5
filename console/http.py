"""The request type the views receive: Django's, with django-htmx's details attached."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


class AuthedHttpRequest(HtmxHttpRequest):
    """A request behind `login_required`: its user is a signed-in person."""

    user: User
