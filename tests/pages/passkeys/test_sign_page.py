"""The review-and-sign page says plainly what is signed: the value once, not struck through; a
changed world as a separate warning, with "use the current value" asking the question again
with the world's value filled in (audited); decisions by their labels, never their keys."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from beliefs.domain.vocabulary import AuditKind
from beliefs.models import AuditEvent, Belief, Decision, InstanceStatus, Prompt, TaskInstance
from beliefs.services.audit import digest_of
from tests.support.api import Driver
from tests.support.passkeys import RECIPIENT

pytestmark = pytest.mark.usefixtures("signed_class")

NEW = "NL91ABNA0417164300"


def _awaiting_with_changed_world(api: Driver) -> str:
    """The runtime's tool gave the recipient with the registry's IBAN then; the registry
    says another now. Alice ticks the changed detail and keeps the old value."""
    instance_id = api.open(
        "payments.transfer",
        world={"recipient_account": {"registry": "bank", "iban": NEW}},
        beliefs=[
            {
                "slot": "recipient_account",
                "value": RECIPIENT,
                "source": "tool",
                "turn": 1,
                "world_ref": {"registry": "bank", "iban": RECIPIENT},
            },
            {"slot": "memo", "value": "rent", "source": "tool", "turn": 1},
        ],
    )
    api.plan(instance_id)
    prompt = api.prompt(instance_id, "recipient_account")
    answered = api.respond(prompt, "confirm", acknowledged=["iban"])
    assert answered.status_code == 200, answered.json()
    assert api.instance(instance_id)["status"] == "awaiting_signature"
    return instance_id


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_the_page_shows_the_signed_value_once_and_the_change_apart(
    api: Driver, alice_pages: Client
) -> None:
    Decision.objects.filter(key="send_transfer").update(label="Send the transfer")
    instance_id = _awaiting_with_changed_world(api)
    html = alice_pages.get(f"/instances/{instance_id}/sign/").content.decode()
    table = html[html.index('<table class="bindings sign-bindings">') : html.index("</table>")]
    assert "<del>" not in table and "<ins>" not in table  # nothing struck through
    assert table.count(RECIPIENT) == 1 and NEW not in table
    warning = html[html.index('id="world-recipient_account"') :]
    assert "the world it refers to changed" in warning
    assert f'it said <span class="value">{RECIPIENT}</span> then' in warning
    assert f'it says <span class="value">{NEW}</span> now' in warning
    assert "Use the current value" in warning
    # Decisions by their labels; no internal key anywhere a person reads.
    assert "needs your signature to Send the transfer" in _text(html)
    assert "send_transfer" not in _text(html)


def test_use_the_current_value_asks_again_with_it_filled_in(
    api: Driver, alice: User, alice_pages: Client
) -> None:
    instance_id = _awaiting_with_changed_world(api)
    response = alice_pages.post(
        f"/instances/{instance_id}/sign/reask/", {"slot": "recipient_account"}
    )
    assert response.status_code == 302 and response["Location"] == f"/instances/{instance_id}/"
    instance = TaskInstance.objects.get(pk=instance_id)
    assert instance.status == InstanceStatus.AWAITING_USER
    prompt = Prompt.objects.get(instance=instance, slot__key="recipient_account", state="open")
    assert prompt.route == "CONFIRM" and prompt.prefill == NEW
    belief = Belief.objects.get(instance=instance, slot__key="recipient_account", status="active")
    assert belief.value == NEW and belief.world_ref == {"registry": "bank", "iban": NEW}
    event = AuditEvent.objects.get(kind=AuditKind.PROMPT_REASKED, instance_id=instance_id)
    assert event.actor_user_id == alice.pk
    # What it was and what it is now, as digests: the audit never holds the values.
    assert event.data["before"] == digest_of(RECIPIENT) and event.data["after"] == digest_of(NEW)
    page = alice_pages.get(f"/instances/{instance_id}/").content.decode()
    assert "Asked again with the current value" in page
    # Confirmed, it waits for the signature again, now of the new value.
    answered = api.respond(api.prompt(instance_id, "recipient_account"), "confirm")
    assert answered.status_code == 200, answered.json()
    read = api.instance(instance_id)
    assert read["status"] == "awaiting_signature"
    assert read["bindings"]["recipient_account"] == NEW


@pytest.mark.parametrize("case", ["no_change", "other_slot", "not_waiting", "outsider"])
def test_it_is_refused_where_there_is_nothing_to_ask_again(
    case: str, api: Driver, alice_pages: Client, mallory: User, signed_in: Any
) -> None:
    instance_id = _awaiting_with_changed_world(api)
    slot = "memo" if case == "other_slot" else "recipient_account"
    client = alice_pages
    if case == "not_waiting":
        TaskInstance.objects.filter(pk=instance_id).update(status=InstanceStatus.CANCELLED)
    if case == "outsider":
        client = signed_in(mallory)
    if case == "no_change":
        Prompt.objects.filter(instance_id=instance_id).update(world_diff=[])
    before = Belief.objects.filter(instance_id=instance_id).count()
    response = client.post(f"/instances/{instance_id}/sign/reask/", {"slot": slot})
    assert response.status_code == (404 if case == "outsider" else 302)
    assert Belief.objects.filter(instance_id=instance_id).count() == before
    assert not AuditEvent.objects.filter(kind=AuditKind.PROMPT_REASKED).exists()
