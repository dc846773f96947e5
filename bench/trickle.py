"""`make bench`'s "webhooks at a trickle" rows: what one worker spends per delivery when events
come one at a time, as people's clicks make them.

A `manage.py worker` (the sweep off, as in the one-worker row) serves one endpoint of a fast
receiver on loopback (in this process, verifying every signature). Events are committed one at
a time, each in its own transaction (`send_test_event`), at a steady RATE; the figures cover
that window, from before the first commit until the last delivery is recorded as succeeded:

- the worker process's CPU (all its threads, from /proc ticks) per delivery;
- the statements the worker sent (its Django connections, counted by an execute wrapper the
  worker is started with: `bench/counting`) and the transactions that ran any, per delivery;
- on PostgreSQL, the CPU of the worker's own database connections per delivery;
- from each event's commit to its webhook's arrival at the receiver (p50, p90).

With `--against PATH` (a checkout of another version, e.g. `git archive main | tar -x -C
/tmp/main`, on the same database schema) that version's worker is measured too, in turns with
this one (A, B, A, B), and each figure reads "this vs that". A figure to compare, never a test.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import counted, counting_env, database_pids, local_endpoint, percentile

ROOT = Path(__file__).resolve().parents[1]
GROUP = "webhooks at a trickle (one worker)"
RATE = 30.0  # events per second, one transaction each: about what 1,000 clicking people make
EVENTS = 600  # per measured version (--quick: QUICK_EVENTS), split over ROUNDS turns
QUICK_EVENTS = 200
ROUNDS = 2
WARM_EVENTS = 10  # sent and delivered before each turn's window opens
CPU_GOAL_MS = 5.0
TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class Turn:
    deliveries: int = 0
    worker_ticks: int = 0
    database_ticks: int = 0
    statements: int = 0
    transactions: int = 0
    latencies: list[float] = field(default_factory=list)  # seconds, commit → arrival


def _cpu_ticks(pids: Sequence[int]) -> dict[int, int]:
    found = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        found[pid] = int(fields[11]) + int(fields[12])  # utime, stime
    return found


def _wait(done: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise RuntimeError(f"waited {timeout:g} s for {what}")
        time.sleep(0.02)


def run_turn(root: Path, events: int) -> Turn:
    """One worker of the checkout at `root`, `events` committed at RATE; its figures."""
    from beliefs.models import WebhookDelivery
    from beliefs.services.audit import SYSTEM
    from beliefs.services.webhooks.events import send_test_event
    from demo.receiver import Receiver

    endpoint, port = local_endpoint("bench-trickle")
    arrived: dict[str, float] = {}
    lock = threading.Lock()

    def on_event(item: Any) -> None:
        with lock:
            arrived.setdefault(item.headers.get("webhook-id", ""), time.monotonic())

    counts = Path(tempfile.mkdtemp(prefix="bench-trickle-"))
    env = {**os.environ, "CONSOLE_WEBHOOK_ALLOW_PRIVATE": "true", **counting_env(counts)}
    command = [sys.executable, "manage.py", "worker", "--worker-id=trickle",
               "--no-startup-delay", "--sweep-interval=0"]  # fmt: skip
    succeeded = WebhookDelivery.objects.filter(endpoint=endpoint, state="succeeded")

    def send() -> tuple[str, float]:
        event = send_test_event(endpoint=endpoint, actor=SYSTEM)
        return event.webhook_id, time.monotonic()

    turn = Turn()
    with Receiver(endpoint.secret, port=port, on_event=on_event):
        worker = subprocess.Popen(command, cwd=root, env=env, stdout=subprocess.DEVNULL)
        try:
            for n in range(WARM_EVENTS):  # imports, connections, the kept HTTP connection
                send()
                _wait(lambda n=n: succeeded.count() > n, 60, "the worker to deliver")
                time.sleep(1 / RATE)
            time.sleep(2.5)  # past the worker's first periodic look
            database = database_pids()
            statements, transactions = counted(counts)
            cpu = _cpu_ticks([worker.pid])[worker.pid]
            db_cpu = _cpu_ticks(database)
            committed: dict[str, float] = {}
            started = time.monotonic()
            for n in range(events):
                pause = started + n / RATE - time.monotonic()
                if pause > 0:
                    time.sleep(pause)
                webhook_id, at = send()
                committed[webhook_id] = at
            total = WARM_EVENTS + events
            _wait(lambda: succeeded.count() >= total, 120, "every delivery")
            turn.worker_ticks = _cpu_ticks([worker.pid])[worker.pid] - cpu
            database = sorted(set(database) | set(database_pids()))
            turn.database_ticks = sum(
                ticks - db_cpu.get(pid, 0) for pid, ticks in _cpu_ticks(database).items()
            )
            now_statements, now_transactions = counted(counts)
            turn.statements = now_statements - statements
            turn.transactions = now_transactions - transactions
            turn.deliveries = events
            with lock:
                turn.latencies = [arrived[i] - at for i, at in committed.items() if i in arrived]
        finally:
            worker.terminate()
            worker.wait(timeout=60)
    endpoint.delete()
    return turn


@dataclass
class Totals:
    turns: list[Turn] = field(default_factory=list)

    def per_delivery(self, name: str) -> float:
        deliveries = sum(t.deliveries for t in self.turns)
        return sum(getattr(t, name) for t in self.turns) / max(deliveries, 1)

    def cpu_ms(self, name: str) -> float:
        return self.per_delivery(name) * 1000 / TICKS

    def latencies(self) -> list[float]:
        return [v for t in self.turns for v in t.latencies]


def _row(
    figure: str, value: str, ratio: float | None, goal: str, holds: bool | None
) -> dict[str, Any]:
    return {"group": GROUP, "figure": figure, "value": value, "ratio": ratio, "goal": goal,
            "holds": holds}  # fmt: skip


def _pair(mine: float, theirs: float | None, unit: str) -> tuple[str, float | None]:
    """ "1.2 ms" or "1.2 ms vs 9.8 ms" and their ratio."""
    if theirs is None:
        return f"{mine:.1f}{unit}", None
    return f"{mine:.1f}{unit} vs {theirs:.1f}{unit}", (mine / theirs if theirs else None)


def _spread(total: Totals) -> str:
    ms = [v * 1000 for v in total.latencies()]
    if not ms:
        return "none arrived"
    return f"p50 {percentile(ms, 50):.1f} ms, p90 {percentile(ms, 90):.1f} ms, n {len(ms):,}"


def measure(*, quick: bool, against: Path | None, progress: Any) -> list[dict[str, Any]]:
    """The group's rows: this checkout's worker, and the one at `against` in turns with it."""
    from django.db import connection

    postgres = connection.vendor == "postgresql"
    events = (QUICK_EVENTS if quick else EVENTS) // ROUNDS
    versions = {"this": ROOT, **({"that": against} if against else {})}
    totals = {name: Totals() for name in versions}
    for turn in range(ROUNDS):
        for name, root in versions.items():
            progress(
                f"trickle, turn {turn + 1} of {ROUNDS}: {events} events at {RATE:g}/s ({root})"
            )
            totals[name].turns.append(run_turn(root, events))
    mine, theirs = totals["this"], totals.get("that")
    which = f"{RATE:g} events/s" + ("; this vs --against" if theirs else "")
    cpu = mine.cpu_ms("worker_ticks")
    value, ratio = _pair(cpu, theirs.cpu_ms("worker_ticks") if theirs else None, " ms")
    goal = f"≤ {CPU_GOAL_MS:g} ms on PostgreSQL"
    rows = [
        _row(f"worker CPU per delivery ({which})", value, ratio, goal,
             cpu <= CPU_GOAL_MS if postgres else None),
    ]  # fmt: skip
    statements, ratio = _pair(
        mine.per_delivery("statements"), theirs.per_delivery("statements") if theirs else None, ""
    )
    transactions, _ = _pair(
        mine.per_delivery("transactions"),
        theirs.per_delivery("transactions") if theirs else None,
        "",
    )
    rows.append(
        _row(f"statements (transactions) per delivery ({which})",
             f"{statements} ({transactions})", ratio, "", None)
    )  # fmt: skip
    if postgres:
        value, ratio = _pair(
            mine.cpu_ms("database_ticks"),
            theirs.cpu_ms("database_ticks") if theirs else None,
            " ms",
        )
        rows.append(
            _row(f"PostgreSQL CPU per delivery, the worker's connections ({which})", value,
                 ratio, "", None)
        )  # fmt: skip
    rows.append(
        _row(f"commit → webhook arrives ({RATE:g} events/s)", _spread(mine), None, "", None)
    )
    if theirs is not None:
        rows.append(
            _row(f"commit → webhook arrives ({RATE:g} events/s), --against", _spread(theirs),
                 None, "", None)
        )  # fmt: skip
    return rows
