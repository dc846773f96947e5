"""Two app servers on one database, as a company runs them behind a load balancer: two
`make serve` instances (`console.serve`, two processes each) on ports of their own and two
`manage.py worker` processes. A person answering on one server wakes an agent waiting on the
other, and every webhook event arrives exactly once, whichever worker claimed it."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator

import pytest
import requests
from django.contrib.auth.models import User
from django.db import connection
from rest_framework_api_key.models import APIKey

from beliefs.models import WebhookDelivery, WebhookEvent
from beliefs.services.audit import Actor
from tests.builders import classify, register_task_class
from tests.servers.outbound.test_outbox_postgres import wait_for, workers
from tests.support.outbound import receiver_endpoint
from tests.support.servers import (
    ROOT,
    free_port,
    long_poll,
    production_env,
    session_headers,
    static_files_collected,
    wait_until_up,
)

pytestmark = [
    pytest.mark.servers,
    pytest.mark.postgres,
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="needs PostgreSQL: its NOTIFY reaches the other server, and SKIP LOCKED the"
        " other worker",
    ),
    pytest.mark.django_db(transaction=True),
]

INSTANCES = 8


@contextlib.contextmanager
def make_serve_instances(count: int) -> Iterator[list[str]]:
    """`count` instances of `make serve` (`console.serve`, two processes each, production
    settings) on ports of their own, on the test database; their base URLs once each answers."""
    env = production_env(DATABASE_POOL="4", CONSOLE_WEBHOOK_ALLOW_PRIVATE="true")
    processes: list[subprocess.Popen[bytes]] = []
    bases = []
    try:
        with static_files_collected(env):
            for _ in range(count):
                port = free_port()
                command = [sys.executable, "-m", "console.serve", "--host", "127.0.0.1",
                           "--port", str(port), "--workers", "2",
                           "--log-level", "warning"]  # fmt: skip
                processes.append(
                    subprocess.Popen(
                        command,
                        cwd=ROOT,
                        env=env,
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.PIPE,
                    )  # fmt: skip
                )
                bases.append(f"http://127.0.0.1:{port}")
            for base, process in zip(bases, processes, strict=True):
                wait_until_up(base, process=process)
            yield bases
    finally:
        for process in processes:
            if process.poll() is None:
                process.terminate()
        for process in processes:
            _, errors = process.communicate(timeout=60)
            assert b"Traceback" not in errors, errors.decode()[-3000:]


def _answer_wakes_agent(
    agent_on: str, person_on: str, runtime: dict[str, str], person: dict[str, str], n: int
) -> float:
    """An instance opened on `agent_on`, whose agent waits there for it, answered by the
    person on `person_on`: the seconds from the answer to the agent's wait returning."""
    opened = requests.post(
        f"{agent_on}/api/v1/instances/",
        json={
            "task_class": "payments.transfer",
            "principal": "alice",
            "beliefs": [{"slot": "recipient_account", "value": f"DE{n}", "source": "tool"}],
        },
        headers=runtime,
        timeout=30,
    )
    assert opened.status_code == 201, opened.text
    path = f"/api/v1/instances/{opened.json()['id']}/"
    planned = requests.post(f"{agent_on}{path}plan/", headers=runtime, timeout=30)
    assert planned.ok, planned.text
    read = requests.get(f"{agent_on}{path}", headers=runtime, timeout=30)
    assert read.json()["status"] == "awaiting_user"
    tag = read.headers["ETag"]
    waiter, answers = long_poll(f"{agent_on}{path}", runtime, tag)
    try:
        # The agent's server has taken the wait in (a later request to it was answered).
        assert requests.get(f"{agent_on}/healthz", timeout=30).ok
        assert not answers, "answered before anything changed"
        mine = requests.get(f"{person_on}{path}", headers=person, timeout=30).json()
        (prompt,) = [p for p in mine["prompts"] if p["blocking"]]
        answered = requests.post(
            f"{person_on}/api/v1/prompts/{prompt['id']}/respond/",
            json={"action": "confirm", "version": prompt["version"]},
            headers=person,
            timeout=30,
        )
        assert answered.status_code == 200, answered.text
        answered_at = time.monotonic()
        wait_for(lambda: bool(answers), what="the agent's wait to return")
    finally:
        waiter.join(60)
    ((response, returned_at),) = answers
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "ready"
    assert response.headers["Preference-Applied"] == "wait=30"
    return returned_at - answered_at


def test_an_answer_on_one_server_wakes_an_agent_on_the_other_and_each_event_arrives_once(
    runtime_key: tuple[APIKey, str], alice: User
) -> None:
    task_class = register_task_class(
        key="payments.transfer",
        slots=[{"key": "recipient_account"}],
        decisions=[{"key": "send", "slots": ["recipient_account"]}],
        actor=Actor(key=runtime_key[0]),
    )
    classify(task_class, decisions={"send": "irreversible"})
    runtime = {"Authorization": f"Api-Key {runtime_key[1]}"}
    person = session_headers(alice)
    endpoint, receiver = receiver_endpoint(runtime_key[0].runtime)
    env = {"CONSOLE_WEBHOOK_ALLOW_PRIVATE": "true"}
    with receiver, make_serve_instances(2) as bases, workers(env, count=2):
        woken = [
            # The agent opens and waits on one server; the person answers on the other.
            _answer_wakes_agent(bases[n % 2], bases[1 - n % 2], runtime, person, n)
            for n in range(INSTANCES)
        ]

        # Every event the two servers wrote reaches the receiver through one of the two workers.
        expected = set(
            WebhookEvent.objects.filter(deliveries__endpoint=endpoint).values_list(
                "webhook_id", flat=True
            )
        )
        assert len(expected) >= 2 * INSTANCES  # at least ready and one more per instance

        def all_arrived() -> bool:
            return {r.headers.get("webhook-id") for r in receiver.received} >= expected

        wait_for(all_arrived, what="every event to arrive")
        # A moment for a second copy to show up, were one on its way: every delivery is done.
        wait_for(
            lambda: (
                not WebhookDelivery.objects.exclude(state=WebhookDelivery.State.SUCCEEDED).exists()
            ),
            what="every delivery to be recorded as done",
        )
    times = Counter(r.headers.get("webhook-id") for r in receiver.received)
    assert all(r.event is not None for r in receiver.received), "a signature failed"
    assert set(times) == expected
    assert max(times.values()) == 1, [k for k, v in times.items() if v > 1]
    ready = [e for e in receiver.events() if e["type"] == "instance.ready"]
    assert len(ready) == INSTANCES
    # Woken by the other server's change, not by the wait's end (30 s).
    assert max(woken) < 2.0, woken
    assert sorted(woken)[len(woken) // 2] < 0.5, woken
