"""Expire every instance with a blocking prompt past its TTL (CONSOLE_PROMPT_TTL); run it from
cron. Instances are also expired lazily whenever they are read.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from beliefs.services.expiry import instances_expire


class Command(BaseCommand):
    help = __doc__

    def handle(self, *args: Any, **options: Any) -> None:
        count = instances_expire()
        self.stdout.write(f"{count} instance{'' if count == 1 else 's'} expired")
