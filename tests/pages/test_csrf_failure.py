"""A refused form says why: a page that is out of date is reloaded, but a page whose address
the console does not trust (a proxy that does not send X-Forwarded-Proto, an origin missing
from DJANGO_CSRF_TRUSTED_ORIGINS) names those settings, since reloading never helps."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db

OUT_OF_DATE = "This page was out of date"
ORIGIN = "is not one the console trusts"
INSECURE = "came over plain HTTP"

# (what the browser sends besides the form, the words expected)
CASES: dict[str, tuple[dict[str, Any], str]] = {
    # Behind a proxy that terminates HTTPS without saying so: the browser's https origin
    # against what the console believes is an http page.
    "https page, proxy without X-Forwarded-Proto": (
        {"HTTP_ORIGIN": "https://testserver"},
        ORIGIN,
    ),
    "another address": ({"HTTP_ORIGIN": "https://console.example.org"}, ORIGIN),
    "another address, no Origin header": (
        {"secure": True, "HTTP_REFERER": "https://console.example.org/accounts/login/"},
        ORIGIN,
    ),
    "an http page on an https console": (
        {"secure": True, "HTTP_REFERER": "http://testserver/accounts/login/"},
        INSECURE,
    ),
    "a stale token": ({"token": "x" * 32}, OUT_OF_DATE),
    "no token": ({"token": ""}, OUT_OF_DATE),
}


def _post(case: dict[str, Any]) -> str:
    client = Client(enforce_csrf_checks=True)
    page = client.get("/accounts/login/").content.decode()
    found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert found is not None
    extra = dict(case)
    token = extra.pop("token", found.group(1))
    response = client.post(
        "/accounts/login/",
        {"username": "alice", "password": PASSWORD, "csrfmiddlewaretoken": token},
        **extra,
    )
    assert response.status_code == 403
    assert "_auth_user_id" not in client.session
    return response.content.decode()


@pytest.mark.parametrize("case", list(CASES))
def test_a_refused_form_names_its_likely_cause(alice: User, case: str) -> None:
    sent, words = CASES[case]
    html = _post(sent)
    assert words in html
    for other in {OUT_OF_DATE, ORIGIN, INSECURE} - {words}:
        assert other not in html
    if words == ORIGIN:
        assert "X-Forwarded-Proto: https" in html and "DJANGO_CSRF_TRUSTED_ORIGINS" in html
        address = sent.get("HTTP_ORIGIN") or sent["HTTP_REFERER"]
        assert f"({address})" in html


def test_the_address_it_names_is_escaped(alice: User) -> None:
    html = _post({"HTTP_ORIGIN": 'https://<img src=x onerror="alert(1)">'})
    assert "<img src=x" not in html
    assert "&lt;img src=x" in html and ORIGIN in html
