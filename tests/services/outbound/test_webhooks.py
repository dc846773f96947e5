"""Signed webhooks to a real receiver on loopback: every event type, verified with
standardwebhooks; refusals; the outbox; retries with the same webhook-id."""

from __future__ import annotations

import http.client
import json
import socket
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import transaction
from django.test import override_settings
from django.utils import timezone
from standardwebhooks.webhooks import Webhook

from beliefs.domain.canonical import bindings_digest
from beliefs.models import Prompt, PromptState, WebhookDelivery, WebhookEndpoint, WebhookEvent
from beliefs.services.audit import Actor
from beliefs.services.instances import instance_cancel
from beliefs.services.responses import prompt_respond
from beliefs.services.sweep import sweep
from beliefs.services.webhooks.endpoints import endpoint_create
from demo.receiver import Receiver
from tests.conftest import JsonClient, runtime_key_of
from tests.support.outbound import (
    API,
    UNKNOWN_SECRET,
    all_delivered,
    open_transfer,
    registered_receiver,
    run_worker,
    work_until,
)

EVENT_TYPES = {
    "instance.awaiting_user",
    "instance.ready",
    "instance.cancelled",
    "instance.expired",
    "instance.expiring",
    "belief.vetoed",
}


def _respond(prompt: Prompt, user: User, action: str, **extra: Any) -> None:
    prompt_respond(prompt_id=prompt.pk, user=user, action=action, version=prompt.version, **extra)


def _open(instance: Any, slot: str) -> Prompt:
    return Prompt.objects.get(instance=instance, slot__key=slot, state=PromptState.OPEN)


def test_a_real_receiver_gets_every_event_type_signed(
    endpoint: tuple[dict[str, Any], Receiver], rt: Actor, alice: User
) -> None:
    _, receiver = endpoint
    # awaiting_user, then ready, then a veto after ready reopens it.
    first = open_transfer(rt)
    _respond(_open(first, "recipient_account"), alice, "confirm")
    _respond(_open(first, "reference"), alice, "veto", reason="wrong invoice")
    # cancelled by the runtime.
    second = open_transfer(rt)
    instance_cancel(instance=second, actor=rt, reason="user went away")
    # expiring, then expired, by the sweep.
    third = open_transfer(rt)
    expires_at = _open(third, "recipient_account").expires_at
    sweep(now=expires_at - timedelta(minutes=30))
    sweep(now=expires_at + timedelta(seconds=1))

    work_until(all_delivered)
    events = receiver.events()
    assert {e["type"] for e in events} == EVENT_TYPES
    assert all(r.event is not None for r in receiver.received)  # every signature verified
    for event in events:
        assert set(event) == {"type", "timestamp", "data"}
        assert {"instance_id", "task_class", "run_number", "status", "sequence"} <= set(
            event["data"]
        )

    of_first = sorted(
        (e for e in events if e["data"]["instance_id"] == str(first.pk)),
        key=lambda e: e["data"]["sequence"],
    )
    # (The sweep then warned and expired the reopened instance too: events 5 and 6.)
    assert [e["type"] for e in of_first] == [
        "instance.awaiting_user",
        "instance.ready",
        "belief.vetoed",
        "instance.awaiting_user",
        "instance.expiring",
        "instance.expired",
    ]
    assert [e["data"]["sequence"] for e in of_first] == [1, 2, 3, 4, 5, 6]
    awaiting = of_first[0]["data"]
    assert awaiting["status"] == "awaiting_user"
    assert [(p["slot"], p["route"], p["rule"]) for p in awaiting["prompts"]] == [
        ("recipient_account", "CONFIRM", "R4")
    ]
    # The blocking prompts, never their values.
    assert "NL91ABNA0417164300" not in json.dumps(awaiting)
    ready = of_first[1]["data"]
    assert ready["bindings"]["recipient_account"] == "NL91ABNA0417164300"
    assert ready["bindings_digest"] == bindings_digest(ready["bindings"])
    vetoed = of_first[2]["data"]
    assert (vetoed["slot"], vetoed["reason"], vetoed["after_ready"]) == (
        "reference",
        "wrong invoice",
        True,
    )
    cancelled = next(e for e in events if e["type"] == "instance.cancelled")
    assert cancelled["data"]["reason"] == "user went away"
    of_third = [e["type"] for e in events if e["data"]["instance_id"] == str(third.pk)]
    assert of_third.count("instance.expiring") == 1
    assert "instance.expired" in of_third


