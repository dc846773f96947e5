"""Concurrent use for one person and one task class, through real server processes.

gunicorn serves the test database with several worker processes (loopback only, production
settings), and many clients at once open instances, plan them, change their world, read them
and answer their prompts, all for alice and one task class: the mix that deadlocked before
writers locked in one order. No answer may be a server error, and afterwards the data must hold
together: one decision per prompt version, no second active belief for a slot, no ready instance
with an open prompt or a digest that does not match its bindings.
"""

from __future__ import annotations

import http.client
import json
import random
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import requests
from django.contrib.auth.models import User
from django.db import connection
from django.db.models import Count, Q
from django.test import Client
from django.utils.crypto import get_random_string
from rest_framework_api_key.models import APIKey

from beliefs.domain.canonical import bindings_digest
from beliefs.models import Belief, BeliefStatus, Prompt, PromptResponse, PromptState, TaskInstance
from beliefs.services.audit import Actor
from tests.builders import classify, register_task_class
from tests.support.servers import gunicorn_server, production_env

pytestmark = [
    pytest.mark.servers,
    pytest.mark.postgres,
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="needs PostgreSQL and several server processes"
    ),
    pytest.mark.django_db(transaction=True),
]

ROOT = Path(__file__).resolve().parents[2]
CHAINS = 135  # each eight or nine requests: well over 1,000 in all
CLIENTS = 24


@pytest.fixture
def server(db: None) -> Iterator[str]:
    """gunicorn, 4 worker processes with 4 threads each, on the test database."""
    with gunicorn_server(production_env(LOG_LEVEL="WARNING"), workers=4) as base:
        yield base


@pytest.fixture
def callers(alice: User, runtime_key: tuple[APIKey, str]) -> tuple[dict[str, str], dict[str, str]]:
    """The runtime's headers, and alice's (her session cookie and a CSRF token)."""
    task_class = register_task_class(
        key="payments.transfer",
        slots=[
            {"key": "recipient_account"},
            {"key": "amount", "value_type": "number"},
            {"key": "memo"},
        ],
        decisions=[{"key": "send", "slots": ["recipient_account", "amount"]}],
        actor=Actor(key=runtime_key[0]),
    )
    classify(task_class, slots={"memo": "cosmetic"}, decisions={"send": "irreversible"})
    browser = Client()
    browser.force_login(alice)
    token = get_random_string(32)
    person = {
        "Cookie": f"sessionid={browser.cookies['sessionid'].value}; csrftoken={token}",
        "X-CSRFToken": token,
    }
    return {"Authorization": f"Api-Key {runtime_key[1]}"}, person


def _chain(base: str, runtime: dict[str, str], person: dict[str, str], seed: int) -> list[int]:
    """One attempt from open to answers, as a runtime and a person interleave it."""
    rng = random.Random(seed)
    statuses: list[int] = []
    api = f"{base}/api/v1"
    # One connection pool per caller, so that each sends exactly its own credentials.
    sessions = {id(runtime): requests.Session(), id(person): requests.Session()}
    with sessions[id(runtime)], sessions[id(person)]:

        def call(method: str, url: str, headers: dict[str, str], body: Any = None) -> Any:
            http = sessions[id(headers)]
            http.cookies.clear()
            response = http.request(
                method, url, headers=headers, json=body, timeout=60, allow_redirects=False
            )
            statuses.append(response.status_code)
            return response

        opened = call(
            "POST",
            f"{api}/instances/",
            runtime,
            {
                "task_class": "payments.transfer",
                "principal": "alice",
                "world": {"recipient_account": {"holder": "Alice"}},
                "beliefs": [
                    {"slot": "recipient_account", "value": f"DE{seed}", "source": "tool"},
                    {"slot": "amount", "value": seed, "source": "tool"},
                ],
            },
        )
        if opened.status_code != 201:
            return statuses
        instance = f"{api}/instances/{opened.json()['id']}/"
        call("POST", f"{instance}plan/", runtime)
        call(
            "PUT",
            f"{instance}world/",
            runtime,
            {"world": {"recipient_account": {"holder": rng.choice(["Alice", "Bob"])}}},
        )
        call("POST", f"{instance}plan/", runtime)
        seen = call("GET", instance, person)
        if seen.status_code != 200:
            return statuses
        for prompt in seen.json()["prompts"]:
            if prompt["state"] != "open":
                continue
            if prompt["route"] == "SURFACED":
                body: dict[str, Any] = {"action": "veto", "version": prompt["version"]}
            elif prompt["route"] == "ASK":
                value = seed if prompt["slot"] == "amount" else f"typed-{seed}"
                body = {"action": "answer", "version": prompt["version"], "value": value}
                body["value_confirmation"] = value  # typed twice, as any change may need
            else:
                body = {"action": rng.choice(["confirm", "confirm", "reject"])}
                body["version"] = prompt["version"]
            call("POST", f"{api}/prompts/{prompt['id']}/respond/", person, body)
        if rng.random() < 0.3:
            call("POST", f"{instance}cancel/", runtime, {"reason": "changed plans"})
        call("GET", instance, runtime)
    return statuses


