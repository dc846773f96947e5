"""The background worker (`manage.py worker`): sends what the outbox holds.

One loop claims work in batches and hands it to a bounded pool of threads:

- webhook deliveries as lanes (services/webhooks/delivery.py: up to `lane_size()` deliveries of one
  endpoint, sent in turn over one kept-alive connection of the endpoint's pool), at most
  `concurrency` lanes at once, so a slow endpoint holds its own lanes and never the others';
- emails, at most `emails` at once.

It sleeps until there is something to do, and then looks only where there is:

- On PostgreSQL a LISTEN connection hears the NOTIFY each new outbox row sends in its
  transaction (`outbox.announce`), naming what was written: the worker claims deliveries when
  deliveries were announced, emails when emails were.
- Every `interval` seconds it takes a look of its own (SQLite: there is no NOTIFY, so that
  interval is short): when the next delivery and email fall due, and whether deliveries wait
  for room. It sleeps until the earliest of those, and of the retries its own lanes gave.
- A lane that ended claims again only when the room it leaves can be used: the last claim left
  due deliveries (its batch was full, or it had no lane free), or deliveries wait for room
  (held: this worker or another one announced it).
- A lane that has sent its deliveries looks for more of its endpoint's (keeping its place under
  the caps) only when deliveries were announced since it last looked, or its claim left some.
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

from django.db import DatabaseError, connection
from django.utils import timezone

from beliefs.selectors import postgres
from beliefs.services import outbox
from beliefs.services.notify import email_attempt, emails_claim, emails_next_due
from beliefs.services.outbox import DELIVERIES, EMAILS, HELD
from beliefs.services.webhooks.delivery import (
    Lane,
    Pools,
    deliveries_claim,
    deliveries_outlook,
    lane_deliver,
)

logger = logging.getLogger("beliefs.worker")

# Without a notification, a look at the database at least this often (seconds).
SQLITE_INTERVAL = 0.1
POSTGRES_INTERVAL = 2.0
# Never look again sooner than this when something due could not be taken (another worker is
# claiming it right now).
MIN_WAIT = 0.02
# A notification that names nothing this worker knows (from a process of another version):
# look everywhere.
ANYTHING = "*"
KNOWN = frozenset({DELIVERIES, EMAILS, HELD})


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
        self._lane_futures: dict[Future[str], Lane] = {}
        self._email_futures: set[Future[str]] = set()
        self._executor: ThreadPoolExecutor | None = None
        self._due_by: datetime | None = None
        # What the notifications named since the loop last took them (under `_heard_lock`),
        # and how many named deliveries, ever (a lane compares it with what it saw last).
        self._heard_lock = threading.Lock()
        self._heard: set[str] = {ANYTHING}  # at the start, everything may be waiting
        self._deliveries_heard = 0
        self._look_at = 0.0  # the next look of its own (monotonic)
        # The earliest time something of each kind falls due, as far as this worker knows
        # (None: nothing known; its next look finds out).
        self._due: dict[str, datetime | None] = {DELIVERIES: None, EMAILS: None}
        # Kinds whose last claim may have left something claimable now.
        self._left: set[str] = set()
        self._held = False  # deliveries wait for room: whenever a lane ends, claim again
        self._lane_ended = False

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
                    with self._heard_lock:  # what it was about to look at, and the rest
                        self._heard.add(ANYTHING)
                    self.kick.wait(max(self.interval, 1.0))
                    continue
                if busy:
                    continue
                if self.batch and not was_running and not self._running():
                    return  # nothing was under way, and nothing more is due
                self.kick.wait(self.idle_wait())
        finally:
            if self._executor is not None:
                self.stopping = True  # lanes give back what they have not started
                self._executor.shutdown(wait=True)
            self.pools.close()

    def stop(self) -> None:
        self.stopping = True
        self.kick.set()

    def step(self) -> bool:
        """Claim what there is room for and start it, where something may be waiting.
        Whether it did anything."""
        self._reap()
        lane_ended, self._lane_ended = self._lane_ended, False
        with self._heard_lock:
            heard, self._heard = self._heard, set()
        if HELD in heard:
            self._held = True
        everything = self.batch or ANYTHING in heard
        looked = everything or time.monotonic() >= self._look_at
        if looked:
            self._look()
        now = timezone.now()
        did = False
        if (
            everything
            or DELIVERIES in heard
            or self._may_claim(DELIVERIES, now)
            or (self._held and (lane_ended or looked))
        ):
            did = self._claim_deliveries(now)
        if everything or EMAILS in heard or self._may_claim(EMAILS, now):
            did = self._claim_emails(now) or did
        return did

    def _may_claim(self, kind: str, now: datetime) -> bool:
        """Whether the last claim left some of this kind, or something is known to be due."""
        due = self._due[kind]
        return kind in self._left or (due is not None and due <= now)

    def _look(self) -> None:
        """The worker's own look, the backstop for whatever it did not hear: when the next
        delivery and email fall due, and whether deliveries wait for room."""
        self._look_at = time.monotonic() + self.interval
        if self.batch:
            return  # it claims everything at every step
        outlook = deliveries_outlook()
        self._due[DELIVERIES] = outlook.next_due
        self._held = outlook.held
        self._due[EMAILS] = emails_next_due()

    def _claim_deliveries(self, now: datetime) -> bool:
        free = self.concurrency - len(self._lane_futures)
        if free <= 0:
            self._left.add(DELIVERIES)  # claimed when one of its lanes ends
            return False
        heard = self._deliveries_heard  # before the claim reads: what it may not have seen
        claim = deliveries_claim(
            worker=self.worker_id, lanes=free, new_lane=self._name, due_by=self._due_by
        )
        self._left.discard(DELIVERIES)
        if claim.lanes and (not claim.complete or len(claim.lanes) >= free):
            self._left.add(DELIVERIES)  # more may be due: claimed at once, or as a lane ends
        self._held = claim.held or (self._held and not claim.complete)
        due = self._due[DELIVERIES]
        if (claim.complete or not claim.lanes) and due is not None and due <= now:
            # Taken, being taken by another worker, or waiting for room (held).
            self._due[DELIVERIES] = None
        for lane in claim.lanes:
            if not self.batch:  # a batch run looks for more at every lane's end
                lane.renew = self._renewal(lane, heard)
            self._start(lane)
        return bool(claim.lanes)

    def _renewal(self, lane: Lane, heard: int) -> Callable[[], bool]:
        """A lane's `renew`: whether its endpoint may have more due now than it saw when it
        last read (deliveries announced since, or left by its claim, or waiting for room, or a
        retry falling due)."""
        seen = [heard]

        def renew() -> bool:
            current = self._deliveries_heard
            announced, seen[0] = current != seen[0], current
            due = self._due[DELIVERIES]
            return (
                announced
                or lane.backlog
                or self._held
                or (due is not None and due <= timezone.now())
            )

        return renew

    def _claim_emails(self, now: datetime) -> bool:
        free = self.emails - len(self._email_futures)
        if free <= 0:
            self._left.add(EMAILS)
            return False
        emails = emails_claim(worker=self.worker_id, limit=free, due_by=self._due_by)
        self._left.discard(EMAILS)
        if len(emails) >= free:
            self._left.add(EMAILS)  # perhaps more: claimed when one of these is sent
        due = self._due[EMAILS]
        if len(emails) < free and due is not None and due <= now:
            self._due[EMAILS] = None
        for email in emails:
            self._start_email(email)
        return bool(emails)

    def _name(self) -> str:
        # Unique across restarts under the same worker id: the caps count distinct lanes.
        return f"{self._run}.{next(self._lanes)}"

    def _deliver(self, lane: Lane) -> str:
        return lane_deliver(lane, self.pools.of(lane.endpoint_id), lambda: self.stopping)

    def _start(self, lane: Lane) -> None:
        if self._executor is None:
            self._deliver(lane)
            self._ended(lane)
            return
        future = self._executor.submit(self._guarded, self._deliver, lane)
        self._lane_futures[future] = lane
        future.add_done_callback(lambda _: self.kick.set())

    def _start_email(self, email: Any) -> None:
        if self._executor is None:
            email_attempt(email)
            return
        future = self._executor.submit(self._guarded, email_attempt, email)
        self._email_futures.add(future)
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

    def _ended(self, lane: Lane) -> None:
        """A lane ended: its room is free, and the worker wakes for the earliest retry it
        gave."""
        self._lane_ended = True
        if lane.retry_at is not None:
            due = self._due[DELIVERIES]
            self._due[DELIVERIES] = lane.retry_at if due is None else min(due, lane.retry_at)

    def _reap(self) -> None:
        for future in [f for f in self._lane_futures if f.done()]:
            self._ended(self._lane_futures.pop(future))
        self._email_futures.difference_update([f for f in self._email_futures if f.done()])

    def _running(self) -> bool:
        self._reap()
        return bool(self._lane_futures or self._email_futures)

    def idle_wait(self) -> float:
        """Until the next retry falls due, a notification, a lane's end, or the next look."""
        wait = self._look_at - time.monotonic()
        now = timezone.now()
        room = {
            DELIVERIES: len(self._lane_futures) < self.concurrency,
            EMAILS: len(self._email_futures) < self.emails,
        }
        for kind, due in self._due.items():
            if due is not None and room[kind]:
                wait = min(wait, (due - now).total_seconds())
        return max(wait, MIN_WAIT)

    # -- notifications -------------------------------------------------------------------------

    def _listen(self) -> None:
        import psycopg  # PostgreSQL only

        params = postgres.listening_params()
        while not self.stopping:
            try:
                with psycopg.connect(**params, autocommit=True) as conn:
                    postgres.listen(conn, outbox.CHANNEL)
                    self.hear(ANYTHING)  # what was written while nobody listened
                    while not self.stopping:
                        for notice in conn.notifies(timeout=1.0):
                            self.hear(notice.payload)
            except Exception:
                logger.warning("the worker's LISTEN connection failed; reconnecting", exc_info=True)
                time.sleep(1)

    def hear(self, what: str) -> None:
        """A notification named `what` (an `outbox.announce` payload): wake the loop, which
        looks there."""
        with self._heard_lock:
            self._heard.add(what if what in KNOWN else ANYTHING)
            if what == DELIVERIES or what not in KNOWN:
                self._deliveries_heard += 1
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
