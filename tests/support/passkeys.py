"""A transfer whose decision requires the person's passkey signature, and the person's side of
passkeys over the pages' JSON endpoints, with a software authenticator."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from beliefs.models import Decision
from beliefs.services.audit import Actor
from beliefs.services.decision_settings import decision_set_requires_signature
from tests.conftest import JsonClient
from tests.support.api import API, Driver
from tests.support.authenticator import SoftAuthenticator

CLASS = "payments.transfer"
RECIPIENT = "DE89370400440532013000"


@pytest.fixture
def api(runtime: JsonClient, person_client: Callable[[User], JsonClient], alice: User) -> Driver:
    return Driver(runtime, person_client(alice))


@pytest.fixture
def signed_class(api: Driver, carol: User) -> str:
    """The recipient feeds send_transfer (irreversible, requires a signature); the memo is a
    reversible assumption."""
    api.register(
        CLASS,
        slots=[{"key": "recipient_account"}, {"key": "memo"}],
        decisions=[{"key": "send_transfer", "slots": ["recipient_account"]}],
        risks={"recipient_account": "reversible", "memo": "reversible"},
        decision_risks={"send_transfer": "irreversible"},
    )
    decision_set_requires_signature(
        decision=Decision.objects.get(key="send_transfer"),
        requires_signature=True,
        reason="payments are signed",
        actor=Actor(user=carol),
    )
    return CLASS


def open_transfer(api: Driver, *, memo_ref: str = "a") -> str:
    """Opened and planned: the recipient to confirm (a tool's), the memo an assumption."""
    instance_id = api.open(
        CLASS,
        world={"memo": {"ref": memo_ref}},
        beliefs=[
            {"slot": "recipient_account", "value": RECIPIENT, "source": "tool", "turn": 1},
            {
                "slot": "memo",
                "value": "rent",
                "source": "tool",
                "turn": 1,
                "world_ref": {"ref": memo_ref},
            },
        ],
    )
    api.plan(instance_id)
    return instance_id


def confirm_recipient(api: Driver, instance_id: str) -> dict[str, Any]:
    prompt = api.prompt(instance_id, "recipient_account")
    response = api.respond(prompt, "confirm")
    assert response.status_code == 200, response.json()
    return api.instance(instance_id)


def post_json(client: Client, url: str, data: Any = None) -> Any:
    return client.post(url, data=json.dumps(data or {}), content_type="application/json")


def register_passkey(
    client: Client, authenticator: SoftAuthenticator, name: str = "work laptop"
) -> Any:
    options = post_json(client, "/account/passkeys/options/").json()["options"]
    credential = authenticator.create(options)
    return post_json(client, "/account/passkeys/", {"name": name, "credential": credential})


def start_signing(client: Client, instance_id: str) -> Any:
    return post_json(client, f"/instances/{instance_id}/sign/options/")


def send_assertion(client: Client, instance_id: str, attempt: str, credential: Any) -> Any:
    return post_json(
        client,
        f"/instances/{instance_id}/sign/assertion/",
        {"attempt": attempt, "credential": credential},
    )


def sign(client: Client, instance_id: str, authenticator: SoftAuthenticator) -> Any:
    started = start_signing(client, instance_id)
    assert started.status_code == 200, started.json()
    body = started.json()
    credential = authenticator.get(body["options"])
    return send_assertion(client, instance_id, body["attempt"], credential)


@pytest.fixture
def device() -> SoftAuthenticator:
    return SoftAuthenticator()


@pytest.fixture
def alice_pages(signed_in: Callable[[User], Client], alice: User) -> Client:
    return signed_in(alice)


__all__ = ["API"]
