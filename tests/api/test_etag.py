"""GET /instances/{id}/ sends an ETag; If-None-Match with it answers 304 with no body."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import User

from tests.conftest import JsonClient
from tests.support.api import API, Driver

pytestmark = pytest.mark.django_db


@pytest.fixture
def instance_id(api: Driver) -> str:
    api.register(
        "payments.transfer",
        slots=[{"key": "recipient_account"}],
        decisions=[{"key": "send_transfer", "slots": ["recipient_account"]}],
        decision_risks={"send_transfer": "irreversible"},
    )
    instance_id = api.open(
        "payments.transfer",
        beliefs=[{"slot": "recipient_account", "value": "DE89", "source": "tool"}],
    )
    api.plan(instance_id)
    return instance_id


def test_it_answers_304_while_nothing_changed(api: Driver, instance_id: str) -> None:
    url = f"{API}/instances/{instance_id}/"
    first = api.runtime.get(url)
    tag = first["ETag"]
    assert tag.startswith('"') and tag.endswith('"') and len(tag) == 66
    again = api.runtime.get(url, HTTP_IF_NONE_MATCH=tag)
    assert again.status_code == 304
    assert again.content == b""
    assert again["ETag"] == tag


def test_a_replan_that_changes_nothing_keeps_the_etag(api: Driver, instance_id: str) -> None:
    url = f"{API}/instances/{instance_id}/"
    tag = api.runtime.get(url)["ETag"]
    api.plan(instance_id)
    assert api.runtime.get(url, HTTP_IF_NONE_MATCH=tag).status_code == 304


def test_the_etag_changes_when_the_instance_does(api: Driver, instance_id: str) -> None:
    url = f"{API}/instances/{instance_id}/"
    tag = api.runtime.get(url)["ETag"]
    api.respond(api.prompt(instance_id, "recipient_account"), "confirm")
    changed = api.runtime.get(url, HTTP_IF_NONE_MATCH=tag)
    assert changed.status_code == 200
    assert changed.json()["status"] == "ready"
    assert changed["ETag"] != tag
    assert api.runtime.get(url, HTTP_IF_NONE_MATCH=changed["ETag"]).status_code == 304


def test_it_matches_any_tag_of_a_list_weak_or_strong(api: Driver, instance_id: str) -> None:
    url = f"{API}/instances/{instance_id}/"
    tag = api.runtime.get(url)["ETag"]
    assert api.runtime.get(url, HTTP_IF_NONE_MATCH=f'"other", W/{tag}').status_code == 304
    assert api.runtime.get(url, HTTP_IF_NONE_MATCH="*").status_code == 304
    assert api.runtime.get(url, HTTP_IF_NONE_MATCH='"other"').status_code == 200


def test_it_works_for_the_principal_too(api: Driver, instance_id: str) -> None:
    url = f"{API}/instances/{instance_id}/"
    tag = api.person.get(url)["ETag"]
    assert api.person.get(url, HTTP_IF_NONE_MATCH=tag).status_code == 304


def test_a_stranger_gets_404_not_304(
    api: Driver, instance_id: str, person_client: Callable[[User], JsonClient], mallory: User
) -> None:
    url = f"{API}/instances/{instance_id}/"
    tag = api.runtime.get(url)["ETag"]
    response = person_client(mallory).get(url, HTTP_IF_NONE_MATCH=tag)
    assert response.status_code == 404
    assert response.json()["error"] == "not_found"
