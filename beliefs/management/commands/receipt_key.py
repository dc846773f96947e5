"""Make a new Ed25519 key for signing receipts, written to PATH (readable by its owner only).
Put it first in CONSOLE_RECEIPT_SIGNING_KEYS to sign with it, and keep the old key listed after
it until the receipts it signed have expired.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from beliefs import signing


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("path", type=Path, help="where to write the PEM file (must not exist)")

    def handle(self, *args: Any, path: Path, **options: Any) -> None:
        key = signing.new_key()
        try:
            signing.write_key(path, key)
        except FileExistsError:
            raise CommandError(f"{path} exists: a signing key is never overwritten") from None
        self.stdout.write(f"Wrote {path} (kid {signing.kid(key)}).")
        self.stdout.write(
            f"Sign with it: CONSOLE_RECEIPT_SIGNING_KEYS={path}[,<the previous key>...]"
        )
