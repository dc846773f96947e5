"""Run a background worker: webhook deliveries and emails (woken by PostgreSQL's NOTIFY, or
looking every --interval seconds), queued jobs, and every --sweep-interval seconds the sweep
(expiry, expiry warnings, stalled deliveries and emails).

Run as many as you like, on any machine that reaches the database: work is claimed with row
locks (SKIP LOCKED on PostgreSQL) under leases, so no item is attempted twice at once, and the
sweep is safe to run concurrently (beliefs/worker.py).
"""

from __future__ import annotations

import logging
import os
import random
import socket
import threading
import time
from argparse import ArgumentParser, BooleanOptionalAction
from typing import Any

from django.core.management.base import BaseCommand
from django.db import close_old_connections, connection

from beliefs.worker import Worker

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
            # A failed sweep is retried at the next interval; the worker keeps sending.
            logger.exception("sweep failed")
        finally:
            connection.close()


class Command(BaseCommand):
    help = __doc__

    def add_arguments(self, parser: ArgumentParser) -> None:
        from django.conf import settings

        parser.add_argument(
            "--worker-id",
            default=f"{socket.gethostname()}-{os.getpid()}",
            help="a name for this worker, recorded on what it claims (default: host-pid)",
        )
        parser.add_argument(
            "--interval",
            type=float,
            default=None,
            help="seconds between looks at the database when nothing woke the worker "
            "(default: 0.1 on SQLite; 2 on PostgreSQL, where a NOTIFY wakes it at once)",
        )
        parser.add_argument(
            "--concurrency",
            type=int,
            default=16,
            help="webhook lanes sent at once, each one connection (default: 16)",
        )
        parser.add_argument(
            "--emails", type=int, default=2, help="emails sent at once (default: 2)"
        )
        parser.add_argument(
            "--batch",
            action="store_true",
            help="send what is due now, run the jobs queued, then exit",
        )
        parser.add_argument(
            "--startup-delay",
            action=BooleanOptionalAction,
            default=True,
            help="wait up to a second before starting, so that workers started together do "
            "not look at the database in step",
        )
        parser.add_argument(
            "--sweep-interval",
            type=float,
            default=settings.CONSOLE_SWEEP_SECONDS,
            help="seconds between sweeps; 0 turns the sweep off (default: CONSOLE_SWEEP_SECONDS)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        worker = Worker(
            worker_id=options["worker_id"],
            concurrency=options["concurrency"],
            emails=options["emails"],
            interval=options["interval"],
            batch=options["batch"],
        )
        worker.handle_signals()
        if options["startup_delay"] and not options["batch"]:
            time.sleep(random.random())  # noqa: S311 - not security
        stop = threading.Event()
        sweep_interval: float = options["sweep_interval"]
        if sweep_interval > 0 and not options["batch"]:
            threading.Thread(
                target=_sweep_forever, args=(sweep_interval, stop), daemon=True
            ).start()
        logger.info("worker %s started", worker.worker_id)
        try:
            worker.run()
        finally:
            stop.set()
