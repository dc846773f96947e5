from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from rest_framework_api_key.models import APIKey

from beliefs.services import SYSTEM, audit


class Command(BaseCommand):
    help = "Create a runtime API key and print the key alone on stdout (it is shown only once)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="a name for the runtime, e.g. agent-prod")

    def handle(self, *args: Any, name: str, **options: Any) -> None:
        api_key, key = APIKey.objects.create_key(name=name)
        audit("runtime_key.created", actor=SYSTEM, subject=name, data={"prefix": api_key.prefix})
        self.stdout.write(key)
