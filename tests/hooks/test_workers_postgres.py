"""Two real worker processes on PostgreSQL deliver each of 500 events exactly once."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import pytest
from django.db import connection
from django_tasks_db.models import DBTaskResult

from beliefs.models import RuntimeAPIKey, WebhookDelivery
from beliefs.receiver import Receiver
from beliefs.services import SYSTEM
from beliefs.services.webhooks import endpoint_create, send_test_event

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="needs PostgreSQL: SQLite has no SKIP LOCKED and serialises writers",
    ),
    pytest.mark.django_db(transaction=True),
]

EVENTS = 500
ROOT = Path(__file__).resolve().parents[2]


def _database_url() -> str:
    s = connection.settings_dict
    auth = s["USER"] + (f":{s['PASSWORD']}" if s["PASSWORD"] else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


def test_two_workers_deliver_each_of_500_events_exactly_once(
    runtime_key: tuple[RuntimeAPIKey, str],
) -> None:
    runtime = runtime_key[0].runtime
    # A receiver slow enough that both workers get a share of the queue.
    with Receiver("whsec_" + "A" * 44) as probe:
        port = probe.port
    endpoint, secret = endpoint_create(
        runtime=runtime, url=f"http://127.0.0.1:{port}/hooks", actor=SYSTEM
    )
    for _ in range(EVENTS):
        send_test_event(endpoint=endpoint, actor=SYSTEM)

    def slow(_: object) -> int:
        time.sleep(0.005)
        return 204

    env = {
        **os.environ,
        "DATABASE_URL": _database_url(),
        "CONSOLE_WEBHOOK_ALLOW_PRIVATE": "true",
    }
    command = [
        sys.executable,
        "manage.py",
        "worker",
        "--batch",
        "--no-startup-delay",
        "--interval=0",
        "--sweep-interval=0",
        "--verbosity=0",
    ]
    with Receiver(secret, port=port, answer=slow) as receiver, tempfile.TemporaryFile() as errors:
        workers = [
            subprocess.Popen(
                [*command, f"--worker-id=worker-{n}"],
                cwd=ROOT,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=errors,
            )
            for n in (1, 2)
        ]
        codes = [w.wait(timeout=600) for w in workers]
        errors.seek(0)
        assert codes == [0, 0], errors.read().decode()[-3000:]

    ids = Counter(r.headers["webhook-id"] for r in receiver.received)
    assert len(ids) == EVENTS
    assert set(ids.values()) == {1}  # each event exactly once
    assert all(r.event is not None for r in receiver.received)
    states = Counter(WebhookDelivery.objects.values_list("state", "attempts"))
    assert states == {("succeeded", 1): EVENTS}
    jobs = DBTaskResult.objects.filter(task_path="beliefs.services.webhooks.deliver_webhook")
    assert jobs.count() == EVENTS
    assert all(len(job.worker_ids) == 1 for job in jobs)  # no job was taken twice
    by_worker = Counter(job.worker_ids[0] for job in jobs)
    assert set(by_worker) == {"worker-1", "worker-2"}, by_worker  # both took a share
