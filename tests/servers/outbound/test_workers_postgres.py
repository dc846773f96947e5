"""Real worker processes on PostgreSQL: several of them claiming batches deliver each of 500
events exactly once (one attempt each: no row is sent twice within its lease), and a slow
endpoint holds only its own lanes while a fast one's events arrive promptly."""

from __future__ import annotations

import threading
import time
from collections import Counter
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.utils import timezone

from beliefs.domain import webhooks as rules
from beliefs.models import (
    OutgoingEmail,
    RuntimeAPIKey,
    WebhookDelivery,
    WebhookEvent,
)
from beliefs.services.audit import SYSTEM, Actor
from beliefs.services.webhooks.endpoints import endpoint_create
from beliefs.services.webhooks.events import send_test_event
from tests.builders import transfer
from tests.servers.outbound.test_outbox_postgres import wait_for, workers
from tests.support.outbound import open_transfer, receiver_endpoint

pytestmark = [
    pytest.mark.servers,
    pytest.mark.postgres,
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="needs PostgreSQL: SQLite has no SKIP LOCKED and serialises writers",
    ),
    pytest.mark.django_db(transaction=True),
]

EVENTS = 500


def test_three_workers_deliver_each_of_500_events_exactly_once(
    runtime_key: tuple[RuntimeAPIKey, str],
) -> None:
    runtime = runtime_key[0].runtime

    def slow(_: object) -> int:  # slow enough that every worker gets a share of the queue
        time.sleep(0.002)
        return 204

    endpoint, receiver = receiver_endpoint(runtime, answer=slow)
    for _ in range(EVENTS):
        send_test_event(endpoint=endpoint, actor=SYSTEM)

    env = {
        "CONSOLE_WEBHOOK_ALLOW_PRIVATE": "true",
        # Room for every worker's lanes at once: the workers race for the same rows.
        "CONSOLE_WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT": "6",
        "CONSOLE_WEBHOOK_MAX_IN_FLIGHT_PER_RUNTIME": "6",
    }
    with (
        receiver,
        workers(env, count=3, extra=["--concurrency=2"]),
    ):
        done = WebhookDelivery.objects.filter(state="succeeded")
        wait_for(lambda: done.count() == EVENTS, timeout=120, what="every delivery")

    ids = Counter(r.headers["webhook-id"] for r in receiver.received)
    assert len(ids) == EVENTS
    assert set(ids.values()) == {1}  # each event exactly once
    assert all(r.event is not None for r in receiver.received)
    states = Counter(WebhookDelivery.objects.values_list("state", "attempts"))
    assert states == {("succeeded", 1): EVENTS}  # claimed once each
    by_worker = Counter(
        claimed.split("#")[0]
        for claimed in WebhookDelivery.objects.values_list("claimed_by", flat=True)
    )
    assert len(by_worker) >= 2, by_worker  # they shared the queue


def test_a_slow_endpoint_holds_only_its_own_lanes(
    runtime_key: tuple[RuntimeAPIKey, str],
) -> None:
    runtime = runtime_key[0].runtime

    def crawl(_: object) -> int:
        time.sleep(1.0)
        return 204

    slow_endpoint, slow = receiver_endpoint(runtime, answer=crawl)
    fast_endpoint, fast = receiver_endpoint(runtime)

    env = {"CONSOLE_WEBHOOK_ALLOW_PRIVATE": "true"}
    with (
        slow,
        fast,
        workers(env, count=1),
    ):
        for _ in range(30):  # 30 s of work for the slow endpoint's two connections
            send_test_event(endpoint=slow_endpoint, actor=SYSTEM)
        wait_for(lambda: slow.received, what="the slow endpoint's first delivery")
        sent_at = time.monotonic()
        for _ in range(50):
            send_test_event(endpoint=fast_endpoint, actor=SYSTEM)
        wait_for(lambda: len(fast.received) == 50, timeout=30, what="the fast endpoint's events")
        took = time.monotonic() - sent_at
        slow_so_far = len(slow.received)
    # Generous for a loaded machine; the slow endpoint alone would take 15 s to let them by.
    assert took < 5, took
    assert slow_so_far < 30
    assert WebhookDelivery.objects.filter(endpoint=fast_endpoint, state="succeeded").count() == 50


def test_a_worker_wakes_on_the_notification_of_a_new_event_and_a_new_email(
    rt: Actor, alice_with_email: User
) -> None:
    transfer(rt)
    runtime = rt.key.runtime
    arrived: list[float] = []
    endpoint, rx = receiver_endpoint(runtime, on_event=lambda _: arrived.append(time.monotonic()))
    env = {"CONSOLE_WEBHOOK_ALLOW_PRIVATE": "true"}
    # It would look by itself only every 60 s: only the NOTIFY can wake it in time.
    with (
        rx,
        workers(env, count=1, extra=["--interval=60"]),
    ):
        send_test_event(endpoint=endpoint, actor=SYSTEM)
        wait_for(lambda: len(rx.received) == 1, what="the worker to start")
        sent_at = time.monotonic()
        send_test_event(endpoint=endpoint, actor=SYSTEM)
        wait_for(lambda: len(rx.received) == 2, timeout=10, what="the second event")
        open_transfer(rt)  # alice is asked: an email to her (and an event)
        asked_at = time.monotonic()
        sent = OutgoingEmail.objects.filter(state="sent")
        wait_for(sent.exists, timeout=10, what="the email")
        email_took = time.monotonic() - asked_at
    # Generous for a loaded machine, far below the 60 s it would otherwise wait.
    assert arrived[1] - sent_at < 3, arrived[1] - sent_at
    assert email_took < 3, email_took


