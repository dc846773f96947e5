"""Single sign-on end to end in Chromium, against a real OpenID Connect provider on loopback
(oidc-provider, tests/oidc_provider/): the person signs in at the provider, lands in the
console with the roles their groups give, and loses a role the provider took away at the next
sign-in. The console is opened as http://localhost:PORT and the provider is on 127.0.0.1, so
their cookies stay apart (a browser keeps cookies by host, not by port)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth.models import User
from django.contrib.sessions.backends.db import SessionStore
from playwright.sync_api import Page, expect

from beliefs.models import SignInIdentity
from beliefs.roles import CLASSIFIERS_GROUP, REVIEWERS_GROUP
from console import sso
from tests.browser.conftest import SCREENSHOTS, shoot
from tests.support.oidc_provider import (
    CLIENT_ID,
    CLIENT_SECRET,
    LoopbackProvider,
    loopback_provider,
)

ACCOUNTS = {
    "sub-dana-0001": {
        "preferred_username": "dana",
        "email": "dana@example.test",
        "groups": ["console-classifiers", "finance"],
    },
}


def _console(live_server: Any) -> str:  # noqa: ANN401 - pytest-django's LiveServer
    return re.sub(r"//127\.0\.0\.1:", "//localhost:", str(live_server.url))


@pytest.fixture(scope="module")
def provider(
    live_server: Any,  # noqa: ANN401
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[LoopbackProvider]:
    redirect_uri = f"{_console(live_server)}/accounts/oidc/callback/"
    with loopback_provider(tmp_path_factory.mktemp("oidc"), redirect_uri) as started:
        yield started


@pytest.fixture
def sso_on(provider: LoopbackProvider, settings: Any) -> LoopbackProvider:  # noqa: ANN401
    provider.accounts(ACCOUNTS)
    settings.OIDC_ISSUER = provider.issuer
    settings.OIDC_CLIENT_ID = CLIENT_ID
    settings.OIDC_CLIENT_SECRET = CLIENT_SECRET
    settings.OIDC_SCOPES = "openid email profile groups"
    settings.OIDC_GROUP_ROLES = {
        "console-classifiers": [CLASSIFIERS_GROUP],
        "console-reviewers": [REVIEWERS_GROUP],
        "finance": ["finance-approvers"],
    }
    sso.forget_discovery()
    return provider


@pytest.fixture
def at_console(page: Page, live_server: Any, sso_on: LoopbackProvider) -> str:  # noqa: ANN401
    # The provider's development pages import a web font: nothing leaves the machine.
    page.context.route(
        re.compile(r"^https://fonts\.(googleapis|gstatic)\.com/"), lambda route: route.abort()
    )
    return _console(live_server)


def _sign_in_at_provider(page: Page, console: str, login: str) -> None:
    """From the console's sign-in page through the provider's own pages (its login form, then
    its consent) back into the console."""
    page.goto(f"{console}/accounts/login/")
    page.get_by_role("link", name="Sign in with SSO").click()
    page.locator('input[name="login"]').fill(login)
    page.locator('input[name="password"]').fill("any password")
    page.get_by_role("button", name="Sign-in").click()
    page.get_by_role("button", name="Continue").click()
    page.wait_for_url(lambda url: url.startswith(console) and "/accounts/" not in url)
    expect(page.get_by_text("Signed in as")).to_be_visible()


def _sign_out(page: Page, console: str, provider: LoopbackProvider) -> None:
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url(f"{console}/accounts/login/")
    expect(page.get_by_role("link", name="Sign in with SSO")).to_be_visible()
    # Out of the provider too (its session cookie), so the next sign-in goes through its
    # login form again: the same path every time.
    page.context.clear_cookies(domain="127.0.0.1")


def test_a_person_signs_in_with_the_roles_their_groups_give_and_loses_a_dropped_one(
    page: Page, at_console: str, sso_on: LoopbackProvider
) -> None:
    authorizations: list[str] = []
    page.on(
        "request",
        lambda request: (
            authorizations.append(request.url)
            if request.url.startswith(f"{sso_on.issuer}/auth?")
            else None
        ),
    )
    _sign_in_at_provider(page, at_console, "sub-dana-0001")
    # The authorization request carried a PKCE challenge (S256) and a nonce.
    asked = {k: v[0] for k, v in parse_qs(urlsplit(authorizations[0]).query).items()}
    assert asked["code_challenge_method"] == "S256" and len(asked["code_challenge"]) == 43
    assert asked["nonce"] and asked["state"] and asked["client_id"] == CLIENT_ID
    # A classifier lands on the classifier queue.
    expect(page).to_have_url(f"{at_console}/classify/")
    expect(page.locator("header")).to_contain_text("dana")
    dana = User.objects.get(username="dana")
    assert dana.email == "dana@example.test"
    assert set(dana.groups.values_list("name", flat=True)) == {
        CLASSIFIERS_GROUP,
        "finance-approvers",
    }
    identity = SignInIdentity.objects.get(user=dana)
    assert (identity.issuer, identity.subject) == (sso_on.issuer, "sub-dana-0001")
    shoot(page, SCREENSHOTS / "sso-signed-in-classifier.png")

    # The provider drops the classifiers group (and dana's address changes): at the next
    # sign-in the role is gone, and dana is still dana.
    sso_on.accounts(
        {
            "sub-dana-0001": {
                "preferred_username": "dana",
                "email": "dana.new@example.test",
                "groups": ["finance"],
            }
        }
    )
    _sign_out(page, at_console, sso_on)
    _sign_in_at_provider(page, at_console, "sub-dana-0001")
    expect(page).to_have_url(f"{at_console}/")  # no longer sent to the classifier queue
    response = page.goto(f"{at_console}/classify/")
    assert response is not None and response.status == 403
    dana = User.objects.get(pk=dana.pk)
    assert set(dana.groups.values_list("name", flat=True)) == {"finance-approvers"}
    assert dana.email == "dana.new@example.test"
    assert User.objects.filter(sign_in_identities__isnull=False).count() == 1


def _session_key(page: Page) -> str:
    return next(c["value"] for c in page.context.cookies() if c["name"] == "sessionid")


def _forget_the_console_session(page: Page) -> None:
    page.context.clear_cookies(domain="localhost")


def _swap_the_started_state(page: Page) -> None:
    """The state this browser's session started is replaced by another, as if the provider
    had come back with a state the console never sent. (Playwright cannot rewrite the
    provider's redirect to the callback: a route sees no request reached by a redirect.)"""
    session = SessionStore(session_key=_session_key(page))
    (started,) = session["oidc_states"].values()
    session["oidc_states"] = {"another-state": started}
    session.save()


@pytest.mark.parametrize("spoil", [_forget_the_console_session, _swap_the_started_state])
def test_a_callback_whose_state_this_browser_never_started_signs_nobody_in(
    page: Page, at_console: str, spoil: Callable[[Page], None]
) -> None:
    page.goto(f"{at_console}/accounts/login/")
    page.get_by_role("link", name="Sign in with SSO").click()
    page.locator('input[name="login"]').fill("sub-dana-0001")
    spoil(page)
    page.locator('input[name="password"]').fill("any password")
    page.get_by_role("button", name="Sign-in").click()
    page.get_by_role("button", name="Continue").click()
    page.wait_for_url(f"{at_console}/accounts/login/")
    expect(page.get_by_role("alert")).to_have_text(sso.NOT_STARTED_HERE)
    expect(page.get_by_text("Signed in as")).to_have_count(0)
    assert not User.objects.filter(username="dana").exists()
    response = page.goto(f"{at_console}/classify/")
    assert response is not None and "/accounts/login/" in response.url


@pytest.mark.parametrize("width", [1280, 390])
def test_with_passwords_off_the_page_offers_only_the_provider_and_fits(
    page: Page,
    at_console: str,
    settings: Any,  # noqa: ANN401
    width: int,
) -> None:
    settings.CONSOLE_PASSWORD_SIGN_IN = False
    page.set_viewport_size({"width": width, "height": 800})
    page.goto(f"{at_console}/accounts/login/")
    expect(page.get_by_role("link", name="Sign in with SSO")).to_be_visible()
    expect(page.get_by_label("Password")).to_have_count(0)
    expect(page.get_by_role("button", name="Use a passkey")).to_have_count(0)
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    shoot(page, SCREENSHOTS / f"sso-sign-in-{width}.png")
    _sign_in_at_provider(page, at_console, "sub-dana-0001")
    expect(page.locator("header")).to_contain_text("dana")


@pytest.mark.parametrize("width", [1280, 390])
def test_beside_passwords_the_provider_comes_first_and_the_page_fits(
    page: Page, at_console: str, width: int
) -> None:
    page.set_viewport_size({"width": width, "height": 800})
    page.goto(f"{at_console}/accounts/login/?next=/classify/")
    sso_link = page.get_by_role("link", name="Sign in with SSO")
    expect(sso_link).to_have_attribute("href", "/accounts/oidc/start/?next=/classify/")
    expect(page.get_by_label("Password")).to_be_visible()
    expect(page.get_by_role("button", name="Use a passkey")).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    shoot(page, SCREENSHOTS / f"sso-beside-passwords-{width}.png")
