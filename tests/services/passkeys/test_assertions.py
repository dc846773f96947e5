"""What an assertion must be beyond its signature: its user handle, when it gives one, is the
passkey owner's; it was made in the console's own page, not in a frame of another site; and
its signature counter is checked and advanced by one assertion at a time, so two assertions
with the same count racing on two instances cannot both pass."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection, connections
from django.test import Client

from beliefs.models import AuditEvent, Passkey, SignatureAttempt
from beliefs.services import passkeys as passkey_services
from tests.support.api import Driver
from tests.support.authenticator import SoftAuthenticator
from tests.support.passkeys import (
    confirm_recipient,
    open_transfer,
    post_json,
    register_passkey,
    send_assertion,
    start_signing,
)

pytestmark = pytest.mark.usefixtures("signed_class")

FOREIGN = "https://evil.example"

# How each assertion is tampered with: (what the device sends, the refusal's code or None).
TAMPERING: dict[str, tuple[Callable[[SoftAuthenticator, User], None], str | None]] = {
    "as made": (lambda device, other: None, None),
    "no user handle": (lambda device, other: setattr(device, "sends_user_handle", False), None),
    "another person's user handle": (
        lambda device, other: setattr(device, "user_handle", f"console-user-{other.pk}".encode()),
        "user_handle_mismatch",
    ),
    "a user handle that is not base64url": (
        lambda device, other: setattr(device, "user_handle", b"\xff\xfe"),
        "user_handle_mismatch",
    ),
    "cross-origin with a foreign top origin": (
        lambda device, other: device.client_data_extra.update(crossOrigin=True, topOrigin=FOREIGN),
        "cross_origin",
    ),
    "cross-origin": (
        lambda device, other: device.client_data_extra.update(crossOrigin=True),
        "cross_origin",
    ),
    "a foreign top origin": (
        lambda device, other: device.client_data_extra.update(topOrigin=FOREIGN),
        "cross_origin",
    ),
    "crossOrigin a string": (
        lambda device, other: device.client_data_extra.update(crossOrigin="true"),
        "cross_origin",
    ),
}


@pytest.mark.parametrize("tampering", list(TAMPERING))
def test_signing_an_instance_refuses_a_foreign_handle_or_page(
    api: Driver,
    alice_pages: Client,
    device: SoftAuthenticator,
    mallory: User,
    tampering: str,
) -> None:
    instance_id = open_transfer(api)
    confirm_recipient(api, instance_id)
    register_passkey(alice_pages, device)
    before = (Passkey.objects.get().sign_count, AuditEvent.objects.count())
    tamper, refusal = TAMPERING[tampering]
    tamper(device, mallory)
    started = start_signing(alice_pages, instance_id).json()
    answer = send_assertion(
        alice_pages, instance_id, started["attempt"], device.get(started["options"])
    )
    if refusal is None:
        assert answer.status_code == 200, answer.json()
        assert api.instance(instance_id)["status"] == "ready"
        return
    assert answer.status_code == 400, answer.json()
    assert answer.json()["error"] == refusal
    # Nothing recorded: the instance waits, the attempt is unused, the counter unmoved.
    assert api.instance(instance_id)["status"] == "awaiting_signature"
    assert SignatureAttempt.objects.get(pk=started["attempt"]).verified_at is None
    assert (Passkey.objects.get().sign_count, AuditEvent.objects.count()) == before


@pytest.mark.parametrize("tampering", list(TAMPERING))
def test_signing_in_refuses_a_foreign_handle_or_page(
    alice_pages: Client, device: SoftAuthenticator, mallory: User, tampering: str
) -> None:
    register_passkey(alice_pages, device)
    tamper, refusal = TAMPERING[tampering]
    tamper(device, mallory)
    fresh = Client()
    options = post_json(fresh, "/accounts/login/passkey/options/").json()["options"]
    answer = post_json(fresh, "/accounts/login/passkey/", {"credential": device.get(options)})
    if refusal is None:
        assert answer.status_code == 200, answer.json()
        assert fresh.get("/").status_code == 200
        return
    assert answer.status_code == 400, answer.json()
    assert answer.json()["error"] == refusal
    assert fresh.get("/").status_code == 302  # not signed in
    assert Passkey.objects.get().last_used_at is None


def _waiting_on_a_row_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return bool(cursor.fetchone()[0])


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_assertions_with_one_count_racing_on_two_instances_one_wins(
    api: Driver,
    alice: User,
    signed_in: Callable[[User], Client],
    device: SoftAuthenticator,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: SQLite serialises writers, so nothing races")
    pages = [signed_in(alice), signed_in(alice)]
    register_passkey(pages[0], device)
    instances = [open_transfer(api, memo_ref=ref) for ref in ("a", "b")]
    for instance_id in instances:
        confirm_recipient(api, instance_id)
    attempts = [start_signing(pages[0], i).json() for i in instances]
    # Two assertions with the same signature count, as a cloned authenticator makes them.
    count = device.counter
    assertions = []
    for attempt in attempts:
        device.counter = count
        assertions.append(device.get(attempt["options"]))

    # Both requests are held at the verification until the race is decided one way or the
    # other: both got there (each read the counter before the other wrote it), or one waits
    # for the other's row lock.
    verify = passkey_services._verify
    arrived: list[int] = []
    go = threading.Event()

    def held(*args: Any, **kwargs: Any) -> int:
        arrived.append(1)
        assert go.wait(60), "the race was never decided"
        return verify(*args, **kwargs)

    monkeypatch.setattr(passkey_services, "_verify", held)
    statuses: dict[int, Any] = {}

    def post(n: int) -> None:
        try:
            answer = send_assertion(pages[n], instances[n], attempts[n]["attempt"], assertions[n])
            statuses[n] = (answer.status_code, answer.json().get("error"))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=post, args=(n,)) for n in range(2)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 60
    while not (len(arrived) == 2 or (arrived and _waiting_on_a_row_lock())):
        assert time.monotonic() < deadline, "neither request reached the verification"
        time.sleep(0.01)
    go.set()
    for thread in threads:
        thread.join(timeout=60)

    assert sorted(statuses.values(), key=str) == sorted(
        [(200, None), (400, "signature_invalid")], key=str
    ), statuses
    assert Passkey.objects.get().sign_count == count + 1
    assert sorted(api.instance(i)["status"] for i in instances) == [
        "awaiting_signature",
        "ready",
    ]
