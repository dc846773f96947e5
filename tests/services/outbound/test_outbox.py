"""Deliveries on the outbox machine, in one process: errors on either side of the connection
are recorded and retried to `failed`; IRIs; the caps; bad stored rows; deleting an endpoint.
(The PostgreSQL file runs the same against real worker processes.)"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import ImproperlyConfigured
from django.test import Client, override_settings
from django.utils import timezone

from beliefs.models import WebhookDelivery, WebhookEndpoint, WebhookEvent
from beliefs.net import Outcome
from beliefs.services.audit import SYSTEM, Actor
from beliefs.services.webhooks.delivery import _finish, deliveries_resume
from beliefs.services.webhooks.endpoints import endpoint_create, endpoint_delete
from beliefs.services.webhooks.events import send_test_event
from console.settings import lease_longer_than_deadline
from demo.receiver import Receiver
from tests.builders import transfer
from tests.conftest import JsonClient, runtime_key_of
from tests.support.fake_servers import CutServer
from tests.support.outbound import API, open_transfer, run_worker, work_until

Pending, Sending = "pending", "sending"
ROOT = Path(__file__).resolve().parents[3]


def _failed() -> bool:
    return WebhookDelivery.objects.filter(state=WebhookDelivery.State.FAILED).exists()


# --- failures on either side of the connection ---------------------------------------------


def test_a_reply_cut_after_the_status_line_is_a_failed_attempt(
    endpoint: tuple[dict[str, Any], Any], rt: Actor
) -> None:
    _, receiver = endpoint
    receiver.stop()
    with CutServer(b"HTTP/1.1 200 OK\r\n") as cut:
        WebhookEndpoint.objects.update(url=cut.url)
        open_transfer(rt)
        run_worker()
        delivery = WebhookDelivery.objects.get()
        # As below: with 0.05 s retries a slow machine may have run more attempts already.
        assert delivery.state != Sending and delivery.attempts >= 1
        assert delivery.delivered_at is None
        assert "IncompleteResponse" in delivery.last_error
        work_until(_failed)
    delivery.refresh_from_db()
    assert delivery.attempts == 13 and delivery.last_status_code is None


def test_a_stored_url_that_is_not_ascii_fails_its_retries_instead_of_sticking(
    endpoint: tuple[dict[str, Any], Receiver], rt: Actor
) -> None:
    """The delivery existed before the row was changed (by hand, or before IRIs were
    encoded): the error is recorded at each attempt and the schedule ends in `failed`."""
    _, receiver = endpoint
    open_transfer(rt)
    WebhookEndpoint.objects.update(url=f"http://127.0.0.1:{receiver.port}/hooks/é")
    run_worker()
    delivery = WebhookDelivery.objects.get()
    # Retries are 0.05 s apart here: on a slow machine the same batch may already have run the
    # next ones, so what holds is that attempts were made and none is left sending.
    assert delivery.state != Sending and delivery.attempts >= 1
    assert "UnicodeEncodeError" in delivery.last_error
    work_until(_failed)
    assert receiver.received == []


def test_an_error_before_connecting_is_recorded_and_retried(
    endpoint: tuple[dict[str, Any], Receiver], rt: Actor
) -> None:
    open_transfer(rt)
    with mock.patch(
        "beliefs.services.webhooks.delivery.resolve", side_effect=RuntimeError("resolver")
    ):
        run_worker()
        delivery = WebhookDelivery.objects.get()
        assert delivery.state != Sending and delivery.attempts >= 1  # as above: fast retries
        assert delivery.last_error == "RuntimeError: resolver"
        work_until(_failed)
    assert not WebhookDelivery.objects.filter(state=Sending).exists()


def test_an_iri_is_stored_percent_encoded(runtime: JsonClient) -> None:
    response = runtime.post_json(
        f"{API}/webhook-endpoints/", {"url": "https://8.8.8.8/hooks/é?q=ü"}
    )
    assert response.status_code == 201, response.json()
    assert response.json()["url"] == "https://8.8.8.8/hooks/%C3%A9?q=%C3%BC"
    assert WebhookEndpoint.objects.get().url == "https://8.8.8.8/hooks/%C3%A9?q=%C3%BC"


# --- leases and the sweep ----------------------------------------------------------------


def test_a_delivery_whose_worker_died_is_taken_up_after_its_lease_only(
    endpoint: tuple[dict[str, Any], Receiver], rt: Actor
) -> None:
    _, receiver = endpoint
    open_transfer(rt)
    now = timezone.now()
    # A worker claimed it and died: sending, its lease running.
    WebhookDelivery.objects.update(
        state=Sending, attempts=1, lease_until=now + timedelta(seconds=120), last_attempt_at=now
    )
    assert deliveries_resume(now=now) == 0  # the lease still runs: no second attempt
    WebhookDelivery.objects.update(lease_until=now - timedelta(seconds=1))
    assert deliveries_resume() == 1
    delivery = WebhookDelivery.objects.get()
    assert (delivery.state, delivery.attempts) == (Pending, 1)
    assert "lease ran out" in delivery.last_error
    run_worker()
    delivery.refresh_from_db()
    assert (delivery.state, delivery.attempts) == ("succeeded", 2)
    assert len(receiver.received) == 1


def test_an_attempt_that_outlived_its_lease_cannot_overwrite_the_next_one(
    endpoint: tuple[dict[str, Any], Receiver], rt: Actor
) -> None:
    open_transfer(rt)
    run_worker()
    delivery = WebhookDelivery.objects.get()
    assert delivery.state == "succeeded"
    # A stale attempt (attempt 0, long gone) finishing late changes nothing.
    delivery.attempts = 0
    delivery.state = Sending
    assert "finished elsewhere" in _finish(delivery, Outcome(None, "", "late"))
    assert WebhookDelivery.objects.get().state == "succeeded"


@pytest.mark.parametrize(
    ("lease", "deadline", "ok"),
    [(120, 5, True), (6, 5, True), (5, 5, False), (4, 5, False), (10, 0, False), (0, 0, False)],
)
def test_settings_refuse_a_lease_not_longer_than_the_deadline(
    lease: float, deadline: float, ok: bool
) -> None:
    if ok:
        lease_longer_than_deadline("X", lease, deadline)
    else:
        with pytest.raises(ImproperlyConfigured, match="must be longer than the deadline"):
            lease_longer_than_deadline("X", lease, deadline)


@pytest.mark.servers
@pytest.mark.parametrize("prefix", ["CONSOLE_WEBHOOK", "CONSOLE_EMAIL"])
def test_the_console_does_not_start_with_such_a_lease(prefix: str) -> None:
    deadline = "TIMEOUT" if prefix == "CONSOLE_WEBHOOK" else "DEADLINE"
    env = {**os.environ, f"{prefix}_LEASE_SECONDS": "5", f"{prefix}_{deadline}_SECONDS": "5"}
    done = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert f"{prefix}_LEASE_SECONDS" in done.stderr and "longer than the deadline" in done.stderr


# --- caps ----------------------------------------------------------------------------------


def test_a_runtime_has_at_most_the_cap_of_endpoints(runtime: JsonClient) -> None:
    from django.conf import settings

    assert settings.CONSOLE_WEBHOOK_MAX_ENDPOINTS == 20  # the default
    with override_settings(CONSOLE_WEBHOOK_MAX_ENDPOINTS=2):
        made = [
            runtime.post_json(f"{API}/webhook-endpoints/", {"url": f"http://127.0.0.1:9/{n}"})
            for n in range(2)
        ]
        assert [r.status_code for r in made] == [201, 201]
        refused = runtime.post_json(f"{API}/webhook-endpoints/", {"url": "http://127.0.0.1:9/x"})
        assert refused.status_code == 400
        body = refused.json()
        assert body["error"] == "too_many_endpoints" and body["limit"] == 2
        assert "at most 2 webhook endpoints" in body["detail"]
        assert WebhookEndpoint.objects.count() == 2
        # Another runtime has its own cap; a deleted endpoint frees its place.
        other, _ = runtime_key_of("billing-agent")
        endpoint_create(runtime=other.runtime, url="http://127.0.0.1:9/y", actor=SYSTEM)
        gone = made[0].json()["id"]
        assert runtime.delete(f"{API}/webhook-endpoints/{gone}/").status_code == 204
        again = runtime.post_json(f"{API}/webhook-endpoints/", {"url": "http://127.0.0.1:9/z"})
        assert again.status_code == 201


@pytest.mark.parametrize(("per_endpoint", "per_runtime"), [(1, 5), (5, 1)])
def test_a_delivery_over_a_cap_waits_and_is_taken_up_when_one_finishes(
    endpoint: tuple[dict[str, Any], Receiver], rt: Actor, per_endpoint: int, per_runtime: int
) -> None:
    created, receiver = endpoint
    row = WebhookEndpoint.objects.get(pk=created["id"])
    with override_settings(
        CONSOLE_WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT=per_endpoint,
        CONSOLE_WEBHOOK_MAX_IN_FLIGHT_PER_RUNTIME=per_runtime,
    ):
        send_test_event(endpoint=row, actor=SYSTEM)
        send_test_event(endpoint=row, actor=SYSTEM)
        first, second = WebhookDelivery.objects.order_by("id")
        # Another worker holds the first one, mid-attempt.
        WebhookDelivery.objects.filter(pk=first.pk).update(
            state=Sending, attempts=1, lease_until=timezone.now() + timedelta(minutes=2)
        )
        run_worker()
        second.refresh_from_db()
        assert (second.state, second.attempts, second.held) == (Pending, 0, True)
        assert receiver.received == []
        # It is not lost to the sweep meanwhile, nor failed.
        deliveries_resume(now=timezone.now() + timedelta(minutes=1))
        assert WebhookDelivery.objects.get(pk=second.pk).state == Pending
        # The first finishes (as its worker would): the second is taken up.
        first.refresh_from_db()
        _finish(first, Outcome(204, "", ""))
        run_worker()
    second.refresh_from_db()
    assert (second.state, second.attempts, second.held) == ("succeeded", 1, False)
    assert len(receiver.received) == 1


# --- bad stored rows -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("event_types", 5),
        ("event_types", "instance.ready"),
        ("event_types", ["instance.ready", 7]),
        ("event_types", ["no.such.event"]),
        ("url", "http://127.0.0.1:9/é"),
        ("url", "ftp://127.0.0.1/x"),
        ("url", "http://127.0.0.1:99999/x"),
        ("url", "not a url"),
    ],
)
def test_an_endpoint_with_a_bad_stored_row_is_skipped_and_flagged(
    endpoint: tuple[dict[str, Any], Receiver],
    runtime: JsonClient,
    rt: Actor,
    alice: User,
    field: str,
    value: Any,
) -> None:
    _, receiver = endpoint
    bad = endpoint_create(runtime=rt.key.runtime, url="http://127.0.0.1:9/bad", actor=SYSTEM)[0]
    WebhookEndpoint.objects.filter(pk=bad.pk).update(**{field: value})
    transfer(rt)
    opened = runtime.post_json(
        f"{API}/instances/",
        {
            "task_class": "payments.transfer",
            "principal": "alice",
            "beliefs": [
                {"slot": "recipient_account", "value": "NL91ABNA0417164300", "source": "tool"}
            ],
        },
    )
    assert opened.status_code == 201, opened.json()
    plan = runtime.post_json(f"{API}/instances/{opened.json()['id']}/plan/")
    assert plan.status_code == 200, plan.content[:500]  # never a 500 for the runtime
    bad.refresh_from_db()
    assert bad.problem.startswith(field)
    assert not WebhookDelivery.objects.filter(endpoint=bad).exists()
    work_until(lambda: len(receiver.received) == 1)  # the good endpoint still gets it
    staff = User.objects.create_superuser("root", "root@example.org", "pw-for-tests-only")
    client = Client()
    client.force_login(staff)
    page = client.get("/runtimes/").content.decode()
    assert "Skipped: " + field in page
    # The test button says why instead of sending.
    client.post(f"/runtimes/endpoints/{bad.pk}/test/")
    assert not WebhookEvent.objects.filter(type="webhook.test").exists()


# --- deleting an endpoint ------------------------------------------------------------------


def test_deleting_an_endpoint_keeps_its_history_and_sends_it_nothing_more(
    endpoint: tuple[dict[str, Any], Receiver], runtime: JsonClient, rt: Actor
) -> None:
    created, receiver = endpoint
    url = f"{API}/webhook-endpoints/{created['id']}/"
    open_transfer(rt)
    work_until(lambda: len(receiver.received) == 1)
    open_transfer(rt)  # a delivery still pending when it is deleted
    assert runtime.delete(url).status_code == 204
    assert runtime.get(f"{API}/webhook-endpoints/").json()["results"] == []
    assert runtime.delete(url).status_code == 404
    assert runtime.post_json(f"{url}rotate-secret/").status_code == 404
    row = WebhookEndpoint.objects.get(pk=created["id"])
    assert (row.active, row.deleted_at is not None) == (False, True)
    open_transfer(rt)  # after: no delivery at all
    run_worker()
    states = sorted(WebhookDelivery.objects.values_list("state", "last_error"))
    assert states == [("failed", "the endpoint is inactive"), ("succeeded", "")]
    assert len(receiver.received) == 1
    # The history stays readable for staff.
    staff = User.objects.create_superuser("root", "root@example.org", "pw-for-tests-only")
    client = Client()
    client.force_login(staff)
    page = client.get("/runtimes/").content.decode()
    assert "deleted " in page and page.count('class="delivery delivery-') == 2
    assert client.post(f"/runtimes/endpoints/{row.pk}/test/").status_code == 404
    # The service, as the admin calls it: deleting again is a no-op, audited once.
    endpoint_delete(endpoint=row, actor=SYSTEM)
    from beliefs.models import AuditEvent

    assert AuditEvent.objects.filter(kind="webhook_endpoint.deleted").count() == 1