def test_a_delivery_held_for_room_goes_as_soon_as_another_workers_lane_ends(
    runtime_key: tuple[RuntimeAPIKey, str],
) -> None:
    """The runtime has room for one lane at a time, and a slow endpoint's lane (the first
    worker's) holds it. A second worker finds the other endpoint's delivery (written without a
    notification, so the first worker never heard of it) and holds it: the first worker hears
    that, and claims it as soon as its lane ends, though the workers look by themselves only
    every 60 s."""
    runtime = runtime_key[0].runtime
    release = threading.Event()

    def hold(_: object) -> int:
        release.wait(30)
        return 204

    answered: list[float] = []
    slow_endpoint, slow = receiver_endpoint(runtime, answer=hold)
    fast_endpoint, fast = receiver_endpoint(
        runtime, on_event=lambda _: answered.append(time.monotonic())
    )

    env = {
        "CONSOLE_WEBHOOK_ALLOW_PRIVATE": "true",
        "CONSOLE_WEBHOOK_MAX_IN_FLIGHT_PER_RUNTIME": "1",
    }
    with (
        slow,
        fast,
        workers(env, count=1, extra=["--interval=60"]),
    ):
        send_test_event(endpoint=slow_endpoint, actor=SYSTEM)
        wait_for(lambda: slow.received, what="the slow endpoint's lane to start")
        now = timezone.now()
        event = WebhookEvent.objects.create(
            webhook_id=rules.new_webhook_id(), type=rules.WEBHOOK_TEST, runtime=runtime,
            payload={"type": rules.WEBHOOK_TEST, "timestamp": now.isoformat(), "data": {}},
        )  # fmt: skip
        WebhookDelivery.objects.create(event=event, endpoint=fast_endpoint, next_attempt_at=now)
        with workers(env, count=1, extra=["--interval=60"]):
            held = WebhookDelivery.objects.filter(endpoint=fast_endpoint, held=True)
            wait_for(held.exists, what="the second worker to hold the delivery")
            released_at = time.monotonic()
            release.set()
            wait_for(lambda: answered, timeout=10, what="the held delivery")
    # Far below the 60 s the workers' own looks would take.
    assert answered[0] - released_at < 5, answered[0] - released_at
    assert WebhookDelivery.objects.filter(endpoint=fast_endpoint, state="succeeded").count() == 1


def test_a_claim_never_waits_for_a_delivery_another_transaction_holds(
    runtime_key: tuple[RuntimeAPIKey, str],
) -> None:
    """A long queue for an endpoint at its cap: the claim marks its waiting deliveries held,
    but not one that another transaction holds (a lane claiming it, say), which it would
    otherwise wait for while holding the rows it read (a lane recording its outcomes may be
    waiting for those: a deadlock)."""
    from django.db import connections, transaction
    from django.test import override_settings

    from beliefs.services.webhooks.delivery import deliveries_claim, lane_size

    runtime = runtime_key[0].runtime
    endpoint = endpoint_create(runtime=runtime, url="http://127.0.0.1:9/hooks", actor=SYSTEM)[0]
    for _ in range(lane_size() + 2):
        send_test_event(endpoint=endpoint, actor=SYSTEM)
    first, *queued = WebhookDelivery.objects.order_by("id")
    lease_until = timezone.now() + timedelta(minutes=2)
    WebhookDelivery.objects.filter(pk=first.pk).update(
        state="sending", attempts=1, claimed_by="other#1", lease_until=lease_until
    )
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        try:
            with transaction.atomic():
                list(WebhookDelivery.objects.select_for_update().filter(pk=queued[-1].pk))
                holding.set()
                release.wait(30)
        finally:
            connections.close_all()

    holder = threading.Thread(target=hold)
    holder.start()
    claimed: list[object] = []

    def claim() -> None:
        try:
            claimed.append(deliveries_claim(worker="w", lanes=1, new_lane=lambda: "1"))
        finally:
            connections.close_all()

    try:
        assert holding.wait(30)
        with override_settings(CONSOLE_WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT=1):
            claimer = threading.Thread(target=claim)
            claimer.start()
            claimer.join(30)
        assert claimed, "the claim waited for the held row"
    finally:
        release.set()
        holder.join(30)
    held = dict(WebhookDelivery.objects.filter(state="pending").values_list("pk", "held"))
    assert held == {**{d.pk: True for d in queued[:-1]}, queued[-1].pk: False}
