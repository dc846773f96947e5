"""Create an API key for a runtime (creating the runtime if needed) and print the key alone on
stdout (it is shown only once).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from beliefs.services.audit import SYSTEM
from beliefs.services.runtimes import runtime_key_create


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="the runtime's name, e.g. billing-agent")

    def handle(self, *args: Any, name: str, **options: Any) -> None:
        _, key = runtime_key_create(runtime_name=name, actor=SYSTEM)
        self.stdout.write(key)
