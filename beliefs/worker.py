"""The background worker (`manage.py worker`): sends what the outbox holds and runs queued jobs.

One loop claims work in batches and hands it to a bounded pool of threads:

- webhook deliveries as lanes (services/webhooks.py: up to `lane_size()` deliveries of one
  endpoint, sent in turn over one kept-alive connection of the endpoint's pool), at most
  `concurrency` lanes at once, so a slow endpoint holds its own lanes and never the others';
- emails, at most `emails` at once;
- jobs of django-tasks' queue (jobs queued before the outbox was its own queue, and any other
  task), one at a time in the loop's thread.

It sleeps until there is something to do: on PostgreSQL a LISTEN connection hears the NOTIFY
each new outbox row and job sends in its transaction (`outbox.announce`), and a finished lane
wakes the loop; it also looks by itself every `interval` seconds (SQLite: there is no NOTIFY,
so that interval is short) and when the next retry falls due.
"""

from __future__ import annotations

import itertools
import logging
import os
import secrets
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from types import FrameType
from typing import Any

from django.db import DatabaseError, connection, connections
from django.utils import timezone
from django_tasks_db.management.commands.db_worker import Worker as JobWorker
from django_tasks_db.models import DBTaskResult
from django_tasks_db.utils import exclusive_transaction

from beliefs.services import outbox
from beliefs.services.notify import email_attempt, emails_claim, emails_next_due
from beliefs.services.webhooks import (
    Lane,
    Pools,
    deliveries_claim,
    deliveries_next_due,
    lane_deliver,
)

logger = logging.getLogger("beliefs.worker")

# Without a notification, a look at the database at least this often (seconds).
SQLITE_INTERVAL = 0.1
POSTGRES_INTERVAL = 2.0
# Never look again sooner than this when something due could not be taken (another worker is
# claiming it right now).
MIN_WAIT = 0.02


def default_interval() -> float:
    return POSTGRES_INTERVAL if connection.vendor == "postgresql" else SQLITE_INTERVAL


