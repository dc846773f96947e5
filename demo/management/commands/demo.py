"""Load the demo (idempotent): users alice, carol, cathy, rita and the approvers bob and dave,
the seed's five task classes with a finished run 1 and an open run 2 each (the transfer needs
two approvals, the contract a passkey signature), and a fresh runtime key.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from typing import Any

from django.core.management.base import BaseCommand

from beliefs.models import OutgoingEmail
from demo.data import seed_demo

# How long `--when-served` waits for the server, then for the worker's emails, at most.
SERVED_WITHIN = 60.0
SENT_WITHIN = 15.0


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            # localhost, not 127.0.0.1: passkeys need a host name, and a second host would
            # need a second sign-in.
            "--url",
            default="http://localhost:8000/",
            help="where it is served",
        )
        parser.add_argument(
            "--when-served",
            action="store_true",
            help="print the logins once the server at --url answers and the worker has sent "
            "the emails waiting (`make run`: so that they are the last thing on the screen)",
        )

    def handle(self, *args: Any, url: str, when_served: bool = False, **options: Any) -> None:
        result = seed_demo()
        if when_served:
            _wait_until_served(url)
            _wait_until_sent()
        out = self.stdout
        out.write("")
        out.write(self.style.SUCCESS("Confirmation console demo is ready."))
        out.write(f"  Open {url} and sign in with one of:")
        for username, password, role, _ in result["users"]:
            out.write(f"    {username:<6} / {password:<16} {role}")
        out.write(
            "  Try every journey: as alice, answer the bank transfer (it then waits for two "
            "approvers: sign in as bob, then dave, to approve it) and the supplier contract "
            "(it then waits for alice's passkey signature: add a passkey on her account page); "
            "as carol, classify; as rita, review."
        )
        out.write(f"  Runtime API key (shown once): {result['runtime_key']}")
        out.write(
            f"    curl -H 'Authorization: Api-Key {result['runtime_key']}' "
            f"{url}api/v1/task-classes/payments.transfer/"
        )
        out.write(f"  API docs: {url}api/v1/docs/")
        out.write("")


def _wait_until_served(url: str) -> None:
    deadline = time.monotonic() + SERVED_WITHIN
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url.rstrip('/')}/healthz", timeout=1):  # noqa: S310
                return
        except (urllib.error.URLError, OSError):
            time.sleep(0.2)  # the server is still starting


def _wait_until_sent() -> None:
    deadline = time.monotonic() + SENT_WITHIN
    while time.monotonic() < deadline:
        if not OutgoingEmail.objects.filter(state=OutgoingEmail.State.PENDING).exists():
            return
        time.sleep(0.2)  # the worker is sending them
