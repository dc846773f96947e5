"""One worker, in this process: it looks only where a notification points (deliveries, emails,
jobs), its own look every interval finds what nobody announced, a claim reads what it sends in
its own transaction, and a lane looks for more of its endpoint's deliveries only when more may
be due. (test_workers_postgres.py runs real worker processes.)"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

from django.contrib.auth.models import User
from django.test import override_settings
from django.utils import timezone

from beliefs.models import OutgoingEmail, WebhookDelivery, WebhookEndpoint
from beliefs.net import Outcome
from beliefs.services import outbox
from beliefs.services.audit import SYSTEM, Actor
from beliefs.services.webhooks.delivery import _finish, deliveries_claim, lane_deliver
from beliefs.services.webhooks.endpoints import endpoint_create
from beliefs.services.webhooks.events import send_test_event
from beliefs.worker import Worker
from demo.receiver import Receiver
from tests.support.outbound import open_transfer

Pending, Sending = "pending", "sending"


def _quiet_worker() -> Worker:
    """A worker in this thread whose own look (every hour) is taken at once, so that from then
    on it looks only where it is told to."""
    worker = Worker(worker_id="w", inline=True, interval=3600)
    worker.step()
    return worker


def _endpoint_row(endpoint: tuple[dict[str, Any], Receiver]) -> WebhookEndpoint:
    return WebhookEndpoint.objects.get(pk=endpoint[0]["id"])


def test_it_claims_and_sends_an_announced_delivery_in_five_statements(
    endpoint: tuple[dict[str, Any], Receiver], django_assert_num_queries: Any
) -> None:
    _, receiver = endpoint
    worker = _quiet_worker()
    event = send_test_event(endpoint=_endpoint_row(endpoint), actor=SYSTEM)
    worker.hear(outbox.DELIVERIES)
    with django_assert_num_queries(7):
        # SAVEPOINT: the claim's transaction (inside the test's)
        # 1. the due deliveries with their event and endpoint, locked
        # 2. their runtime's row, locked
        # 3. the lanes in flight of that runtime, counted under the lock
        # 4. the claim: one UPDATE
        # RELEASE SAVEPOINT
        # 5. the outcome: one UPDATE (nothing was announced since the claim read)
        worker.step()
    (received,) = receiver.received
    assert received.headers["webhook-id"] == event.webhook_id
    delivery = WebhookDelivery.objects.get()
    assert (delivery.state, delivery.attempts, delivery.held) == ("succeeded", 1, False)
    with django_assert_num_queries(0):
        worker.step()  # the lane's end: nothing can have become claimable


def test_it_looks_only_where_a_notification_points_until_its_own_look(
    endpoint: tuple[dict[str, Any], Receiver], rt: Actor, alice_with_email: User
) -> None:
    _, receiver = endpoint
    worker = _quiet_worker()
    instance = open_transfer(rt)  # a delivery (instance.awaiting_user) and an email
    email = OutgoingEmail.objects.get()
    worker.step()  # nothing was heard
    assert receiver.received == []
    assert OutgoingEmail.objects.get().state == Pending
    worker.hear(outbox.EMAILS)
    worker.step()
    assert OutgoingEmail.objects.get().state == "sent"
    assert receiver.received == []
    worker.hear(outbox.DELIVERIES)
    worker.step()
    assert [r.event["data"]["instance_id"] for r in receiver.received] == [str(instance.pk)]
    assert email.pk == OutgoingEmail.objects.get().pk


def test_a_notification_it_does_not_know_makes_it_look_everywhere(
    endpoint: tuple[dict[str, Any], Receiver], rt: Actor, alice_with_email: User
) -> None:
    _, receiver = endpoint
    worker = _quiet_worker()
    open_transfer(rt)
    worker.hear("")  # a process of an earlier version names nothing
    worker.step()
    assert len(receiver.received) == 1
    assert OutgoingEmail.objects.get().state == "sent"


def test_its_own_look_finds_what_nobody_announced(
    endpoint: tuple[dict[str, Any], Receiver], rt: Actor, alice_with_email: User
) -> None:
    _, receiver = endpoint
    worker = Worker(worker_id="w", inline=True, interval=0)  # a look at every step
    worker.step()
    open_transfer(rt)
    worker.step()
    assert len(receiver.received) == 1
    assert OutgoingEmail.objects.get().state == "sent"


def test_a_retry_its_lane_gave_wakes_it_without_a_look(
    endpoint: tuple[dict[str, Any], Receiver],
) -> None:
    _, receiver = endpoint
    worker = _quiet_worker()
    answers = iter([500, 204])
    receiver.answer = lambda _: next(answers)
    send_test_event(endpoint=_endpoint_row(endpoint), actor=SYSTEM)
    worker.hear(outbox.DELIVERIES)
    with override_settings(CONSOLE_WEBHOOK_RETRY_SECONDS=[0.01]):
        worker.step()
        delivery = WebhookDelivery.objects.get()
        assert (delivery.state, delivery.attempts) == (Pending, 1)
        pause = worker.idle_wait()
        assert pause < 1  # until the retry, not the hour to its next look
        time.sleep(pause)
        worker.step()
    delivery.refresh_from_db()
    assert (delivery.state, delivery.attempts) == ("succeeded", 2)
    assert [r.headers["webhook-id"] for r in receiver.received] == [delivery.event.webhook_id] * 2


def _claim_one() -> Any:
    (lane,) = deliveries_claim(worker="w", lanes=1, new_lane=lambda: "1").lanes
    return lane


def test_a_lane_told_of_nothing_new_ends_without_looking_for_more(
    endpoint: tuple[dict[str, Any], Receiver], django_assert_num_queries: Any
) -> None:
    _, receiver = endpoint
    row = _endpoint_row(endpoint)
    send_test_event(endpoint=row, actor=SYSTEM)
    lane = _claim_one()
    send_test_event(endpoint=row, actor=SYSTEM)  # due, but not seen by this lane's claim
    lane.renew = lambda: False
    with django_assert_num_queries(1):  # the outcome: one UPDATE
        lane_deliver(lane)
    assert len(receiver.received) == 1
    states = list(WebhookDelivery.objects.order_by("id").values_list("state", flat=True))
    assert states == ["succeeded", Pending]


def test_a_lane_told_of_more_takes_them_in_its_own_place(
    endpoint: tuple[dict[str, Any], Receiver],
) -> None:
    _, receiver = endpoint
    row = _endpoint_row(endpoint)
    send_test_event(endpoint=row, actor=SYSTEM)
    lane = _claim_one()
    send_test_event(endpoint=row, actor=SYSTEM)
    asked = iter([True, False])
    lane.renew = lambda: next(asked)
    lane_deliver(lane)
    assert len(receiver.received) == 2
    claims = set(WebhookDelivery.objects.values_list("state", "claimed_by"))
    assert claims == {("succeeded", lane.claimed_by)}  # one lane, counted once under the caps


def test_a_delivery_held_for_room_is_taken_up_when_a_lane_of_its_runtime_ends(
    endpoint: tuple[dict[str, Any], Receiver], rt: Actor
) -> None:
    """The first endpoint's only room is another worker's lane: its delivery is held, while the
    second endpoint's goes at once. Once that lane has ended too, the end of this worker's lane
    is what makes it claim again (nothing is announced), and the held delivery goes."""
    _, receiver = endpoint
    first = _endpoint_row(endpoint)
    second = endpoint_create(runtime=rt.key.runtime, url=first.url, actor=SYSTEM)[0]
    WebhookEndpoint.objects.filter(pk=second.pk).update(secret=first.secret)
    worker = _quiet_worker()
    with override_settings(CONSOLE_WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT=1):
        send_test_event(endpoint=first, actor=SYSTEM)
        WebhookDelivery.objects.update(
            state=Sending,
            attempts=1,
            claimed_by="other#1",
            lease_until=timezone.now() + timedelta(minutes=2),
        )
        others = WebhookDelivery.objects.get()
        held = send_test_event(endpoint=first, actor=SYSTEM)
        sent = send_test_event(endpoint=second, actor=SYSTEM)
        worker.hear(outbox.DELIVERIES)
        worker.step()  # this worker's lane to the second endpoint ends within it (inline)
        waiting = WebhookDelivery.objects.get(event__webhook_id=held.webhook_id)
        assert (waiting.state, waiting.held) == (Pending, True)
        _finish(others, Outcome(204, "", ""))  # the other worker's lane ends
        worker.step()
    waiting.refresh_from_db()
    assert (waiting.state, waiting.held) == ("succeeded", False)
    ids = [r.headers["webhook-id"] for r in receiver.received]
    assert ids == [sent.webhook_id, held.webhook_id]
