"""What `make run` shows: each email the worker sends is one log line (no SMTP server set), and
the demo's logins and key are printed last, once the server answers."""

from __future__ import annotations

import io
import logging

import pytest
from django.core import mail
from django.core.management import call_command
from django.test import override_settings

from demo.management.commands import demo as demo_command


@override_settings(EMAIL_BACKEND="beliefs.mail.LogEmailBackend")
def test_each_email_is_one_line_of_the_log(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="beliefs.mail"):
        sent = mail.get_connection().send_messages(
            [
                mail.EmailMessage(
                    "2 answers needed: Refund a customer",
                    "Hello,\n\nOpen http://127.0.0.1:8000/instances/1/ to answer.\n\nThanks",
                    to=["alice@example.org"],
                ),
                mail.EmailMessage("Expiring soon", "No link here.\nSecond line.", to=["b@x.org"]),
            ]
        )
    assert sent == 2
    lines = [r.getMessage() for r in caplog.records if r.name == "beliefs.mail"]
    assert lines == [
        "email to alice@example.org: 2 answers needed: Refund a customer "
        "http://127.0.0.1:8000/instances/1/ (not sent: EMAIL_HOST is not set)",
        "email to b@x.org: Expiring soon (not sent: EMAIL_HOST is not set)",
    ]
    assert all("\n" not in line for line in lines)


def test_without_an_email_host_the_settings_log_emails() -> None:
    from console import settings

    assert settings.EMAIL_HOST or settings.EMAIL_BACKEND == "beliefs.mail.LogEmailBackend"


@pytest.mark.django_db(transaction=True)
def test_the_demo_prints_its_logins_once_served(
    live_server: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(demo_command, "SENT_WITHIN", 0.2)  # no worker here: its emails stay pending
    out = io.StringIO()
    call_command("demo", url=f"{live_server.url}/", when_served=True, stdout=out)  # type: ignore[attr-defined]
    text = out.getvalue()
    assert "Confirmation console demo is ready." in text
    assert "Runtime API key (shown once):" in text
    assert text.rstrip().splitlines()[-1].startswith("  API docs:")
