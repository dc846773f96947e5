"""Single sign-on (console.sso) through the Django test client, with the provider's answers
forged here: ID tokens signed with a key of the test's own, so a wrong nonce, audience or state
can be sent on purpose. tests/browser/test_sso.py signs in through a real provider."""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from django.contrib.auth.models import Group, User
from django.contrib.messages import get_messages
from django.core import checks
from django.core.exceptions import ImproperlyConfigured
from django.test import Client
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from beliefs.models import SignInIdentity
from beliefs.roles import CLASSIFIERS_GROUP, REVIEWERS_GROUP, is_classifier, is_reviewer
from console import sso
from console.checks import check_sso_issuer
from console.settings import env_group_roles
from tests.conftest import PASSWORD, make_user
from tests.project.test_deploy import settings_under

pytestmark = pytest.mark.django_db

ISSUER = "https://id.example.test"
CLIENT_ID = "console"


class ForgedProvider:
    """What the provider answers: the claims of whoever signs in, and the ID token's fields,
    which a test can spoil (a wrong nonce, another audience)."""

    def __init__(self) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.claims: dict[str, Any] = {}
        self.token_overrides: dict[str, Any] = {}
        self.userinfo_overrides: dict[str, Any] = {}

    def id_token(self, nonce: str) -> str:
        now = int(time.time())
        payload = {
            "iss": ISSUER,
            "aud": CLIENT_ID,
            "sub": self.claims["sub"],
            "nonce": nonce,
            "iat": now,
            "exp": now + 300,
            **self.token_overrides,
        }
        return jwt.encode(payload, self.key, algorithm="RS256", headers={"kid": "k1"})

    def start(self, client: Client, next_url: str = "") -> dict[str, str]:
        """The sign-in's start: the authorization request's parameters."""
        response = client.get("/accounts/oidc/start/" + (f"?next={next_url}" if next_url else ""))
        assert response.status_code == 302, response
        location = urlsplit(response["Location"])
        assert f"{location.scheme}://{location.netloc}{location.path}" == f"{ISSUER}/authorize"
        return {k: v[0] for k, v in parse_qs(location.query).items()}

    def sign_in(self, client: Client, *, state: str | None = None) -> Any:  # noqa: ANN401
        """Start, then come back to the callback as the provider would (with `state` instead
        of the one the start made, to tamper with it)."""
        asked = self.start(client)
        self.nonce = asked["nonce"]
        return client.get(
            "/accounts/oidc/callback/", {"code": "the-code", "state": state or asked["state"]}
        )


@pytest.fixture
def provider(settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[ForgedProvider]:  # noqa: ANN401
    forged = ForgedProvider()
    settings.OIDC_ISSUER = ISSUER
    settings.OIDC_CLIENT_ID = CLIENT_ID
    settings.OIDC_CLIENT_SECRET = "secret"
    settings.OIDC_PROVIDER_NAME = "Example ID"
    settings.OIDC_GROUP_ROLES = {
        "console-classifiers": [CLASSIFIERS_GROUP],
        "console-reviewers": [REVIEWERS_GROUP],
        "finance": ["finance-approvers"],
    }
    found = sso.Endpoints(
        issuer=ISSUER,
        authorization=f"{ISSUER}/authorize",
        token=f"{ISSUER}/token",
        userinfo=f"{ISSUER}/userinfo",
        jwks=f"{ISSUER}/jwks",
    )
    monkeypatch.setattr(sso, "endpoints", lambda: found)
    asked: dict[str, Any] = {}

    def get_token(backend: sso.SSOBackend, payload: dict[str, Any]) -> dict[str, str]:
        asked.update(payload)
        return {"id_token": forged.id_token(forged.nonce), "access_token": "the-access-token"}

    def get_userinfo(backend: Any, access: str, id_token: str, payload: Any) -> dict[str, Any]:  # noqa: ANN401
        return {**forged.claims, **forged.userinfo_overrides}

    monkeypatch.setattr(sso.SSOBackend, "get_token", get_token)
    monkeypatch.setattr(OIDCAuthenticationBackend, "get_userinfo", get_userinfo)
    monkeypatch.setattr(
        sso.SSOBackend,
        "retrieve_matching_jwk",
        lambda backend, token: jwt.PyJWK(
            json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(forged.key.public_key()))
        ),
    )
    forged.token_request = asked  # type: ignore[attr-defined]
    yield forged


def _signed_in(client: Client) -> User | None:
    user_id = client.session.get("_auth_user_id")
    return User.objects.get(pk=user_id) if user_id else None


def _messages(response: Any) -> list[str]:  # noqa: ANN401
    return [str(m) for m in get_messages(response.wsgi_request)]