def test_the_receiver_refuses_a_tampered_body_a_wrong_secret_and_an_old_timestamp(
    endpoint: tuple[dict[str, Any], Receiver], rt: Actor
) -> None:
    created, receiver = endpoint
    open_transfer(rt)
    work_until(all_delivered)
    (good,) = receiver.received
    assert good.event is not None

    def post(headers: dict[str, str], body: bytes) -> int:
        connection = http.client.HTTPConnection("127.0.0.1", receiver.port, timeout=5)
        connection.request("POST", "/hooks", body=body, headers=headers)
        status = connection.getresponse().status
        connection.close()
        return status

    headers = {k: v for k, v in good.headers.items() if k.lower().startswith("webhook-")}
    tampered = good.body.replace(b'"awaiting_user"', b'"ready"', 1)
    assert tampered != good.body
    assert post(headers, tampered) == 400

    body = good.body.decode()
    now = timezone.now()
    wrong = Webhook("whsec_" + "B" * 44).sign(headers["webhook-id"], now, body)
    assert post({**headers, "webhook-signature": wrong}, good.body) == 400

    old = now - timedelta(minutes=10)
    right_but_old = Webhook(created["secret"]).sign(headers["webhook-id"], old, body)
    old_headers = {
        **headers,
        "webhook-timestamp": str(int(old.timestamp())),
        "webhook-signature": right_but_old,
    }
    assert post(old_headers, good.body) == 400
    # The unmodified request still passes: the refusals are the signature check's doing.
    assert post(headers, good.body) == 204
    refused = [r.refused for r in receiver.received if r.event is None]
    assert len(refused) == 3
    assert "too old" in refused[2]


def test_a_receiver_holds_its_port_refusing_until_started_then_checks_the_secret_given() -> None:
    """What lets a test register an endpoint at a receiver's address before it knows the secret,
    with no moment where another socket could take the port (an outgoing connection's local
    port, say, as happened under load)."""
    secret = "whsec_" + "B" * 44
    receiver = Receiver(UNKNOWN_SECRET)
    try:
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", receiver.port), timeout=5).close()
        intruder = socket.socket()
        with pytest.raises(OSError, match="in use"):
            intruder.bind(("127.0.0.1", receiver.port))
        intruder.close()

        receiver.use_secret(secret)
        receiver.start()
        body = json.dumps({"type": "webhook.test", "data": {}})
        now = timezone.now()
        headers = {
            "webhook-id": "msg_1",
            "webhook-timestamp": str(int(now.timestamp())),
            "webhook-signature": Webhook(secret).sign("msg_1", now, body),
        }
        connection = http.client.HTTPConnection("127.0.0.1", receiver.port, timeout=5)
        connection.request("POST", "/hooks", body=body, headers=headers)
        assert connection.getresponse().status == 204
        connection.close()
        assert receiver.events() == [{"type": "webhook.test", "data": {}}]
    finally:
        receiver.stop()


def test_a_rolled_back_change_sends_nothing(
    endpoint: tuple[dict[str, Any], Receiver], rt: Actor
) -> None:
    _, receiver = endpoint
    with pytest.raises(RuntimeError), transaction.atomic():
        open_transfer(rt)
        assert WebhookEvent.objects.count() == 1  # written, inside the transaction
        raise RuntimeError("the change fails after planning")
    assert WebhookEvent.objects.count() == 0
    assert WebhookDelivery.objects.count() == 0
    run_worker()
    assert receiver.received == []


