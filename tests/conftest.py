"""Shared fixtures: the cast (alice, carol, cathy, rita, mallory), a runtime, and clients."""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Iterator
from io import StringIO
from typing import Any

import pytest
from django.apps import apps as django_apps
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connections, transaction
from django.db.models.signals import post_migrate
from django.test import Client, override_settings
from rest_framework.test import APIClient

from beliefs.models import Runtime, RuntimeAPIKey
from beliefs.roles import CLASSIFIERS_GROUP, REVIEWERS_GROUP, grant_role
from tests.api import documented
from tests.support.live_server import LiveServer, Served

PASSWORD = "correct-horse-battery"


AUDIT_APPEND_ONLY = importlib.import_module("beliefs.migrations.0002_audit_append_only")


def _lift_audit_triggers(alias: str) -> None:
    with connections[alias].cursor() as cursor:
        if connections[alias].vendor == "postgresql":
            cursor.execute("ALTER TABLE beliefs_auditevent DISABLE TRIGGER USER")
        else:
            for statement in AUDIT_APPEND_ONLY.SQLITE_DOWN:
                cursor.execute(statement)


def _restore_audit_triggers(alias: str) -> None:
    with connections[alias].cursor() as cursor:
        if connections[alias].vendor == "postgresql":
            cursor.execute("ALTER TABLE beliefs_auditevent ENABLE TRIGGER USER")
        else:
            for statement in AUDIT_APPEND_ONLY.SQLITE_UP:
                cursor.execute(statement)


def _is_transactional(request: pytest.FixtureRequest) -> bool:
    """Whether pytest-django runs this test as a TransactionTestCase (which it decides the same
    way): such a test ends with a flush of every table, not a rollback."""
    marker = request.node.get_closest_marker("django_db")
    marked = marker is not None and bool(
        marker.kwargs.get("transaction") or marker.kwargs.get("reset_sequences")
    )
    requested = {"transactional_db", "live_server", "django_db_reset_sequences"}
    return marked or bool(requested & set(request.fixturenames))


@pytest.fixture(autouse=True)
def _audit_log_flushable_by_transactional_tests(request: pytest.FixtureRequest) -> Iterator[None]:
    """A transactional test (live_server, real threads or processes) ends with a flush of every
    table, which the append-only audit log rightly refuses. Only around that flush are its
    triggers lifted: this fixture depends on `transactional_db`, so it ends just before the
    flush and lifts them there; the flush then sends `post_migrate` (as Django documents), and a
    receiver that listens for that one signal puts them back before anything else runs.
    (`available_apps` and serialized rollback keep the flush from sending it: refused here.)"""
    if not _is_transactional(request):
        yield
        return
    marker = request.node.get_closest_marker("django_db")
    if "django_db_serialized_rollback" in request.fixturenames or (
        marker
        and (
            marker.kwargs.get("available_apps") is not None
            or marker.kwargs.get("serialized_rollback")
        )
    ):
        pytest.fail("the audit log's triggers are put back by the flush's post_migrate signal")
    request.getfixturevalue("transactional_db")
    yield
    wanted = (marker.kwargs.get("databases") if marker else None) or ["default"]
    aliases = list(connections) if wanted == "__all__" else [a for a in connections if a in wanted]
    beliefs = django_apps.get_app_config("beliefs")
    for alias in aliases:

        def restore(using: str, alias: str = alias, **_: object) -> None:
            if using == alias:
                _restore_audit_triggers(alias)
                post_migrate.disconnect(
                    dispatch_uid=f"restore-audit-triggers-{alias}", sender=beliefs
                )

        post_migrate.connect(
            restore, sender=beliefs, weak=False, dispatch_uid=f"restore-audit-triggers-{alias}"
        )
        _lift_audit_triggers(alias)


@pytest.fixture(autouse=True)
def _live_server_settled_before_the_flush(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test of the live server ends with its waits answered and no answer under way, before
    the audit log's triggers are lifted and the tables emptied: a read still running there
    would hold the locks those need (on PostgreSQL one of the two then fails, deadlocked), or
    would reach the database after the test, where pytest-django allows no access."""
    if "live_server" not in request.fixturenames:
        yield
        return
    request.getfixturevalue("_audit_log_flushable_by_transactional_tests")
    server = request.getfixturevalue("live_server")
    yield
    server.settle()


@pytest.fixture(scope="session", autouse=True)
def _receipt_signing_key(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Receipts are signed with a key made for the test session, never the developer's own
    development key."""
    from beliefs import signing

    path = tmp_path_factory.mktemp("receipts") / "signing.pem"
    signing.write_key(path, signing.new_key())
    with override_settings(CONSOLE_RECEIPT_SIGNING_KEYS=[str(path)]):
        yield


@pytest.fixture(scope="session", autouse=True)
def _fast_password_hasher() -> Iterator[None]:
    """Fixtures create users by the dozen; PBKDF2's deliberate slowness is not under test here
    (sign-in still checks passwords end to end, just with a cheap hash)."""
    with override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]):
        yield


