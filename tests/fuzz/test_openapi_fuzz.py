"""Schemathesis drives every operation of our own OpenAPI schema with generated input, as a
runtime and as a signed-in person, and runs all of its checks on each answer: no server error,
every status and body as the document describes it, schema-valid input accepted and invalid
input refused, authentication not ignored.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from django.contrib.auth.models import User
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.test import Client
from django.utils.crypto import get_random_string
from hypothesis import HealthCheck, settings
from schemathesis.checks import CHECKS, load_all_checks

from beliefs.models import RuntimeAPIKey
from beliefs.services.audit import Actor
from beliefs.services.planning import instance_plan
from console.wsgi import application
from tests.builders import open_instance, register_task_class
from tests.examples import examples

pytestmark = pytest.mark.fuzz

DOCUMENT = schemathesis.openapi.from_wsgi("/api/v1/schema/?format=json", application)
# A free-form JSON value (a belief's value, a world) cannot say "no NUL in any string" in
# OpenAPI 3.0; the document says it in words, and the edge guard's own tests send NULs.
DOCUMENT.config.generation.update(allow_x00=False)


# The same document without the coverage phase (the boundary and invalid values of every
# part of a request): for the operations the caller may not use at all, where each of those
# cases is answered 403 before its body is read. Generated input, examples and every check
# still run there; `test_the_other_callers_operations_are_refused_to_them` holds the split.
DOCUMENT_WITHOUT_COVERAGE = schemathesis.openapi.from_wsgi(
    "/api/v1/schema/?format=json", application
)
DOCUMENT_WITHOUT_COVERAGE.config.generation.update(allow_x00=False)
DOCUMENT_WITHOUT_COVERAGE.config.phases.coverage.enabled = False

RUNTIME_ONLY = [
    "PUT /api/v1/task-classes/{key}/",
    "POST /api/v1/task-classes/{key}/slots/{slot}/retire/",
    "GET /api/v1/task-classes/{key}/shares/",
    "PUT /api/v1/task-classes/{key}/shares/{runtime}/",
    "DELETE /api/v1/task-classes/{key}/shares/{runtime}/",
    "POST /api/v1/instances/",
    "POST /api/v1/instances/{instance_id}/beliefs/",
    "POST /api/v1/instances/{instance_id}/cancel/",
    "POST /api/v1/instances/{instance_id}/plan/",
    "PUT /api/v1/instances/{instance_id}/world/",
    "GET /api/v1/people/{username}/passkeys/",
    "POST /api/v1/receipts/redeem/",
    "GET /api/v1/webhook-endpoints/",
    "POST /api/v1/webhook-endpoints/",
    "DELETE /api/v1/webhook-endpoints/{endpoint_id}/",
    "POST /api/v1/webhook-endpoints/{endpoint_id}/rotate-secret/",
]
PERSON_ONLY = [
    "GET /api/v1/prompts/",
    "POST /api/v1/prompts/{prompt_id}/respond/",
    "GET /api/v1/instances/{instance_id}/approval/",
    "POST /api/v1/instances/{instance_id}/approval/",
]


@pytest.fixture
def api_schema() -> schemathesis.BaseSchema:
    return DOCUMENT


@pytest.fixture
def api_schema_without_coverage() -> schemathesis.BaseSchema:
    return DOCUMENT_WITHOUT_COVERAGE


# Built when a test runs, each operation a subtest: built at collection, its coverage cases cost
# every test process 3 s before its first test, whether it runs this module or not.
schema = schemathesis.pytest.from_fixture("api_schema")
without_coverage = schemathesis.pytest.from_fixture("api_schema_without_coverage")
load_all_checks()
ALL_CHECKS = CHECKS.get_all()
# Four operations refuse some well-formed bodies for what is stored or resolved, which no
# static document can say: an answer must fit its prompt (a CONFIRM prompt takes confirm, edit
# or reject; a number slot takes a number), a decision may only name slots the task class has,
# a webhook URL must be https and resolve to public addresses only, and a receipt must be one
# this console signed. Those refusals are 400s naming the field or the receipt's problem;
# every other check still runs on these operations.
STATE_DEPENDENT = {
    "PUT /api/v1/task-classes/{key}/",
    "POST /api/v1/prompts/{prompt_id}/respond/",
    "POST /api/v1/webhook-endpoints/",
    "POST /api/v1/receipts/redeem/",
}


@pytest.fixture(autouse=True)
def keep_the_test_connection() -> Iterator[None]:
    """Calling the WSGI app directly fires request_finished, which would close the test's
    database connection (fatal inside its transaction on PostgreSQL); Django's test client
    disconnects the same handlers for the same reason."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture(autouse=True)
def node_id_as_schemathesis_reads_it(request: pytest.FixtureRequest) -> None:
    """Schemathesis (4.32) names a lazy test's subtests through `Node._nodeid`, which pytest 9
    no longer has (it keeps `_id`): give the node the attribute it reads and writes."""
    if not hasattr(request.node, "_nodeid"):
        request.node._nodeid = request.node.nodeid  # type: ignore[attr-defined]