def test_a_receiver_that_is_down_gets_retries_with_the_same_webhook_id(
    runtime: JsonClient, rt: Actor
) -> None:
    created, receiver = registered_receiver(runtime)  # not started: it is down
    try:
        open_transfer(rt)
        run_worker()
        delivery = WebhookDelivery.objects.get()
        assert delivery.state == WebhookDelivery.State.PENDING
        assert delivery.attempts == 1
        assert "ConnectionRefused" in delivery.last_error

        # Up again, but failing once before it recovers.
        answers = iter([503])
        receiver.answer = lambda _: next(answers, 204)
        receiver.start()
        work_until(all_delivered)
    finally:
        receiver.stop()
    delivery.refresh_from_db()
    assert delivery.attempts == 3
    assert delivery.last_status_code == 204
    ids = [r.headers["webhook-id"] for r in receiver.received]
    assert ids == [delivery.event.webhook_id] * 2
    assert [r.event["type"] for r in receiver.received] == ["instance.awaiting_user"] * 2


def test_a_delivery_is_marked_failed_after_the_last_retry(
    endpoint: tuple[dict[str, Any], Receiver], rt: Actor
) -> None:
    _, receiver = endpoint
    receiver.answer = lambda _: 500
    with override_settings(CONSOLE_WEBHOOK_RETRY_SECONDS=[0.01, 0.01]):
        open_transfer(rt)
        work_until(
            lambda: WebhookDelivery.objects.filter(state=WebhookDelivery.State.FAILED).exists()
        )
    delivery = WebhookDelivery.objects.get()
    assert (delivery.attempts, delivery.last_status_code) == (3, 500)
    assert len(receiver.received) == 3


