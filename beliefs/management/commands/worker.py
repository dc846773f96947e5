"""`python manage.py worker`: django-tasks-db's `db_worker`, plus the periodic sweep.

Run as many as you like, on any machine that reaches the database: jobs are claimed with row
locks (SKIP LOCKED on PostgreSQL), so no job runs twice, and the sweep is safe to run
concurrently.
"""

from __future__ import annotations

import logging
import threading
from argparse import ArgumentParser
from typing import Any

from django.db import close_old_connections, connection
from django_tasks_db.management.commands.db_worker import Command as DbWorkerCommand

logger = logging.getLogger("beliefs.worker")


def _sweep_forever(interval: float, stop: threading.Event) -> None:
    from beliefs.services.sweep import sweep

    while not stop.wait(interval):
        try:
            close_old_connections()
            done = sweep()
            if any(done.values()):
                logger.info("sweep: %s", done)
        except Exception:
            # A failed sweep is retried at the next interval; the worker keeps running jobs.
            logger.exception("sweep failed")
        finally:
            connection.close()


class Command(DbWorkerCommand):
    help = (
        "Run a background worker: webhook deliveries and emails, and every --sweep-interval "
        "seconds the sweep (expiry, expiry warnings, stalled deliveries and emails)."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        super().add_arguments(parser)
        from django.conf import settings

        parser.add_argument(
            "--sweep-interval",
            type=float,
            default=settings.CONSOLE_SWEEP_SECONDS,
            help="seconds between sweeps; 0 turns the sweep off (default: CONSOLE_SWEEP_SECONDS)",
        )
        # Reloading restarts the process mid-job; opt in with --reload.
        parser.set_defaults(reload=False)

    def handle(self, *args: Any, **options: Any) -> None:
        sweep_interval: float = options.pop("sweep_interval")
        stop = threading.Event()
        if sweep_interval > 0 and not options.get("batch"):
            threading.Thread(
                target=_sweep_forever, args=(sweep_interval, stop), daemon=True
            ).start()
        try:
            super().handle(*args, **options)
        finally:
            stop.set()
