"""Webhook fixtures: a real receiver on loopback, a runtime with an endpoint pointing at it,
and a worker run in-process (the PostgreSQL test runs real worker processes)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import override_settings

from beliefs.models import (
    Runtime,
    RuntimeAPIKey,
    TaskClass,
    TaskInstance,
    WebhookDelivery,
    WebhookEndpoint,
)
from beliefs.services.audit import SYSTEM, Actor
from beliefs.services.planning import instance_plan
from beliefs.services.webhooks.endpoints import endpoint_create
from beliefs.worker import Worker
from demo.receiver import Receiver
from tests.builders import (
    open_instance,
    transfer,
)
from tests.conftest import JsonClient

API = "/api/v1"
FAST_RETRIES = [0.05] * 12


@pytest.fixture(autouse=True)
def _fast_private_webhooks() -> Iterator[None]:
    """Loopback receivers are allowed here (as in development), and retries come fast."""
    with override_settings(
        CONSOLE_WEBHOOK_ALLOW_PRIVATE=True, CONSOLE_WEBHOOK_RETRY_SECONDS=FAST_RETRIES
    ):
        yield


def run_worker() -> None:
    """Send everything that is due now, as `manage.py worker --batch` would, in this thread: on
    the test's connection, inside the test's transaction."""
    Worker(worker_id="test-worker", batch=True, inline=True).run()


def work_until(done: Callable[[], bool], timeout: float = 10.0) -> None:
    """Run the worker until `done()`; retries wait for their time, so poll."""
    deadline = time.monotonic() + timeout
    while True:
        run_worker()
        if done():
            return
        assert time.monotonic() < deadline, "the work was not done in time"
        time.sleep(0.05)


def all_delivered() -> bool:
    return not WebhookDelivery.objects.exclude(state=WebhookDelivery.State.SUCCEEDED).exists()


@pytest.fixture
def rt(runtime_key: tuple[RuntimeAPIKey, str], alice: User) -> Actor:
    """The runtime, acting for alice."""
    return Actor(key=runtime_key[0])


UNKNOWN_SECRET = "whsec_" + "A" * 44  # a receiver's, until its endpoint's secret is known


def registered_receiver(runtime: JsonClient, **fields: Any) -> tuple[dict[str, Any], Receiver]:
    """An endpoint registered through the API (with `fields`) at the address of a new receiver,
    and that receiver, knowing the endpoint's secret. The receiver holds its port from before
    the registration, and is not started (start it, or `with` it); closed if the registration
    fails."""
    receiver = Receiver(UNKNOWN_SECRET)
    try:
        response = runtime.post_json(f"{API}/webhook-endpoints/", {"url": receiver.url, **fields})
        assert response.status_code == 201, response.json()
    except BaseException:
        receiver.stop()
        raise
    created = response.json()
    receiver.use_secret(created["secret"])
    return created, receiver


def receiver_endpoint(runtime: Runtime, **receiver: Any) -> tuple[WebhookEndpoint, Receiver]:
    """`registered_receiver` through the service: an endpoint of the runtime, and its receiver
    (made with `receiver`), knowing its secret and not started."""
    rx = Receiver(UNKNOWN_SECRET, **receiver)
    try:
        endpoint, secret = endpoint_create(runtime=runtime, url=rx.url, actor=SYSTEM)
    except BaseException:
        rx.stop()
        raise
    rx.use_secret(secret)
    return endpoint, rx


@pytest.fixture
def endpoint(runtime: JsonClient) -> Iterator[tuple[dict[str, Any], Receiver]]:
    """An endpoint registered through the API, and the receiver it points at (started)."""
    created, receiver = registered_receiver(runtime)
    with receiver:
        yield created, receiver


def open_transfer(rt: Actor, principal: str = "alice") -> TaskInstance:
    """Planned: recipient_account CONFIRM (blocking), reference SURFACED, memo SILENT."""
    if not TaskClass.objects.filter(key="payments.transfer").exists():
        transfer(rt)
    instance = open_instance(
        task_class_key="payments.transfer",
        principal=principal,
        beliefs=[
            {"slot": "recipient_account", "value": "NL91ABNA0417164300", "source": "tool"},
            {"slot": "reference", "value": "Invoice 7", "source": "tool"},
            {"slot": "memo", "value": "thanks", "source": "tool"},
        ],
        actor=rt,
    )
    return instance_plan(instance=instance, actor=rt)


@pytest.fixture
def alice_with_email(alice: User) -> User:
    alice.email = "alice@example.org"
    alice.save()
    return alice