class Worker:
    def __init__(
        self,
        *,
        worker_id: str,
        concurrency: int = 16,
        emails: int = 2,
        interval: float | None = None,
        batch: bool = False,
        inline: bool = False,
    ) -> None:
        self.worker_id = worker_id
        self.concurrency = max(1, concurrency)
        self.emails = max(1, emails)
        self.interval = default_interval() if interval is None else interval
        self.batch = batch  # stop once nothing is due now
        self.inline = inline  # everything in the calling thread (tests, on its connection)
        self.stopping = False
        self.kick = threading.Event()
        self.pools = Pools()
        self._lanes = itertools.count(1)
        self._run = secrets.token_hex(3)
        self._lane_futures: set[Future[str]] = set()
        self._email_futures: set[Future[str]] = set()
        self._executor: ThreadPoolExecutor | None = None
        self._jobs = JobWorker(
            queue_names=["*"],
            interval=0,
            batch=True,
            backend_name="default",
            startup_delay=False,
            max_tasks=None,
            worker_id=worker_id,
            excluded_queue_names=[],
        )
        self._jobs_checked = 0.0
        self._heard = False  # a notification arrived since the last look at the jobs
        self._due_by: datetime | None = None

    # -- the loop ----------------------------------------------------------------------------

    def run(self) -> None:
        # A batch run sends what is due when it starts (a fast retry falling due meanwhile
        # waits for the next run).
        self._due_by = timezone.now() if self.batch else None
        if not self.inline:
            self._executor = ThreadPoolExecutor(
                self.concurrency + self.emails, thread_name_prefix="worker"
            )
            if connection.vendor == "postgresql":
                threading.Thread(target=self._listen, daemon=True, name="listen").start()
        try:
            while not self.stopping:
                self.kick.clear()
                was_running = self._running()
                try:
                    busy = self.step()
                except Exception as exc:
                    if self.inline:
                        raise
                    # The database went away or refused, or a bug: look again after the
                    # interval; what was claimed is taken up after its lease.
                    logger.exception("the worker's look at the database failed")
                    if isinstance(exc, DatabaseError):
                        connection.close()
                    self.kick.wait(max(self.interval, 1.0))
                    continue
                if busy:
                    continue
                if self.batch and not was_running and not self._running():
                    return  # nothing was under way, and nothing more is due
                self.kick.wait(self._idle_wait())
        finally:
            if self._executor is not None:
                self.stopping = True  # lanes give back what they have not started
                self._executor.shutdown(wait=True)
            self.pools.close()

    def stop(self) -> None:
        self.stopping = True
        self.kick.set()

    def step(self) -> bool:
        """Claim what there is room for and start it; run due jobs. Whether it did anything."""
        self._reap()
        did = False
        free = self.concurrency - len(self._lane_futures)
        if free > 0:
            lanes = deliveries_claim(
                worker=self.worker_id, lanes=free, new_lane=self._name, due_by=self._due_by
            )
            for lane in lanes:
                self._start(self._deliver, lane, self._lane_futures)
                did = True
        free = self.emails - len(self._email_futures)
        if free > 0:
            for email in emails_claim(worker=self.worker_id, limit=free, due_by=self._due_by):
                self._start(email_attempt, email, self._email_futures)
                did = True
        if self._jobs_due():
            did = self._run_jobs() or did
        return did

    def _name(self) -> str:
        # Unique across restarts under the same worker id: the caps count distinct lanes.
        return f"{self._run}.{next(self._lanes)}"

    def _deliver(self, lane: Lane) -> str:
        return lane_deliver(lane, self.pools.of(lane.endpoint_id), lambda: self.stopping)

    def _start(self, work: Callable[[Any], str], item: Any, futures: set[Future[str]]) -> None:
        if self._executor is None:
            work(item)
            return
        future = self._executor.submit(self._guarded, work, item)
        futures.add(future)
        future.add_done_callback(lambda _: self.kick.set())

    def _guarded(self, work: Callable[[Any], str], item: Any) -> str:
        try:
            text = work(item)
            logger.debug("%s", text)
            return text
        except Exception:
            # What it held stays `sending` until its lease runs out; the sweep takes it up.
            logger.exception("sending failed")
            connection.close()  # this thread's: a broken one is opened afresh next time
            return "error"

    def _reap(self) -> None:
        for futures in (self._lane_futures, self._email_futures):
            for future in [f for f in futures if f.done()]:
                futures.discard(future)

    def _running(self) -> bool:
        self._reap()
        return bool(self._lane_futures or self._email_futures)

    def _idle_wait(self) -> float:
        """Until the next retry falls due, a notification, a lane's end, or the interval."""
        wait = self.interval
        now = timezone.now()
        for due in (deliveries_next_due(), emails_next_due()):
            if due is not None:
                wait = min(wait, (due - now).total_seconds())
        return max(wait, MIN_WAIT)

    # -- jobs ------------------------------------------------------------------------------

    def _jobs_due(self) -> bool:
        now = time.monotonic()
        if self._heard or self.batch or now - self._jobs_checked >= min(self.interval, 1.0):
            self._heard = False
            self._jobs_checked = now
            return True
        return False

    def _run_jobs(self) -> bool:
        ran = False
        while not self.stopping:
            jobs = DBTaskResult.objects.ready().filter(backend_name="default")
            with exclusive_transaction(jobs.db):
                job = jobs.get_locked()
                if job is not None:
                    job.claim(self.worker_id)
            if job is None:
                return ran
            self._jobs.run_task(job)
            ran = True
        return ran

    # -- notifications -------------------------------------------------------------------------

    def _listen(self) -> None:
        import psycopg  # PostgreSQL only

        # As Django connects (host, credentials, sslmode, …), less what only its cursors use.
        params = connections["default"].get_connection_params()
        for name in ("cursor_factory", "context", "prepare_threshold"):
            params.pop(name, None)
        while not self.stopping:
            try:
                with psycopg.connect(**params, autocommit=True) as conn:
                    conn.execute(f"LISTEN {outbox.CHANNEL}")
                    self._wake()  # what was written while nobody listened
                    while not self.stopping:
                        for _ in conn.notifies(timeout=1.0):
                            self._wake()
            except Exception:
                logger.warning("the worker's LISTEN connection failed; reconnecting", exc_info=True)
                time.sleep(1)

    def _wake(self) -> None:
        self._heard = True
        self.kick.set()

    # -- signals ---------------------------------------------------------------------------

    def handle_signals(self) -> None:
        def shutdown(signum: int, frame: FrameType | None) -> None:
            if self.stopping:
                logger.warning("%s again: stopping at once", signal.strsignal(signum))
                os._exit(1)
            logger.warning(
                "%s: finishing the attempts under way (again to stop at once)",
                signal.strsignal(signum),
            )
            self.stop()

        for name in ("SIGINT", "SIGTERM", "SIGQUIT"):
            if hasattr(signal, name):
                signal.signal(getattr(signal, name), shutdown)
