"""A page that is not there answers the console's own 404 page, with DEBUG on (as `make run`
serves it) and off: never Django's technical page listing every URL pattern."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.test import Client, override_settings

pytestmark = pytest.mark.django_db


@pytest.fixture
def carol_client(carol: User, signed_in: Callable[[User], Client]) -> Client:
    return signed_in(carol)


MISSING = [
    "/no-such-page/",  # no URL pattern matches
    "/instances/00000000-0000-0000-0000-000000000000/",  # the view's own 404
    "/classify/no.such.class/",
]


@pytest.mark.parametrize("debug", [False, True], ids=["debug-off", "debug-on"])
@pytest.mark.parametrize("url", MISSING)
def test_a_missing_page_is_the_consoles_own(
    alice_client: Client, carol_client: Client, url: str, debug: bool
) -> None:
    client = carol_client if url.startswith("/classify/") else alice_client
    with override_settings(DEBUG=debug):
        response = client.get(url)
    html = response.content.decode()
    assert response.status_code == 404
    assert "<h1>Not found</h1>" in html and "No such page or resource." in html
    assert "URLconf" not in html and "urlpatterns" not in html.lower()
    assert 'class="site-header"' in html  # the console's page, with its header


@pytest.mark.parametrize("debug", [False, True], ids=["debug-off", "debug-on"])
def test_the_api_still_answers_json(alice_client: Client, debug: bool) -> None:
    with override_settings(DEBUG=debug):
        response = alice_client.get("/api/v1/no-such-thing/")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")