def test_a_redirect_is_not_followed_and_only_1_kb_of_the_answer_is_kept(
    endpoint: tuple[dict[str, Any], Receiver], rt: Actor
) -> None:
    from beliefs.domain.webhooks import Destination
    from beliefs.net import Deadline, post

    _, receiver = endpoint
    receiver.answer = lambda _: 302
    open_transfer(rt)
    run_worker()
    delivery = WebhookDelivery.objects.get()
    assert (delivery.state, delivery.last_status_code) == ("pending", 302)
    assert len(receiver.received) == 1
    # A chatty receiver: only the first kilobyte is read.
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    class Chatty(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Length", str(100_000))
            self.end_headers()
            self.wfile.write(b"x" * 100_000)

        def log_message(self, *args: Any) -> None:
            return None

    server = HTTPServer(("127.0.0.1", 0), Chatty)
    threading.Thread(target=server.handle_request, daemon=True).start()
    port = server.server_address[1]
    # A loopback destination exists only where private addresses are allowed (development).
    dest = Destination("http", "127.0.0.1", port, "/", ("127.0.0.1",), allow_private=True)
    outcome = post(dest, {}, b"{}", Deadline(5))
    server.server_close()
    assert outcome.status == 200
    assert len(outcome.response) == 1024


def test_events_go_only_to_the_runtime_that_opened_the_instance(
    endpoint: tuple[dict[str, Any], Receiver], rt: Actor, alice: User
) -> None:
    _, mine = endpoint
    other_key, _ = runtime_key_of("billing-agent")
    with Receiver("whsec_" + "C" * 44) as theirs:
        other_endpoint, _ = endpoint_create(
            runtime=other_key.runtime, url=theirs.url, actor=Actor(key=other_key)
        )
        open_transfer(rt)  # opened by test-runtime
        work_until(all_delivered)
    assert [e["type"] for e in mine.events()] == ["instance.awaiting_user"]
    assert theirs.received == []
    assert not WebhookDelivery.objects.filter(endpoint=other_endpoint).exists()


def test_an_endpoint_only_gets_the_event_types_it_subscribed_to(
    runtime: JsonClient, rt: Actor, alice: User
) -> None:
    _, receiver = registered_receiver(runtime, event_types=["instance.ready"])
    with receiver:
        instance = open_transfer(rt)
        _respond(_open(instance, "recipient_account"), alice, "confirm")
        work_until(all_delivered)
    assert [e["type"] for e in receiver.events()] == ["instance.ready"]


def test_instance_expiring_is_sent_once(
    endpoint: tuple[dict[str, Any], Receiver], rt: Actor
) -> None:
    _, receiver = endpoint
    instance = open_transfer(rt)
    expires_at = _open(instance, "recipient_account").expires_at
    assert sweep(now=expires_at - timedelta(hours=2))["warned"] == 0  # not yet
    assert sweep(now=expires_at - timedelta(minutes=50))["warned"] == 1
    assert sweep(now=expires_at - timedelta(minutes=20))["warned"] == 0
    assert sweep(now=expires_at - timedelta(minutes=1))["warned"] == 0
    work_until(all_delivered)
    types = [e["type"] for e in receiver.events()]
    assert types.count("instance.expiring") == 1
    expiring = next(e for e in receiver.events() if e["type"] == "instance.expiring")
    assert expiring["data"]["expires_at"] == expires_at.isoformat()


def test_a_rotated_secret_signs_beside_the_old_one_for_24_hours(
    endpoint: tuple[dict[str, Any], Receiver], runtime: JsonClient, rt: Actor
) -> None:
    created, old_receiver = endpoint
    rotated = runtime.post_json(f"{API}/webhook-endpoints/{created['id']}/rotate-secret/")
    assert rotated.status_code == 200, rotated.json()
    new_secret = rotated.json()["secret"]
    assert new_secret.startswith("whsec_") and new_secret != created["secret"]
    listed = runtime.get(f"{API}/webhook-endpoints/").json()["results"]
    assert all("secret" not in e for e in listed)  # shown once, never listed

    open_transfer(rt)
    work_until(all_delivered)
    (item,) = old_receiver.received
    assert item.event is not None  # the old secret still verifies
    assert len(item.headers["webhook-signature"].split(" ")) == 2
    Webhook(new_secret).verify(item.body, item.headers)  # and so does the new one

    endpoint_row = WebhookEndpoint.objects.get()
    endpoint_row.previous_secret_until = timezone.now() - timedelta(seconds=1)
    endpoint_row.save()
    open_transfer(rt)
    work_until(lambda: len(old_receiver.received) >= 2)
    assert old_receiver.received[-1].event is None  # after 24 h the old secret is gone
    assert len(old_receiver.received[-1].headers["webhook-signature"].split(" ")) == 1


def test_a_runtime_cannot_touch_another_runtimes_endpoint(
    endpoint: tuple[dict[str, Any], Receiver], runtime: JsonClient
) -> None:
    created, _ = endpoint
    _, other_key = runtime_key_of("billing-agent")
    other = JsonClient()
    other.credentials(HTTP_AUTHORIZATION=f"Api-Key {other_key}")
    assert other.get(f"{API}/webhook-endpoints/").json()["results"] == []
    assert other.delete(f"{API}/webhook-endpoints/{created['id']}/").status_code == 404
    rotate = other.post_json(f"{API}/webhook-endpoints/{created['id']}/rotate-secret/")
    assert rotate.status_code == 404
    assert runtime.delete(f"{API}/webhook-endpoints/{created['id']}/").status_code == 204
    # Deleting deactivates (its history stays): see test_outbox.py.
    assert WebhookEndpoint.objects.get().deleted_at is not None


def test_a_person_cannot_manage_endpoints(person_client: Any, alice: User) -> None:
    client = person_client(alice)
    assert client.get(f"{API}/webhook-endpoints/").status_code == 403