def test_the_authorization_request_carries_a_pkce_challenge_with_s256(
    provider: ForgedProvider,
) -> None:
    provider.claims = {"sub": "s-1"}
    client = Client()
    asked = provider.start(client, next_url="/classify/")
    assert asked["response_type"] == "code" and asked["client_id"] == CLIENT_ID
    assert asked["code_challenge_method"] == "S256"
    assert asked["redirect_uri"] == "http://testserver/accounts/oidc/callback/"
    assert set(asked["scope"].split()) == {"openid", "email", "profile"}
    kept = client.session["oidc_states"][asked["state"]]
    verifier = kept["code_verifier"]
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    assert asked["code_challenge"] == challenge.decode().rstrip("=")
    assert kept["nonce"] == asked["nonce"] and len(asked["nonce"]) >= 32
    # The verifier goes to the token endpoint, with the code.
    provider.nonce = asked["nonce"]
    client.get("/accounts/oidc/callback/", {"code": "c", "state": asked["state"]})
    assert provider.token_request["code_verifier"] == verifier  # type: ignore[attr-defined]
    assert _signed_in(client) is not None


def test_a_first_sign_in_creates_the_person_with_the_roles_their_groups_give(
    provider: ForgedProvider,
) -> None:
    provider.claims = {
        "sub": "s-1",
        "preferred_username": "dana",
        "email": "dana@example.test",
        "groups": ["console-classifiers", "finance", "unmapped"],
    }
    client = Client()
    response = provider.sign_in(client)
    assert response.status_code == 302 and response["Location"] == "/start/"
    user = _signed_in(client)
    assert user is not None and user.username == "dana" and user.email == "dana@example.test"
    assert not user.has_usable_password()
    assert is_classifier(user) and not is_reviewer(user)
    assert set(user.groups.values_list("name", flat=True)) == {
        CLASSIFIERS_GROUP,
        "finance-approvers",
    }
    identity = SignInIdentity.objects.get(user=user)
    assert (identity.issuer, identity.subject) == (ISSUER, "s-1")
    assert identity.last_sign_in_at is not None
    assert provider.token_request["code_verifier"]  # type: ignore[attr-defined]
    assert client.get("/classify/").status_code == 200


def test_people_are_matched_by_subject_never_by_email(provider: ForgedProvider) -> None:
    provider.claims = {"sub": "s-1", "preferred_username": "dana", "email": "same@example.test"}
    provider.sign_in(Client())
    provider.claims = {"sub": "s-2", "preferred_username": "dana", "email": "same@example.test"}
    provider.sign_in(second := Client())
    first, other = User.objects.get(username="dana"), User.objects.get(username="dana-2")
    assert _signed_in(second) == other != first
    # The same subject with a changed e-mail is the same person, with the new address.
    provider.claims = {"sub": "s-1", "preferred_username": "dana", "email": "new@example.test"}
    provider.sign_in(third := Client())
    assert _signed_in(third) == first
    first.refresh_from_db()
    assert first.email == "new@example.test"
    assert User.objects.count() == 2


def test_a_provider_username_never_takes_over_a_local_account(provider: ForgedProvider) -> None:
    alice = make_user("alice")
    provider.claims = {"sub": "s-9", "preferred_username": "Alice", "email": "a@example.test"}
    client = Client()
    provider.sign_in(client)
    person = _signed_in(client)
    assert person is not None and person != alice and person.username == "Alice-2"
    # An administrator links alice by adding her identity; then her subject signs her in.
    SignInIdentity.objects.create(user=alice, issuer=ISSUER, subject="s-alice")
    provider.claims = {"sub": "s-alice", "preferred_username": "whatever"}
    provider.sign_in(again := Client())
    assert _signed_in(again) == alice


@pytest.mark.parametrize(
    ("preferred", "username"),
    [("jürgen.müller", "jurgen.muller"), ("\u0430lice", "lice"), ("bob smith\u200b", "bobsmith")],
)
def test_a_username_is_plain_ascii(preferred: str, username: str) -> None:
    assert sso.username_for({"sub": "s", "preferred_username": preferred}) == username


def test_a_username_is_made_from_the_subject_when_the_provider_gives_none(
    provider: ForgedProvider,
) -> None:
    provider.claims = {"sub": "00u1<script>", "preferred_username": "<>!"}
    client = Client()
    provider.sign_in(client)
    user = _signed_in(client)
    assert user is not None and user.username.startswith("sso-") and len(user.username) == 16


