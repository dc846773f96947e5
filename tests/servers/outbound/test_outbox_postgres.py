"""Real worker processes on PostgreSQL against misbehaving peers: a receiver dripping its
answer, one cutting it off after the status line, and an SMTP server whose sender is killed
(-9) in the middle of DATA. Leases and deadlines are made small through the environment."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import pytest
from django.contrib.auth.models import User
from django.db import connection

from beliefs.models import OutgoingEmail, RuntimeAPIKey, WebhookDelivery
from beliefs.services.audit import SYSTEM, Actor
from beliefs.services.webhooks.endpoints import endpoint_create
from beliefs.services.webhooks.events import send_test_event
from tests.conftest import runtime_key_of
from tests.support.fake_servers import CutServer, DripServer, SmtpServer
from tests.support.outbound import open_transfer, receiver_endpoint
from tests.support.servers import database_url

pytestmark = [
    pytest.mark.servers,
    pytest.mark.postgres,
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="needs PostgreSQL: SQLite has no SKIP LOCKED and serialises writers",
    ),
    pytest.mark.django_db(transaction=True),
]

ROOT = Path(__file__).resolve().parents[3]
DEADLINE = 3  # seconds, for one webhook attempt
LEASE = 5


def wait_for(done: Callable[[], object], timeout: float = 30.0, what: str = "it") -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"waited {timeout} s for {what}"
        time.sleep(0.05)


@contextmanager
def workers(
    env: dict[str, str], count: int = 2, extra: list[str] | None = None
) -> Iterator[dict[str, subprocess.Popen[bytes]]]:
    """`count` real `manage.py worker` processes, sweeping every 0.3 s; stopped afterwards."""
    command = [
        sys.executable,
        "manage.py",
        "worker",
        "--no-startup-delay",
        "--interval=0.1",
        "--sweep-interval=0.3",
        "--verbosity=0",
    ]
    full_env = {**os.environ, "DATABASE_URL": database_url(), **env}
    logs: list[IO[bytes]] = []
    started: dict[str, subprocess.Popen[bytes]] = {}
    try:
        for n in range(1, count + 1):
            log = tempfile.TemporaryFile()  # noqa: SIM115 - closed below, after reading
            logs.append(log)
            started[f"worker-{n}"] = subprocess.Popen(
                [*command, *(extra or []), f"--worker-id=worker-{n}"],
                cwd=ROOT,
                env=full_env,
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        yield started
    finally:
        for process in started.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in started.values():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for log in logs:
            log.seek(0)
            text = log.read().decode(errors="replace")
            assert "Traceback" not in text or "KeyboardInterrupt" in text, text[-3000:]
            log.close()


def test_a_dripping_and_a_cut_off_receiver_hold_no_other_tenant_and_no_lease(
    runtime_key: tuple[RuntimeAPIKey, str],
) -> None:
    slow_runtime = runtime_key[0].runtime
    other_runtime = runtime_key_of("billing-agent")[0].runtime
    drip, cut = DripServer(interval=1.0), CutServer(b"HTTP/1.1 200 OK\r\n")
    dripping = endpoint_create(runtime=slow_runtime, url=drip.url, actor=SYSTEM)[0]
    cut_off = endpoint_create(runtime=slow_runtime, url=cut.url, actor=SYSTEM)[0]
    received_at: list[float] = []
    theirs, rx = receiver_endpoint(
        other_runtime, on_event=lambda _: received_at.append(time.monotonic())
    )
    env = {
        "CONSOLE_WEBHOOK_ALLOW_PRIVATE": "true",
        "CONSOLE_WEBHOOK_TIMEOUT_SECONDS": str(DEADLINE),
        "CONSOLE_WEBHOOK_LEASE_SECONDS": str(LEASE),
        "CONSOLE_WEBHOOK_MAX_IN_FLIGHT_PER_RUNTIME": "1",
        "CONSOLE_WEBHOOK_RETRY_SECONDS": "1,1,1",
    }
    with rx, workers(env):
        send_test_event(endpoint=theirs, actor=SYSTEM)
        wait_for(lambda: len(rx.received) == 1, what="the workers to start")
        send_test_event(endpoint=dripping, actor=SYSTEM)
        send_test_event(endpoint=cut_off, actor=SYSTEM)
        wait_for(lambda: drip.connections, what="the dripping delivery to start")
        sent_at = time.monotonic()
        send_test_event(endpoint=theirs, actor=SYSTEM)
        wait_for(lambda: len(rx.received) == 2, what="the other tenant's delivery")
        # While the dripping delivery holds a worker, the other tenant's arrives in its own time.
        assert received_at[1] - sent_at < DEADLINE
        # Wait for the dripping delivery's second attempt (after its deadline and a retry delay).
        wait_for(lambda: len(drip.connections) >= 2 and drip.connections[0][1], what="a retry")
        slow = WebhookDelivery.objects.get(endpoint=dripping)
        cut_off_id = WebhookDelivery.objects.get(endpoint=cut_off).pk
        wait_for(
            lambda: "IncompleteResponse" in WebhookDelivery.objects.get(pk=cut_off_id).last_error,
            what="the cut-off delivery's failure",
        )
    first, second = drip.connections[:2]
    assert DEADLINE - 0.5 <= first[1] - first[0] <= DEADLINE + 0.5  # the deadline held
    assert second[0] >= first[1]  # no second attempt while the first ran
    assert drip.most_open == 1
    slow.refresh_from_db()
    assert slow.state != "succeeded" and slow.delivered_at is None
    assert slow.last_error.startswith("DeadlineExceeded") or slow.state == "sending"
    cut_delivery = WebhookDelivery.objects.get(endpoint=cut_off)
    assert cut_delivery.state in ("pending", "sending", "failed")
    assert cut_delivery.delivered_at is None and cut_delivery.last_status_code is None
    drip.close()
    cut.close()


def test_an_email_whose_worker_is_killed_during_data_arrives_once_after_the_lease(
    rt: Actor, alice_with_email: User
) -> None:
    smtp = SmtpServer()
    smtp.hold.set()
    env = {
        "EMAIL_HOST": "127.0.0.1",
        "EMAIL_PORT": str(smtp.port),
        "EMAIL_USE_TLS": "false",
        "CONSOLE_EMAIL_DEADLINE_SECONDS": "4",
        "CONSOLE_EMAIL_LEASE_SECONDS": str(LEASE),
    }
    instance = open_transfer(rt)
    try:
        with workers(env) as started:
            wait_for(smtp.in_data.is_set, what="a worker to reach DATA")
            claimed = OutgoingEmail.objects.get()
            assert claimed.state == "sending"
            killed, claimed_at = claimed.claimed_by, claimed.last_attempt_at
            smtp.hold.clear()
            started[killed].send_signal(signal.SIGKILL)
            wait_for(lambda: OutgoingEmail.objects.get().state == "sent", what="the email")
    finally:
        smtp.close()
    assert smtp.dropped == 1  # the killed attempt never got its 250
    (message,) = smtp.accepted  # exactly once
    assert f"/instances/{instance.pk}/".encode() in message
    assert b"NL91ABNA0417164300" not in message
    email = OutgoingEmail.objects.get()
    assert email.attempts == 2
    # The other worker sent it, after the sweep took it up ("the worker stopped" is recorded
    # until the attempt that succeeded clears it).
    assert email.claimed_by in started and email.claimed_by != killed
    assert email.sent_at is not None and claimed_at is not None
    assert (email.sent_at - claimed_at).total_seconds() >= LEASE  # taken up after the lease


def test_instances_starting_to_wait_at_once_join_one_email(
    rt: Actor, alice_with_email: User
) -> None:
    import threading

    from django.db import connections

    from tests.builders import transfer

    transfer(rt)
    barrier = threading.Barrier(6)
    errors: list[BaseException] = []

    def open_one() -> None:
        try:
            barrier.wait(timeout=30)
            open_transfer(rt)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=open_one) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    (email,) = OutgoingEmail.objects.all()  # one email, not one per transaction
    assert email.notifications.count() == 6
