from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from beliefs.demo import seed_demo


class Command(BaseCommand):
    help = (
        "Load the demo (idempotent): users alice, carol, cathy and rita, the seed's five task "
        "classes with a finished run 1 and an open run 2 each, and a fresh runtime key."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--url", default="http://127.0.0.1:8000/", help="where it is served")

    def handle(self, *args: Any, url: str, **options: Any) -> None:
        result = seed_demo()
        out = self.stdout
        out.write("")
        out.write(self.style.SUCCESS("Confirmation console demo is ready."))
        out.write(f"  Open {url} and sign in with one of:")
        for username, password, role, _ in result["users"]:
            out.write(f"    {username:<6} / {password:<16} {role}")
        out.write(f"  Runtime API key (shown once): {result['runtime_key']}")
        out.write(
            f"    curl -H 'Authorization: Api-Key {result['runtime_key']}' "
            f"{url}api/v1/task-classes/payments.transfer/"
        )
        out.write(f"  API docs: {url}api/v1/docs/")
        out.write("")
