"""M-of-N approval under real concurrency: 50 approvers of one action approve at the
same moment through two uvicorn processes on PostgreSQL. The database decides: the instance's
row lock queues them and one row per (instance, digest, person) counts each once, so exactly
the first k are recorded, exactly one of them makes the instance ready, the rest are told it is
ready already (409), and nobody sees a 5xx."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import jwt
import pytest
import requests
from django.contrib.auth.models import Group, User
from django.db import connection
from rest_framework_api_key.models import APIKey

from beliefs.models import Approval, AuditEvent, Decision, Receipt, TaskInstance, WebhookEvent
from beliefs.services.audit import Actor
from tests.builders import classify, register_task_class
from tests.conftest import PASSWORD
from tests.support.servers import session_headers, uvicorn_servers

pytestmark = [
    pytest.mark.servers,
    pytest.mark.postgres,
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="needs PostgreSQL: real row locks across server processes decide the race",
    ),
    pytest.mark.django_db(transaction=True),
]

APPROVERS = 50
REQUIRED = 25


@pytest.fixture
def servers(db: None) -> Iterator[list[str]]:
    """Two uvicorn processes (one event loop each) on the test database."""
    with uvicorn_servers(2, LOG_LEVEL="WARNING") as bases:
        yield bases


def test_fifty_racing_approvals_give_exactly_one_ready_and_no_5xx(
    servers: list[str], runtime_key: tuple[APIKey, str], alice: User
) -> None:
    group = Group.objects.create(name="board")
    people = []
    for i in range(APPROVERS):
        person = User.objects.create_user(username=f"approver{i:02}", password=PASSWORD)
        person.groups.add(group)
        people.append(person)
    task_class = register_task_class(
        key="treasury.payout",
        slots=[{"key": "iban"}],
        decisions=[{"key": "pay", "slots": ["iban"]}],
        actor=Actor(key=runtime_key[0]),
    )
    classify(task_class, slots={"iban": "irreversible"}, decisions={"pay": "irreversible"})
    Decision.objects.filter(key="pay").update(approvals_required=REQUIRED, approvers=group)
    runtime = {"Authorization": f"Api-Key {runtime_key[1]}"}
    opened = requests.post(
        f"{servers[0]}/api/v1/instances/",
        json={
            "task_class": "treasury.payout",
            "principal": "alice",
            "beliefs": [{"slot": "iban", "value": "DE89", "source": "tool"}],
        },
        headers=runtime,
        timeout=30,
    )
    assert opened.status_code == 201, opened.text
    instance_id = opened.json()["id"]
    assert requests.post(
        f"{servers[0]}/api/v1/instances/{instance_id}/plan/", headers=runtime, timeout=30
    ).ok
    alice_headers = session_headers(alice)
    read = requests.get(
        f"{servers[1]}/api/v1/instances/{instance_id}/", headers=alice_headers, timeout=30
    ).json()
    (prompt,) = [p for p in read["prompts"] if p["blocking"]]
    confirmed = requests.post(
        f"{servers[1]}/api/v1/prompts/{prompt['id']}/respond/",
        json={"action": "confirm", "version": prompt["version"]},
        headers=alice_headers,
        timeout=30,
    )
    assert confirmed.status_code == 200, confirmed.text
    waiting = requests.get(
        f"{servers[0]}/api/v1/instances/{instance_id}/", headers=runtime, timeout=30
    ).json()
    assert waiting["status"] == "awaiting_approval"
    assert waiting["quorum"]["missing"] == REQUIRED
    digest, worlds = waiting["bindings_digest"], waiting["worlds_digest"]

    headers = [session_headers(p) for p in people]
    start = threading.Barrier(APPROVERS)

    def approve(i: int) -> tuple[int, Any]:
        start.wait(timeout=60)
        response = requests.post(
            f"{servers[i % 2]}/api/v1/instances/{instance_id}/approval/",
            json={"action": "approve", "bindings_digest": digest, "worlds_digest": worlds},
            headers=headers[i],
            timeout=120,
        )
        return response.status_code, response.json()

    with ThreadPoolExecutor(max_workers=APPROVERS) as pool:
        answers = list(pool.map(approve, range(APPROVERS)))

    codes = [code for code, _ in answers]
    assert all(code < 500 for code in codes), codes
    assert codes.count(200) == REQUIRED, codes
    assert codes.count(409) == APPROVERS - REQUIRED, codes
    assert {body["error"] for code, body in answers if code == 409} == {"instance_ready"}
    instance = TaskInstance.objects.get(pk=instance_id)
    assert instance.status == "ready"
    assert Approval.objects.filter(instance=instance, bindings_digest=digest).count() == REQUIRED
    assert WebhookEvent.objects.filter(instance=instance, type="instance.ready").count() == 1
    assert Receipt.objects.filter(instance=instance).count() == 1
    ready_plans = AuditEvent.objects.filter(
        instance_id=instance.pk, kind="instance.planned", data__status="ready"
    )
    assert ready_plans.count() == 1
    claims = jwt.decode(instance.receipt.token, options={"verify_signature": False})
    approvers = [a["by"] for a in claims["quorum"]["approvers"]]
    assert len(approvers) == len(set(approvers)) == REQUIRED
    assert {a["bindings_digest"] for a in claims["quorum"]["approvers"]} == {digest}
