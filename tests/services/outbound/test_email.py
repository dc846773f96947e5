"""Email to people: once per instance and state, with the link, never the values; not when
turned off."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth.models import User
from django.core import mail

from beliefs.models import EmailNotification, Prompt, PromptState
from beliefs.services.audit import Actor
from beliefs.services.people import person_email_notifications_set
from beliefs.services.responses import prompt_respond
from beliefs.services.sweep import sweep
from tests.builders import register_task_class
from tests.support.outbound import open_transfer, run_worker

SECRET_VALUES = ("NL91ABNA0417164300", "Invoice 7", "thanks")


def _blocking(instance: object) -> Prompt:
    return Prompt.objects.get(instance=instance, state=PromptState.OPEN, blocking=True)


def test_an_email_when_an_instance_starts_waiting_with_the_link_and_no_values(
    rt: Actor, alice_with_email: User
) -> None:
    instance = open_transfer(rt)
    run_worker()
    (message,) = mail.outbox
    assert message.to == ["alice@example.org"]
    assert "payments.transfer" in message.subject
    assert f"http://127.0.0.1:8000/instances/{instance.pk}/" in message.body
    assert "1 answer from you" in message.body
    for value in SECRET_VALUES:
        assert value not in message.body and value not in message.subject


def test_at_most_one_email_per_instance_and_state(rt: Actor, alice_with_email: User) -> None:
    instance = open_transfer(rt)
    # Ready, then a veto reopens it: a second wait in the same state sends nothing more.
    prompt = _blocking(instance)
    prompt_respond(
        prompt_id=prompt.pk, user=alice_with_email, action="confirm", version=prompt.version
    )
    surfaced = Prompt.objects.get(instance=instance, slot__key="reference", state="open")
    prompt_respond(
        prompt_id=surfaced.pk, user=alice_with_email, action="veto", version=surfaced.version
    )
    expires_at = _blocking(instance).expires_at
    sweep(now=expires_at - timedelta(minutes=30))
    sweep(now=expires_at - timedelta(minutes=10))
    run_worker()
    kinds = sorted(EmailNotification.objects.values_list("kind", flat=True))
    assert kinds == ["awaiting_user", "expiring"]
    assert len(mail.outbox) == 2
    expiring = next(m for m in mail.outbox if m.subject.startswith("Expiring soon"))
    assert "expires in about" in expiring.body
    assert f"/instances/{instance.pk}/" in expiring.body
    assert "NL91ABNA0417164300" not in expiring.body


def test_no_email_when_the_person_turned_it_off(rt: Actor, alice_with_email: User) -> None:
    person_email_notifications_set(user=alice_with_email, enabled=False)
    open_transfer(rt)
    run_worker()
    assert mail.outbox == []
    assert not EmailNotification.objects.exists()


def test_no_email_when_it_was_turned_off_before_the_worker_ran(
    rt: Actor, alice_with_email: User
) -> None:
    open_transfer(rt)
    person_email_notifications_set(user=alice_with_email, enabled=False)
    run_worker()
    assert mail.outbox == []
    assert EmailNotification.objects.get().state == EmailNotification.State.SKIPPED


def test_no_email_without_an_address(rt: Actor, alice: User) -> None:
    open_transfer(rt)
    run_worker()
    assert mail.outbox == []


def test_hidden_characters_in_a_task_name_are_shown_in_the_subject(
    rt: Actor, alice_with_email: User
) -> None:
    open_transfer(rt)
    register_task_class(key="payments.transfer", name="Pay\u202eevil\nBcc: x", actor=rt)
    run_worker()
    (message,) = mail.outbox
    assert "\u202e" not in message.subject and "\n" not in message.subject
    assert "⟨U+202E⟩" in message.subject