@pytest.fixture
def seeded_instance(runtime_key: tuple[RuntimeAPIKey, str], alice: User) -> None:
    """A registered task class and a planned instance with open prompts for alice, so that
    generated calls also reach real instances and prompts."""
    actor = Actor(key=runtime_key[0])
    register_task_class(
        key="fuzz.transfer",
        slots=[{"key": "amount", "value_type": "number"}, {"key": "iban"}],
        decisions=[{"key": "send", "slots": ["amount", "iban"]}],
        actor=actor,
    )
    instance = open_instance(
        task_class_key="fuzz.transfer",
        principal="alice",
        beliefs=[{"slot": "iban", "value": "DE89", "source": "tool"}],
        actor=actor,
    )
    instance_plan(instance=instance, actor=actor)


def _runtime_headers(runtime_key: tuple[RuntimeAPIKey, str]) -> dict[str, str]:
    return {"Authorization": f"Api-Key {runtime_key[1]}"}


@pytest.fixture
def as_runtime(runtime_key: tuple[RuntimeAPIKey, str], seeded_instance: None) -> dict[str, str]:
    """The runtime's credentials, with its instance (and alice) in the database."""
    return _runtime_headers(runtime_key)


@pytest.fixture
def as_person(alice: User, seeded_instance: None) -> dict[str, str]:
    """alice's browser session: the session cookie, a CSRF cookie and the matching header."""
    browser = Client()
    browser.force_login(alice)
    token = get_random_string(32)
    session = browser.cookies["sessionid"].value
    return {"Cookie": f"sessionid={session}; csrftoken={token}", "X-CSRFToken": token}


def _check(case: schemathesis.Case, headers: dict[str, str]) -> None:
    # Sent as the caller's own credentials, so the authentication check knows they are real
    # and probes without them.
    checks = ALL_CHECKS
    if case.operation.label in STATE_DEPENDENT:
        checks = [c for c in ALL_CHECKS if c.__name__ != "positive_data_acceptance"]
    response = case.call_and_validate(headers=headers, checks=checks)
    if response.status_code >= 400 and response.status_code != 405:
        body: Any = response.json()
        assert {"error", "detail", "fields"} <= set(body), body


FUZZ = settings(
    max_examples=examples(5),
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)


@pytest.mark.django_db
@FUZZ
@schema.exclude(name=PERSON_ONLY).parametrize()
def test_it_behaves_as_documented_for_a_runtime(
    case: schemathesis.Case, as_runtime: dict[str, str]
) -> None:
    _check(case, as_runtime)


@pytest.mark.django_db
@FUZZ
@without_coverage.include(name=PERSON_ONLY).parametrize()
def test_a_runtime_on_a_persons_operations_is_refused_as_documented(
    case: schemathesis.Case, as_runtime: dict[str, str]
) -> None:
    _check(case, as_runtime)


@pytest.mark.django_db
@FUZZ
@schema.exclude(name=RUNTIME_ONLY).parametrize()
def test_it_behaves_as_documented_for_a_signed_in_person(
    case: schemathesis.Case, as_person: dict[str, str]
) -> None:
    _check(case, as_person)


@pytest.mark.django_db
@FUZZ
@without_coverage.include(name=RUNTIME_ONLY).parametrize()
def test_a_person_on_a_runtimes_operations_is_refused_as_documented(
    case: schemathesis.Case, as_person: dict[str, str]
) -> None:
    _check(case, as_person)


def _sample_path(label: str) -> tuple[str, str]:
    method, path = label.split(" ", 1)
    for name, value in {
        "{key}": "fuzz.transfer",
        "{slot}": "iban",
        "{runtime}": "test-runtime",
        "{instance_id}": "00000000-0000-0000-0000-000000000000",
        "{prompt_id}": "1",
        "{username}": "alice",
        "{endpoint_id}": "1",
    }.items():
        path = path.replace(name, value)
    return method, path


@pytest.mark.django_db
def test_the_other_callers_operations_are_refused_to_them(
    runtime_key: tuple[RuntimeAPIKey, str], alice: User, seeded_instance: None
) -> None:
    """The split above holds: each operation left without its coverage phase for a caller is
    one that caller may not use at all, and the two lists name operations of the document."""
    labels = {result.ok().label for result in DOCUMENT.get_all_operations()}
    assert set(RUNTIME_ONLY) <= labels and set(PERSON_ONLY) <= labels
    browser = Client()
    browser.force_login(alice)
    runtime = Client(headers=_runtime_headers(runtime_key))
    for caller, refused in ((browser, RUNTIME_ONLY), (runtime, PERSON_ONLY)):
        for label in refused:
            method, path = _sample_path(label)
            response = caller.generic(method, path, "{}", content_type="application/json")
            assert response.status_code == 403, (label, response.status_code, response.content)