@pytest.fixture(scope="session", autouse=True)
def _no_collected_static_files(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The tests' own STATIC_ROOT, empty, whatever the checkout holds: WhiteNoise reads every
    file under it each time a handler starts (each test client), so a checkout where
    `collectstatic` ran (`make bench`, a production install) made the suite a third slower,
    about 80 ms a client. Servers the tests start collect into a directory of their own
    (`tests.support.servers`)."""
    with override_settings(STATIC_ROOT=str(tmp_path_factory.mktemp("static"))):
        yield


@pytest.fixture(scope="session")
def live_server() -> Iterator[LiveServer]:
    """The console over real HTTP, served as production serves it (`tests.support.live_server`:
    uvicorn and `console.asgi` in a thread), once for the session; each test that names it is
    transactional."""
    server = LiveServer()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def served(live_server: LiveServer) -> Iterator[Callable[..., Served]]:
    """Clients of the live server (the code production runs, the long-poll's wait included):
    `served(alice)` with her session, `served(key=...)` with a runtime's key, `served()` with
    neither."""
    made: list[Served] = []

    def make(user: User | None = None, *, key: str | None = None) -> Served:
        from tests.support.servers import session_headers

        headers = session_headers(user) if user is not None else {}
        if key is not None:
            headers["Authorization"] = f"Api-Key {key}"
        made.append(Served(live_server, headers))
        return made[-1]

    yield make
    for client in made:
        client.close()


def make_user(username: str, *groups: str) -> User:
    """A person signing in with PASSWORD, in the role groups named (a fixture's, or one more)."""
    user = User.objects.create_user(username=username, password=PASSWORD)
    for group in groups:
        grant_role(user, group)
    return user


@pytest.fixture
def alice(db: None) -> User:
    """An end user: the principal of the instances under test."""
    return make_user("alice")


@pytest.fixture
def mallory(db: None) -> User:
    """Another end user, who must never see alice's instances or prompts."""
    return make_user("mallory")


@pytest.fixture
def carol(db: None) -> User:
    """A classifier."""
    return make_user("carol", CLASSIFIERS_GROUP)


@pytest.fixture
def cathy(db: None) -> User:
    """A second classifier (four-eyes approvals)."""
    return make_user("cathy", CLASSIFIERS_GROUP)


@pytest.fixture
def rita(db: None) -> User:
    """A reviewer of proposal validations."""
    return make_user("rita", REVIEWERS_GROUP)


@pytest.fixture
def runtime_key(db: None) -> tuple[RuntimeAPIKey, str]:
    """A key of the runtime "test-runtime": (the stored key, the key itself)."""
    return runtime_key_of("test-runtime")


def runtime_key_of(runtime_name: str) -> tuple[RuntimeAPIKey, str]:
    """A new key of the named runtime (created if needed), made directly so that tests counting
    audit events count only what they do."""
    runtime, _ = Runtime.objects.get_or_create(name=runtime_name)
    return RuntimeAPIKey.objects.create_key(name=runtime_name, runtime=runtime)


class JsonClient(APIClient):
    """An APIClient whose verbs send and return JSON: `client.post_json(url, data)`."""

    def _json(self, method: str, url: str, data: Any = None, **extra: Any) -> Any:
        payload = json.dumps(data) if data is not None else None
        return getattr(self, method)(url, data=payload, content_type="application/json", **extra)

    def get_json(self, url: str, **extra: Any) -> Any:
        return self.get(url, **extra)

    def post_json(self, url: str, data: Any = None, **extra: Any) -> Any:
        return self._json("post", url, data, **extra)

    def put_json(self, url: str, data: Any = None, **extra: Any) -> Any:
        return self._json("put", url, data, **extra)


@pytest.fixture
def runtime(runtime_key: tuple[RuntimeAPIKey, str]) -> JsonClient:
    """The API as a runtime sees it (Authorization: Api-Key ...)."""
    client = JsonClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {runtime_key[1]}")
    return client


@pytest.fixture
def signed_in() -> Callable[[User], Client]:
    """A page client signed in as a person: `signed_in(alice)`. Each call is a fresh browser."""

    def make(user: User) -> Client:
        client = Client()
        client.force_login(user)
        return client

    return make


@pytest.fixture
def person_client() -> Callable[[User], JsonClient]:
    """A session-authenticated client for a person: `person_client(alice)`."""

    def make(user: User) -> JsonClient:
        client = JsonClient(enforce_csrf_checks=False)
        client.force_login(user)
        return client

    return make


@pytest.fixture(scope="module")
def demo(django_db_setup: None, django_db_blocker: Any) -> Iterator[str]:
    """The demo (`manage.py demo`) loaded once for a whole test module; returns what it printed.

    It is loaded inside a transaction that is rolled back after the module, and each test runs
    in a savepoint within it (as Django's `TestCase.setUpTestData` does), so every test starts
    from the freshly loaded demo and nothing leaks into the next module."""
    out = StringIO()
    with django_db_blocker.unblock(), transaction.atomic():
        call_command("demo", stdout=out)
        yield out.getvalue()
        transaction.set_rollback(True)


def notify_queries() -> int:
    """The statements an instance write adds for its change notification: `pg_notify` on
    PostgreSQL (sent in the writing transaction, so it is delivered on commit to every app
    server); none elsewhere, where the in-process wake is not a query."""
    return 1 if connections["default"].vendor == "postgresql" else 0


@pytest.fixture(autouse=True)
def answers_as_documented(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every JSON answer of the API a test gets through a `JsonClient` is held to the OpenAPI
    document, strictly (no key it does not declare, none it requires missing): the document
    and the bytes cannot drift apart unseen."""
    request = JsonClient.request

    def checked(self: JsonClient, **kwargs: Any) -> Any:
        response = request(self, **kwargs)
        documented.check(response)
        return response

    monkeypatch.setattr(JsonClient, "request", checked)
