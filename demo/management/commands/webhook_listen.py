"""Serve a webhook receiver on 127.0.0.1 for development: it verifies each request's Standard
Webhooks signature with the secret and prints the event (or why it was refused). With --runtime
it registers itself as an endpoint of that runtime.
"""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from demo.receiver import Received, Receiver, describe


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--port", type=int, default=8765)
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--secret", help="the endpoint's whsec_… secret")
        source.add_argument(
            "--runtime",
            help="register http://127.0.0.1:PORT/hooks as an endpoint of this runtime and use "
            "its fresh secret (needs CONSOLE_WEBHOOK_ALLOW_PRIVATE, on with DEBUG)",
        )

    def handle(
        self, *args: Any, port: int, secret: str | None, runtime: str | None, **_: Any
    ) -> None:
        placeholder = "whsec_" + "A" * 44
        try:
            receiver = Receiver(secret or placeholder, port=port, on_event=self._print)
        except OSError as exc:
            raise CommandError(f"cannot listen on 127.0.0.1:{port}: {exc}") from None
        except Exception as exc:  # noqa: BLE001 - a malformed secret, said plainly
            raise CommandError(f"--secret: {exc}") from None
        try:
            if runtime:  # registered at the address the receiver holds, then given its secret
                receiver.use_secret(self._register(receiver, runtime))
            self.stdout.write(f"Listening on {receiver.url} (Ctrl-C to stop)")
            self.stdout.flush()
            receiver.start()
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
        finally:
            receiver.stop()

    def _register(self, receiver: Receiver, name: str) -> str:
        from beliefs.errors import ServiceError
        from beliefs.models import Runtime
        from beliefs.services.audit import SYSTEM
        from beliefs.services.webhooks.endpoints import endpoint_create

        found = Runtime.objects.filter(name=name).first()
        if found is None:
            raise CommandError(f"--runtime: no runtime {name!r}")
        try:
            endpoint, secret = endpoint_create(
                runtime=found,
                url=receiver.url,
                description="webhook_listen",
                actor=SYSTEM,
            )
        except ServiceError as exc:
            raise CommandError(exc.detail) from None
        self.stdout.write(f"Registered endpoint {endpoint.pk} for runtime {name}; secret {secret}")
        return secret

    def _print(self, item: Received) -> None:
        self.stdout.write(describe(item))
        self.stdout.flush()
