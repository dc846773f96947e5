"""Schemathesis drives every operation of our own OpenAPI schema with generated input.

Whatever it sends, the API answers with a status below 500, and every error is a JSON body.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from rest_framework_api_key.models import APIKey

from console.wsgi import application
from tests.builders import open_instance, register_task_class

schema = schemathesis.openapi.from_wsgi("/api/v1/schema/?format=json", application)


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


@pytest.fixture
def seeded_instance(runtime_key: tuple[APIKey, str], alice: object) -> None:
    """A registered task class and an open instance, so that some generated calls hit data."""
    from beliefs import services

    actor = services.Actor(key=runtime_key[0])
    register_task_class(
        key="fuzz.transfer",
        slots=[{"key": "amount", "value_type": "number"}, {"key": "iban"}],
        decisions=[{"key": "send", "slots": ["amount", "iban"]}],
        actor=actor,
    )
    open_instance(task_class_key="fuzz.transfer", principal="alice", actor=actor)


@pytest.mark.django_db
@schema.parametrize()
@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_it_never_answers_a_server_error(
    case: schemathesis.Case, runtime_key: tuple[APIKey, str], seeded_instance: None
) -> None:
    case.headers = {**(case.headers or {}), "Authorization": f"Api-Key {runtime_key[1]}"}
    response = case.call()
    assert response.status_code < 500, (case.method, case.path, response.text[:500])
    if response.status_code >= 400 and response.status_code != 405:
        body = response.json()
        assert {"error", "detail", "fields"} <= set(body), body
