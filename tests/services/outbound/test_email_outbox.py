"""Emails on the outbox machine: a digest instead of one email each; retries over hours; a
total deadline per email; taken up again after a dead worker's lease."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.core.mail.backends.locmem import EmailBackend as LocmemBackend
from django.test import override_settings
from django.utils import timezone

from beliefs.models import EmailNotification, OutgoingEmail, Prompt, PromptState, TaskInstance
from beliefs.services.audit import Actor
from beliefs.services.notify import EMAIL_RETRY_SECONDS, email_send, emails_resume
from beliefs.services.sweep import sweep
from tests.support.fake_servers import SmtpServer
from tests.support.outbound import open_transfer, run_worker, work_until

SECRET_VALUES = ("NL91ABNA0417164300", "Invoice 7", "thanks")


def _link(instance: TaskInstance) -> str:
    return f"http://127.0.0.1:8000/instances/{instance.pk}/"


def _settled() -> bool:
    return not OutgoingEmail.objects.filter(state__in=["pending", "sending"]).exists()


def test_instances_that_start_waiting_within_the_window_make_one_digest(
    rt: Actor, alice_with_email: User
) -> None:
    with override_settings(CONSOLE_EMAIL_DIGEST_WINDOW=timedelta(seconds=1)):
        first = open_transfer(rt)
        run_worker()
        assert len(mail.outbox) == 1  # the first goes out at once, as it always did
        more = [open_transfer(rt), open_transfer(rt)]
        work_until(lambda: len(mail.outbox) == 2 and _settled())
    single, digest = mail.outbox
    assert _link(first) in single.body and single.subject.startswith("Your answer is needed:")
    assert digest.subject == "Your answer is needed: 2 tasks"
    assert "2 tasks need your answer" in digest.body
    for instance in more:
        assert _link(instance) in digest.body
    assert _link(first) not in digest.body
    assert digest.body.count("1 answer:") == 2
    for value in SECRET_VALUES:
        assert value not in digest.body and value not in digest.subject
    one, two = OutgoingEmail.objects.order_by("not_before")
    assert two.not_before == one.not_before + timedelta(seconds=1)  # one window apart
    assert set(EmailNotification.objects.values_list("state", flat=True)) == {"sent"}


def test_a_burst_of_opens_sends_at_most_one_email_per_window(
    rt: Actor, alice_with_email: User
) -> None:
    window = timedelta(seconds=1)
    with override_settings(CONSOLE_EMAIL_DIGEST_WINDOW=window):
        instances = [open_transfer(rt) for _ in range(15)]
        work_until(lambda: _settled() and not OutgoingEmail.objects.filter(state="pending"))
    emails = list(OutgoingEmail.objects.order_by("not_before"))
    assert len(mail.outbox) == len(emails) < len(instances)
    for earlier, later in zip(emails, emails[1:], strict=False):
        assert later.not_before - earlier.not_before >= window
    # Each instance is told of exactly once.
    for instance in instances:
        assert sum(_link(instance) in m.body for m in mail.outbox) == 1


def test_answered_before_its_digest_went_it_is_left_out(rt: Actor, alice_with_email: User) -> None:
    from beliefs.services.responses import prompt_respond

    with override_settings(CONSOLE_EMAIL_DIGEST_WINDOW=timedelta(seconds=1)):
        open_transfer(rt)
        run_worker()
        answered, waiting = open_transfer(rt), open_transfer(rt)
        prompt = Prompt.objects.get(instance=answered, state=PromptState.OPEN, blocking=True)
        prompt_respond(
            prompt_id=prompt.pk, user=alice_with_email, action="confirm", version=prompt.version
        )
        work_until(lambda: len(mail.outbox) == 2 and _settled())
    last = mail.outbox[1]
    assert _link(waiting) in last.body and _link(answered) not in last.body
    assert last.subject.startswith("Your answer is needed: ")  # one left: the single form
    states = dict(EmailNotification.objects.values_list("instance_id", "state"))
    assert (states[answered.pk], states[waiting.pk]) == ("skipped", "sent")


def test_expiry_warnings_for_several_instances_make_one_digest(
    rt: Actor, alice_with_email: User
) -> None:
    instances = [open_transfer(rt) for _ in range(3)]
    run_worker()
    mail.outbox.clear()
    open_ = Prompt.objects.filter(state=PromptState.OPEN, blocking=True, expires_at__isnull=False)
    expires_at = open_.order_by("expires_at")[0].expires_at
    assert sweep(now=expires_at - timedelta(minutes=30))["warned"] == 3
    run_worker()
    (digest,) = mail.outbox
    assert digest.subject == "Expiring soon: 3 tasks need your answer"
    assert digest.body.count("expires in about") == 3
    for instance in instances:
        assert _link(instance) in digest.body
    for value in SECRET_VALUES:
        assert value not in digest.body


class FlakyBackend(LocmemBackend):
    """Refuses the first `failures` emails (an SMTP outage), then delivers to mail.outbox."""

    failures = 0

    def send_messages(self, messages: Any) -> int:
        if FlakyBackend.failures > 0:
            FlakyBackend.failures -= 1
            raise ConnectionRefusedError("SMTP is down")
        return super().send_messages(messages)


FLAKY = "tests.services.outbound.test_email_outbox.FlakyBackend"


def test_the_default_email_retry_schedule_spans_hours() -> None:
    assert len(EMAIL_RETRY_SECONDS) == 11
    assert 17 * 3600 <= sum(EMAIL_RETRY_SECONDS) <= 18 * 3600
    assert list(EMAIL_RETRY_SECONDS) == sorted(EMAIL_RETRY_SECONDS)


def test_an_email_outlives_an_smtp_outage(rt: Actor, alice_with_email: User) -> None:
    FlakyBackend.failures = 8  # more than the 5 attempts it used to get
    with override_settings(EMAIL_BACKEND=FLAKY, CONSOLE_EMAIL_RETRY_SECONDS=[0.05] * 11):
        open_transfer(rt)
        run_worker()
        email = OutgoingEmail.objects.get()
        # Retries are 0.05 s apart: a slow machine may already have run more in this batch.
        assert email.state == "pending" and 1 <= email.attempts <= 8
        assert email.last_error == "ConnectionRefusedError: SMTP is down"
        work_until(_settled)
    email.refresh_from_db()
    assert (email.state, email.attempts, email.last_error) == ("sent", 9, "")
    assert len(mail.outbox) == 1
    assert EmailNotification.objects.get().state == "sent"


def test_an_email_fails_only_at_the_end_of_its_schedule(rt: Actor, alice_with_email: User) -> None:
    FlakyBackend.failures = 100
    with override_settings(EMAIL_BACKEND=FLAKY, CONSOLE_EMAIL_RETRY_SECONDS=[0.02, 0.02]):
        open_transfer(rt)
        work_until(_settled)
    email = OutgoingEmail.objects.get()
    assert (email.state, email.attempts) == ("failed", 3)
    assert EmailNotification.objects.get().state == "failed"
    FlakyBackend.failures = 0


def test_a_dripping_smtp_server_cannot_hold_an_email_past_its_deadline(
    rt: Actor, alice_with_email: User
) -> None:
    server = SmtpServer(drip=0.2)
    try:
        with override_settings(
            EMAIL_BACKEND="beliefs.mail.DeadlineSMTPBackend",
            EMAIL_HOST="127.0.0.1",
            EMAIL_PORT=server.port,
            EMAIL_USE_TLS=False,
            CONSOLE_EMAIL_DEADLINE_SECONDS=1,
        ):
            open_transfer(rt)
            email = OutgoingEmail.objects.get()
            started = time.monotonic()
            result = email_send(email.pk)
            took = time.monotonic() - started
    finally:
        server.close()
    # The 1 s deadline cut it: dripping, the exchange would take far longer, and the per-read
    # EMAIL_TIMEOUT (10 s) never came into it. Bounded generously for a loaded machine.
    assert took < 5, took
    assert "DeadlineExceeded" in result
    email.refresh_from_db()
    assert (email.state, email.attempts) == ("pending", 1)
    assert "DeadlineExceeded" in email.last_error
    assert server.accepted == []


@pytest.mark.parametrize("lease_left", [timedelta(seconds=30), -timedelta(seconds=1)])
def test_an_email_whose_worker_died_is_sent_after_its_lease(
    rt: Actor, alice_with_email: User, lease_left: timedelta
) -> None:
    open_transfer(rt)
    lease_until = timezone.now() + lease_left
    OutgoingEmail.objects.update(state="sending", attempts=1, lease_until=lease_until)
    resumed = emails_resume()
    run_worker()
    email = OutgoingEmail.objects.get()
    if lease_left > timedelta(0):  # still held: nothing happens
        assert (resumed, email.state, len(mail.outbox)) == (0, "sending", 0)
    else:
        assert (resumed, email.state, email.attempts, len(mail.outbox)) == (1, "sent", 2, 1)


def test_with_the_default_window_a_burst_is_one_email_now_and_one_digest_later(
    rt: Actor, alice_with_email: User
) -> None:
    from django.conf import settings

    assert timedelta(minutes=5) == settings.CONSOLE_EMAIL_DIGEST_WINDOW
    first = open_transfer(rt)
    run_worker()
    rest = [open_transfer(rt) for _ in range(9)]
    run_worker()
    (sent,) = mail.outbox  # the others wait for the window's end
    assert _link(first) in sent.body
    now, later = OutgoingEmail.objects.order_by("not_before")
    assert (now.state, later.state) == ("sent", "pending")
    assert later.not_before == now.not_before + timedelta(minutes=5)
    assert set(later.notifications.values_list("instance_id", flat=True)) == {i.pk for i in rest}


def test_a_long_digest_lists_the_first_and_counts_the_rest(
    rt: Actor, alice_with_email: User
) -> None:
    from unittest import mock

    instances = [open_transfer(rt) for _ in range(4)]
    with mock.patch("beliefs.services.notify.DIGEST_LISTED", 2):
        run_worker()
    (digest,) = mail.outbox
    assert digest.subject == "Your answer is needed: 4 tasks"
    assert [_link(i) in digest.body for i in instances] == [True, True, False, False]
    assert "… and 2 more, in your inbox: http://127.0.0.1:8000/\n" in digest.body
