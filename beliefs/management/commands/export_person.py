"""Export what the console holds about one person as JSON (a subject access request): their
account and roles, and every row about them: their instances, beliefs, prompts and answers,
approvals and signatures, passkeys, emails, the webhooks about their instances and the audit
events of what they did or what was done for them. A receipt's token is left out (whoever holds
it can present it). The export is audited.

    python manage.py export_person USERNAME [--output FILE]
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.core.serializers.json import DjangoJSONEncoder

from beliefs.services.audit import SYSTEM
from beliefs.services.people import person_export


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--output", type=Path, help="write to this file, not the output")

    def handle(self, *args: Any, **options: Any) -> None:
        user = User.objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"No person with the username {options['username']!r}.")
        text = json.dumps(person_export(user=user, actor=SYSTEM), cls=DjangoJSONEncoder, indent=2)
        if options["output"] is None:
            self.stdout.write(text)
        else:
            options["output"].write_text(text + "\n", encoding="utf-8")
            self.stderr.write(f"Wrote {options['output']}")