def test_it_answers_no_server_error_to_concurrent_use_by_one_person(
    server: str, callers: tuple[dict[str, str], dict[str, str]]
) -> None:
    runtime, person = callers
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=CLIENTS) as pool:
        results = list(pool.map(lambda i: _chain(server, runtime, person, i), range(CHAINS)))
    elapsed = time.monotonic() - started

    statuses = Counter(status for chain in results for status in chain)
    assert sum(statuses.values()) >= 1000, statuses
    assert not [s for s in statuses if s >= 500], statuses
    assert statuses[201] == CHAINS, statuses  # every open went through

    # One decision per prompt version, and every decision that took a value wrote one belief.
    assert not (
        PromptResponse.objects.values("prompt", "version").annotate(n=Count("id")).filter(n__gt=1)
    )
    assert not PromptResponse.objects.filter(
        action__in=["confirm", "edit", "answer"], belief__isnull=True
    ).exists()
    # No orphan belief: at most one active belief per slot of an instance.
    assert not (
        Belief.objects.filter(status=BeliefStatus.ACTIVE)
        .values("instance", "slot")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
    )
    # No ready instance with an open blocking prompt, and every digest matches its bindings.
    assert not TaskInstance.objects.filter(
        status="ready", prompts__state=PromptState.OPEN, prompts__blocking=True
    ).exists()
    for instance in TaskInstance.objects.filter(status="ready"):
        assert instance.bindings_digest == bindings_digest(instance.bindings), instance.pk
    assert not TaskInstance.objects.filter(~Q(status__in=["ready"]), ~Q(bindings=None)).exists()
    runs = sorted(TaskInstance.objects.values_list("run_number", flat=True))
    assert runs == list(range(1, CHAINS + 1))
    assert Prompt.objects.filter(state=PromptState.ANSWERED).exists()
    # A loose bound, for a shared machine: the point is that nobody waits on a deadlock timeout.
    assert elapsed < 90, (elapsed, statuses)


def test_it_reads_a_chunked_body_through_gunicorn(
    server: str, callers: tuple[dict[str, str], dict[str, str]]
) -> None:
    runtime, _ = callers
    opened = requests.post(
        f"{server}/api/v1/instances/",
        headers=runtime,
        json={"task_class": "payments.transfer", "principal": "alice"},
        timeout=30,
    )
    assert opened.status_code == 201, opened.text
    host, port = server.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    body = iter([b'{"reason": ', b'"sent in chunks"}'])
    conn.request(
        "POST",
        f"/api/v1/instances/{opened.json()['id']}/cancel/",
        body=body,
        headers={**runtime, "Content-Type": "application/json"},
        encode_chunked=True,
    )
    response = conn.getresponse()
    answer = json.loads(response.read())
    assert response.status == 200, answer
    assert answer["status_reason"] == "sent in chunks"
