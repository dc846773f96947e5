"""Erase one person's values: every value, world reference and reason they typed, from every
table that holds one (their beliefs, prompts, answers, instances and the webhook events those
caused). Their unfinished instances are cancelled first. The audit keeps who did what and the
values' digests; the command says what else it kept and why. Audited; cannot be undone.

    python manage.py erase_person USERNAME [--yes] [--json]
"""

from __future__ import annotations

import json
import sys
from typing import Any

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError, CommandParser

from beliefs.services.audit import SYSTEM
from beliefs.services.erasure import person_erase


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument(
            "--yes", action="store_true", help="do not ask to type the username again"
        )
        parser.add_argument("--json", action="store_true", help="print the report as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        username = options["username"]
        user = User.objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No person with the username {username!r}.")
        if not options["yes"]:
            if not sys.stdin.isatty():
                raise CommandError("Erasure cannot be undone: pass --yes to run it unattended.")
            typed = input(f"This removes every value of {username!r} for good. Type the username: ")
            if typed.strip() != username:
                raise CommandError("Not erased: the username typed did not match.")
        erasure = person_erase(user=user, actor=SYSTEM)
        if options["json"]:
            self.stdout.write(json.dumps(erasure.as_data(), indent=2))
            return
        self.stdout.write(f"Erased the values of {username!r}.")
        if erasure.cancelled:
            self.stdout.write(f"Cancelled {erasure.cancelled} unfinished instances first.")
        self.stdout.write("Removed values from:")
        for table, rows in sorted(erasure.removed.items()):
            self.stdout.write(f"  {rows} {table.replace('_', ' ')}")
        self.stdout.write("Kept:")
        for what, why in erasure.kept:
            self.stdout.write(f"  {what}: {why}")