def test_groups_follow_the_claim_at_every_sign_in_and_hand_granted_ones_stay(
    provider: ForgedProvider,
) -> None:
    provider.claims = {"sub": "s-1", "preferred_username": "dana", "groups": ["console-reviewers"]}
    provider.sign_in(Client())
    dana = User.objects.get(username="dana")
    dana.groups.add(Group.objects.create(name="hand-granted"))
    provider.claims["groups"] = ["console-classifiers"]
    provider.sign_in(Client())
    dana = User.objects.get(pk=dana.pk)  # permissions are cached on the instance
    assert is_classifier(dana) and not is_reviewer(dana)
    assert set(dana.groups.values_list("name", flat=True)) == {CLASSIFIERS_GROUP, "hand-granted"}
    del provider.claims["groups"]  # no claim at all: no mapped group
    provider.sign_in(Client())
    assert set(dana.groups.values_list("name", flat=True)) == {"hand-granted"}


def test_a_groups_claim_that_is_not_a_list_refuses_the_sign_in(provider: ForgedProvider) -> None:
    provider.claims = {"sub": "s-1", "preferred_username": "dana", "groups": {"a": 1}}
    client = Client()
    response = provider.sign_in(client)
    assert response["Location"] == "/accounts/login/"
    assert _signed_in(client) is None and not User.objects.exists()


def test_a_token_with_another_nonce_is_refused(provider: ForgedProvider) -> None:
    provider.claims = {"sub": "s-1", "preferred_username": "dana"}
    provider.token_overrides = {"nonce": "not-the-one-this-browser-sent"}
    client = Client()
    response = provider.sign_in(client)
    assert response.status_code == 302 and response["Location"] == "/accounts/login/"
    assert _messages(response) == [sso.NOT_VERIFIED]
    assert _signed_in(client) is None and not User.objects.exists()
    page = client.get("/accounts/login/")
    assert page.status_code == 200 and "answer could not be verified" in page.content.decode()


@pytest.mark.parametrize(
    "spoiled",
    [
        {"aud": "another-client"},
        {"aud": ["another-client", CLIENT_ID]},  # no azp naming this client
        {"iss": "https://elsewhere.example.test"},
        {"exp": int(time.time()) - 3600},
    ],
)
def test_a_token_for_another_client_issuer_or_time_is_refused(
    provider: ForgedProvider,
    spoiled: dict[str, Any],
) -> None:
    provider.claims = {"sub": "s-1", "preferred_username": "dana"}
    provider.token_overrides = spoiled
    client = Client()
    response = provider.sign_in(client)
    assert response["Location"] == "/accounts/login/"
    assert _signed_in(client) is None and not User.objects.exists()


def test_userinfo_about_another_subject_is_refused(provider: ForgedProvider) -> None:
    provider.claims = {"sub": "s-1", "preferred_username": "dana"}
    provider.userinfo_overrides = {"sub": "s-2"}
    client = Client()
    provider.sign_in(client)
    assert _signed_in(client) is None and not User.objects.exists()


def test_a_tampered_state_is_refused(provider: ForgedProvider) -> None:
    provider.claims = {"sub": "s-1", "preferred_username": "dana"}
    client = Client()
    response = provider.sign_in(client, state="tampered")
    assert response["Location"] == "/accounts/login/"
    assert _messages(response) == [sso.NOT_STARTED_HERE]
    assert _signed_in(client) is None and not User.objects.exists()


def test_a_callback_in_a_session_that_started_nothing_is_refused(
    provider: ForgedProvider,
) -> None:
    client = Client()
    response = client.get("/accounts/oidc/callback/", {"code": "c", "state": "s"})
    assert response.status_code == 302 and response["Location"] == "/accounts/login/"
    assert _messages(response) == [sso.NOT_STARTED_HERE]
    assert _signed_in(client) is None


def test_a_state_is_answered_once(provider: ForgedProvider) -> None:
    provider.claims = {"sub": "s-1", "preferred_username": "dana"}
    client = Client()
    asked = provider.start(client)
    provider.nonce = asked["nonce"]
    callback = {"code": "c", "state": asked["state"]}
    assert client.get("/accounts/oidc/callback/", callback)["Location"] == "/start/"
    client.logout()
    replay = client.get("/accounts/oidc/callback/", callback)
    assert replay["Location"] == "/accounts/login/" and _signed_in(client) is None


def test_the_provider_refusing_says_so(provider: ForgedProvider) -> None:
    client = Client()
    asked = provider.start(client)
    response = client.get(
        "/accounts/oidc/callback/", {"error": "access_denied", "state": asked["state"]}
    )
    assert response["Location"] == "/accounts/login/"
    assert _messages(response) == [
        "Example ID did not sign you in. Please try again, or ask your administrator whether "
        "you may use the console."
    ]
    assert asked["state"] not in client.session["oidc_states"]


