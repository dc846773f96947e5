"""Django's SMTP backend under one total deadline per email, and one line of the log per email
where no SMTP server is set (`LogEmailBackend`).

EMAIL_TIMEOUT bounds each socket operation, so a server dripping its replies a byte at a time
could hold a worker for ever. Inside `deadline(seconds)`, every SMTP connection opened in this
thread is watched: when the time is up its socket is shut down, which ends whatever read or
write was waiting, and smtplib raises. The email then counts as a failed attempt and is retried.
"""

from __future__ import annotations

import logging
import re
import smtplib
import socket
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any

from django.core.mail import EmailMessage
from django.core.mail.backends.base import BaseEmailBackend
from django.core.mail.backends.smtp import EmailBackend

logger = logging.getLogger("beliefs.mail")

_local = threading.local()


class Watch:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self.connections: list[smtplib.SMTP] = []
        self._over = threading.Event()

    def run(self) -> None:
        if self._over.wait(self.seconds):
            return
        self.expired = True
        # Repeated until the send gives up: a socket may appear after the first round.
        while not self._over.is_set():
            for connection in list(self.connections):
                sock = getattr(connection, "sock", None)
                if sock is not None:
                    with suppress(OSError):
                        sock.shutdown(socket.SHUT_RDWR)
            self._over.wait(0.05)

    def stop(self) -> None:
        self._over.set()


@contextmanager
def deadline(seconds: float) -> Iterator[Watch]:
    """Every SMTP connection opened in this thread within the block ends by `seconds`."""
    watch = Watch(seconds)
    previous = getattr(_local, "watch", None)
    _local.watch = watch
    thread = threading.Thread(target=watch.run, daemon=True)
    thread.start()
    try:
        yield watch
    finally:
        watch.stop()
        _local.watch = previous
        thread.join()


class _Watched:
    def connect(self, *args: Any, **kwargs: Any) -> Any:
        watch: Watch | None = getattr(_local, "watch", None)
        if watch is not None:
            if watch.expired:
                raise smtplib.SMTPServerDisconnected("the deadline passed before connecting")
            watch.connections.append(self)  # type: ignore[arg-type]
        return super().connect(*args, **kwargs)  # type: ignore[misc]


class WatchedSMTP(_Watched, smtplib.SMTP):
    pass


class WatchedSMTPSSL(_Watched, smtplib.SMTP_SSL):
    pass


class DeadlineSMTPBackend(EmailBackend):
    @property
    def connection_class(self) -> type[smtplib.SMTP]:
        return WatchedSMTPSSL if self.use_ssl else WatchedSMTP


class LogEmailBackend(BaseEmailBackend):
    """Development without EMAIL_HOST: each email is one line of the log (to whom, its subject
    and the first link in it), not its whole text printed, so `make run`'s screen stays
    readable. Nothing is sent."""

    def send_messages(self, email_messages: Sequence[EmailMessage]) -> int:
        for message in email_messages:
            link = LINK.search(str(message.body))
            logger.info(
                "email to %s: %s%s (not sent: EMAIL_HOST is not set)",
                ", ".join(message.to),
                message.subject,
                f" {link.group(0)}" if link else "",
            )
        return len(email_messages)


LINK = re.compile(r"https?://\S+")
