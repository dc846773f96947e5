"""The database drops every connection, again and again, during a burst of requests.

gunicorn serves the test database with two worker processes that keep their connections
(`DATABASE_CONN_MAX_AGE=60`, production settings). While clients read instances, answer prompts
and load pages, another connection terminates every other backend of the database
(`pg_terminate_backend`), as an administrator, a failover or a restart would. No answer may be
a 500: only 2xx, the normal 4xx, or 503 with Retry-After. Nothing answered 2xx may be lost, and
once the cuts stop every process answers again (a dead connection does not poison the next
request).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
import requests
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.utils.crypto import get_random_string
from rest_framework_api_key.models import APIKey

from beliefs.models import Prompt, PromptResponse
from beliefs.services.audit import Actor
from beliefs.services.planning import instance_plan
from tests.builders import classify, open_instance, register_task_class
from tests.support.servers import (
    database_url,
    gunicorn_server,
    production_env,
    static_files_collected,
)

pytestmark = [
    pytest.mark.servers,
    pytest.mark.postgres,
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="needs PostgreSQL (pg_terminate_backend) and real server processes",
    ),
    pytest.mark.django_db(transaction=True),
]

ROOT = Path(__file__).resolve().parents[2]
INSTANCES = 20  # two CONFIRM prompts each
CLIENTS = 8
REQUESTS_EACH = 90
CUTS = 6
TERMINATE = (
    "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity "
    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
)


@pytest.fixture
def server(db: None) -> Iterator[str]:
    """gunicorn, 2 worker processes with 4 threads each, keeping their connections."""
    env = production_env(DATABASE_CONN_MAX_AGE="60", LOG_LEVEL="ERROR")
    # Production settings serve static files by their manifest, which the pages need.
    with static_files_collected(env), gunicorn_server(env, workers=2, errors_expected=True) as base:
        yield base


@dataclass(frozen=True)
class Callers:
    runtime: dict[str, str]
    person: dict[str, str]
    instances: list[str]
    prompts: list[tuple[int, int]]  # (id, version)


@pytest.fixture
def callers(alice: User, runtime_key: tuple[APIKey, str]) -> Callers:
    actor = Actor(key=runtime_key[0])
    task_class = register_task_class(
        key="payments.transfer",
        slots=[{"key": "recipient_account"}, {"key": "amount", "value_type": "number"}],
        decisions=[{"key": "send", "slots": ["recipient_account", "amount"]}],
        actor=actor,
    )
    classify(task_class, decisions={"send": "irreversible"})
    instances = []
    for n in range(INSTANCES):
        instance = open_instance(
            task_class_key="payments.transfer",
            principal="alice",
            beliefs=[
                {"slot": "recipient_account", "value": f"DE{n}", "source": "tool"},
                {"slot": "amount", "value": n, "source": "tool"},
            ],
            actor=actor,
        )
        instance_plan(instance=instance, actor=actor)
        instances.append(str(instance.pk))
    prompts = list(Prompt.objects.filter(route="CONFIRM").values_list("pk", "version"))
    assert len(prompts) == 2 * INSTANCES
    browser = Client()
    browser.force_login(alice)
    token = get_random_string(32)
    person = {
        "Cookie": f"sessionid={browser.cookies['sessionid'].value}; csrftoken={token}",
        "X-CSRFToken": token,
    }
    return Callers({"Authorization": f"Api-Key {runtime_key[1]}"}, person, instances, prompts)


@dataclass(frozen=True)
class Answer:
    kind: str
    status: int
    retry_after: str | None
    prompt: int | None = None


class Progress:
    """How many requests have been answered, for the cutter to wait on."""

    def __init__(self) -> None:
        self.done = 0
        self.condition = threading.Condition()

    def add(self) -> None:
        with self.condition:
            self.done += 1
            self.condition.notify_all()

    def wait_for(self, count: int, timeout: float) -> bool:
        with self.condition:
            return self.condition.wait_for(lambda: self.done >= count, timeout=timeout)


def _client(base: str, who: Callers, seed: int, progress: Progress, count: int) -> list[Answer]:
    """`count` requests of one client, in turn: the runtime's read, the person's read, an
    answer (confirm), the inbox page and an instance page."""
    answers: list[Answer] = []
    api = f"{base}/api/v1"
    with requests.Session() as http:

        def call(
            kind: str, method: str, url: str, headers: dict[str, str], prompt: int | None = None
        ) -> None:
            http.cookies.clear()  # each request sends exactly its caller's credentials
            body = None if prompt is None else {"action": "confirm", "version": versions[prompt]}
            response = http.request(
                method, url, headers=headers, json=body, timeout=60, allow_redirects=False
            )
            answers.append(
                Answer(kind, response.status_code, response.headers.get("Retry-After"), prompt)
            )
            progress.add()

        versions = dict(who.prompts)
        for n in range(count):
            instance = who.instances[(seed + n) % len(who.instances)]
            prompt = who.prompts[(seed * 7 + n) % len(who.prompts)][0]
            step = (seed + n) % 5
            if step == 0:
                call("read", "GET", f"{api}/instances/{instance}/", who.runtime)
            elif step == 1:
                call("person read", "GET", f"{api}/instances/{instance}/", who.person)
            elif step == 2:
                call("respond", "POST", f"{api}/prompts/{prompt}/respond/", who.person, prompt)
            elif step == 3:
                call("inbox page", "GET", f"{base}/", who.person)
            else:
                call("instance page", "GET", f"{base}/instances/{instance}/", who.person)
    return answers


def _cut(progress: Progress, total: int) -> list[int]:
    """Terminate every other backend of the database each time another share of the burst has
    been answered; returns how many backends each cut ended."""
    ended = []
    with psycopg.connect(
        database_url().replace("postgres://", "postgresql://"), autocommit=True
    ) as cutter:
        for cut in range(1, CUTS + 1):
            if not progress.wait_for(total * cut // (CUTS + 1), timeout=120):
                break
            row = cutter.execute(TERMINATE).fetchone()
            ended.append(int(row[0]) if row else 0)
    return ended


def test_no_request_fails_with_a_500_while_connections_are_cut(
    server: str, callers: Callers
) -> None:
    progress = Progress()
    total = CLIENTS * REQUESTS_EACH
    cutter_result: list[list[int]] = []
    cutter = threading.Thread(target=lambda: cutter_result.append(_cut(progress, total)))
    cutter.start()
    with ThreadPoolExecutor(max_workers=CLIENTS) as pool:
        runs = list(
            pool.map(lambda i: _client(server, callers, i, progress, REQUESTS_EACH), range(CLIENTS))
        )
    cutter.join(timeout=120)
    assert not cutter.is_alive()
    # The cuts ended this test's own connection too: open a new one for the checks.
    connection.close()

    answers = [a for run in runs for a in run]
    statuses = Counter((a.kind, a.status) for a in answers)
    (ended,) = cutter_result
    assert len(ended) == CUTS and sum(ended) > 0, ended  # the cuts happened, and ended backends
    assert not [a for a in answers if a.status >= 500 and a.status != 503], statuses
    assert all(a.retry_after for a in answers if a.status == 503), statuses
    assert {a.status for a in answers} <= {200, 304, 400, 403, 404, 409, 503}, statuses
    assert sum(1 for a in answers if a.status == 200) > total // 2, statuses

    # Nothing answered 2xx is lost: every confirm that succeeded is recorded.
    confirmed = {a.prompt for a in answers if a.kind == "respond" and a.status == 200}
    recorded = set(
        PromptResponse.objects.filter(action="confirm", belief__isnull=False).values_list(
            "prompt_id", flat=True
        )
    )
    assert confirmed and confirmed <= recorded, (confirmed - recorded, statuses)

    # The cuts are over: every worker thread answers again, on a new connection.
    after = _client(server, callers, 0, Progress(), 40)
    assert {a.status for a in after} <= {200, 409}, Counter((a.kind, a.status) for a in after)