def test_a_deactivated_person_is_not_signed_in(provider: ForgedProvider) -> None:
    provider.claims = {"sub": "s-1", "preferred_username": "dana"}
    provider.sign_in(Client())
    User.objects.filter(username="dana").update(is_active=False)
    client = Client()
    response = provider.sign_in(client)
    assert response["Location"] == "/accounts/login/" and _signed_in(client) is None
    assert "deactivated" in _messages(response)[0]


def test_deactivating_a_person_ends_their_single_sign_on_session(
    provider: ForgedProvider,
) -> None:
    provider.claims = {"sub": "s-1", "preferred_username": "dana"}
    client = Client()
    provider.sign_in(client)
    assert client.get("/").status_code == 200
    assert client.session["_auth_user_backend"] == "console.sso.SSOBackend"
    User.objects.filter(username="dana").update(is_active=False)
    response = client.get("/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_an_unreachable_provider_is_a_message_not_an_error(settings: Any) -> None:  # noqa: ANN401
    settings.OIDC_ISSUER = "http://127.0.0.1:9"  # discard: nothing answers
    settings.OIDC_CLIENT_ID, settings.OIDC_CLIENT_SECRET = CLIENT_ID, "secret"
    settings.OIDC_TIMEOUT_SECONDS = 2
    sso.forget_discovery()
    client = Client()
    page = client.get("/accounts/login/")
    assert page.status_code == 200 and "Sign in with SSO" in page.content.decode()
    response = client.get("/accounts/oidc/start/", follow=True)
    html = response.content.decode()
    assert response.status_code == 200
    assert "SSO cannot be reached just now" in html and 'role="alert"' in html


def test_discovery_naming_another_issuer_is_refused(
    settings: Any,  # noqa: ANN401
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings.OIDC_ISSUER = ISSUER
    sso.forget_discovery()

    class Answer:
        def raise_for_status(self) -> None:
            pass

        def json(self) -> dict[str, str]:
            return {"issuer": "https://evil.example.test", "authorization_endpoint": "x"}

    monkeypatch.setattr(sso.requests, "get", lambda url, timeout: Answer())
    with pytest.raises(sso.ProviderUnavailable, match="names another issuer"):
        sso.endpoints()


# --- the sign-in page ----------------------------------------------------------------------------


def test_without_an_issuer_there_is_no_single_sign_on(db: None) -> None:
    html = Client().get("/accounts/login/").content.decode()
    assert "Sign in with" not in html and 'id="id_password"' in html
    assert Client().get("/accounts/oidc/start/").status_code == 404
    assert Client().get("/accounts/oidc/callback/?code=c&state=s").status_code == 404


def test_with_an_issuer_the_page_offers_it_beside_the_password(provider: ForgedProvider) -> None:
    html = Client().get("/accounts/login/?next=/classify/").content.decode()
    assert (
        '<a class="button primary" href="/accounts/oidc/start/?next=/classify/">'
        "Sign in with Example ID</a>"
    ) in html
    assert 'id="id_password"' in html and "Use a passkey" in html


def test_the_start_goes_back_to_the_page_asked_for(provider: ForgedProvider) -> None:
    provider.claims = {"sub": "s-1", "preferred_username": "dana"}
    client = Client()
    provider.nonce = provider.start(client, next_url="/classify/")["nonce"]
    state = next(iter(client.session["oidc_states"]))
    response = client.get("/accounts/oidc/callback/", {"code": "c", "state": state})
    assert response["Location"] == "/classify/"
    # Somewhere else is no page of ours: ignored.
    provider.start(client, next_url="https://evil.example.test/")
    assert client.session["oidc_login_next"] is None


def test_with_passwords_off_only_the_provider_is_offered(
    provider: ForgedProvider,
    settings: Any,  # noqa: ANN401
) -> None:
    settings.CONSOLE_PASSWORD_SIGN_IN = False
    html = Client().get("/accounts/login/").content.decode()
    assert "Sign in with Example ID" in html
    assert "id_password" not in html and "Use a passkey" not in html
    assert "passkeys.js" not in html


def test_with_passwords_off_a_password_is_refused_everywhere(
    provider: ForgedProvider,
    settings: Any,  # noqa: ANN401
) -> None:
    make_user("alice")
    settings.CONSOLE_PASSWORD_SIGN_IN = False
    client = Client()
    response = client.post("/accounts/login/", {"username": "alice", "password": PASSWORD})
    assert response.status_code == 403
    assert "Signing in with a password is turned off here" in response.content.decode()
    assert _signed_in(client) is None
    admin = client.post(
        "/admin/login/", {"username": "alice", "password": PASSWORD, "next": "/admin/"}
    )
    assert admin.status_code == 200 and _signed_in(client) is None
    options = client.post("/accounts/login/passkey/options/")
    assert options.status_code == 403 and options.json()["error"] == "passkey_sign_in_off"
    # Turned back on, the same password works.
    settings.CONSOLE_PASSWORD_SIGN_IN = True
    client.post("/accounts/login/", {"username": "alice", "password": PASSWORD})
    assert _signed_in(client) is not None


def test_a_password_sign_in_never_reaches_the_provider(
    provider: ForgedProvider,
) -> None:
    """A password form posted with a code and state in its query string is a password sign-in,
    never taken for the provider's answer."""
    make_user("alice")
    provider.claims = {"sub": "s-1", "preferred_username": "mallory"}
    client = Client()
    asked = provider.start(client)
    provider.nonce = asked["nonce"]
    client.post(
        f"/accounts/login/?code=c&state={asked['state']}", {"username": "alice", "password": "x"}
    )
    assert _signed_in(client) is None and not User.objects.filter(username="mallory").exists()


# --- the setting ---------------------------------------------------------------------------------


def test_the_group_mapping_reads_pairs_or_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("X", " idp-a = classifiers, idp-b=reviewers,idp-a=finance ,")
    assert env_group_roles("X") == {"idp-a": ["classifiers", "finance"], "idp-b": ["reviewers"]}
    monkeypatch.setenv("X", '{"CN=Ops,OU=x": ["classifiers", "ops"], "b": "reviewers"}')
    assert env_group_roles("X") == {"CN=Ops,OU=x": ["classifiers", "ops"], "b": ["reviewers"]}
    monkeypatch.delenv("X")
    assert env_group_roles("X") == {}
    for bad in ("idp-a", "=x", '{"a": 1}', "{nope"):
        monkeypatch.setenv("X", bad)
        with pytest.raises(ImproperlyConfigured):
            env_group_roles("X")


def test_the_settings_refuse_a_console_nobody_can_sign_in_to() -> None:
    with pytest.raises(ImproperlyConfigured, match="needs OIDC_ISSUER"):
        settings_under({"DEBUG": "true", "CONSOLE_PASSWORD_SIGN_IN": "false"})
    with pytest.raises(ImproperlyConfigured, match="needs OIDC_CLIENT_ID"):
        settings_under({"DEBUG": "true", "OIDC_ISSUER": ISSUER})
    on = settings_under(
        {
            "DEBUG": "true",
            "OIDC_ISSUER": ISSUER,
            "OIDC_CLIENT_ID": CLIENT_ID,
            "OIDC_CLIENT_SECRET": "s",
            "OIDC_GROUP_ROLES": "console-classifiers=classifiers",
            "CONSOLE_PASSWORD_SIGN_IN": "false",
        }
    )
    assert on["OIDC_GROUP_ROLES"] == {"console-classifiers": ["classifiers"]}
    assert on["CONSOLE_PASSWORD_SIGN_IN"] is False
    assert on["AUTHENTICATION_BACKENDS"][0] == "axes.backends.AxesStandaloneBackend"


def test_the_deploy_check_wants_an_https_issuer(settings: Any) -> None:  # noqa: ANN401
    settings.OIDC_ISSUER = ""
    assert check_sso_issuer() == []
    settings.OIDC_ISSUER = "http://id.example.test"
    (error,) = check_sso_issuer()
    assert error.id == "console.E003" and error.level == checks.ERROR
    settings.OIDC_ISSUER = ISSUER
    assert check_sso_issuer() == []


def test_failed_single_sign_ons_lock_nobody_out(provider: ForgedProvider, settings: Any) -> None:  # noqa: ANN401
    """A callback is no password to guess (state, nonce and PKCE guard it): its failures are
    not counted by the lockout, which would otherwise lock everyone behind one address out."""
    # Claims the console refuses: the backend answers None, a failed authentication.
    provider.claims = {"sub": "s-1", "preferred_username": "dana", "groups": 7}
    for _ in range(settings.AXES_FAILURE_LIMIT + 1):
        assert _signed_in(client := Client()) is None
        provider.sign_in(client)
    provider.claims = {"sub": "s-2", "preferred_username": "erin"}
    response = provider.sign_in(erin := Client())
    assert response.status_code == 302 and response["Location"] == "/start/"
    assert _signed_in(erin) == User.objects.get(username="erin")
    assert not User.objects.filter(username="dana").exists()
