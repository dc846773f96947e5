"""`make bench`'s "one whole approval" rows: what one approval costs the servers, open to webhook.

Against the production command (`make serve`: uvicorn in 2 processes) and one `manage.py
worker`, on the benchmark's database, approvals start at a steady RATE, each one a whole
journey over real HTTP:

1. the agent opens an instance (one slot, carried into a blocking CONFIRM) and plans it, then
   waits for it (`Prefer: wait`, from its ETag);
2. the person opens the instance's page and clicks Confirm (the page's own form post, htmx's
   request, with the session and CSRF token);
3. the agent's wait returns `ready`, and the worker delivers the `instance.ready` webhook to a
   receiver on loopback.

Over the window from the first start to the last webhook the rows give, per approval: the CPU of
the server processes, the worker and (PostgreSQL) the database's own processes serving their
connections, from /proc; and the SQL statements and the transactions that sent any, counted in
every one of those processes (`bench/counting`). A figure to compare, never a test.

With `--against PATH` (a checkout of the version before, e.g. `git archive <commit> | tar -x -C
/tmp/before`, on the same database schema) that version's servers and worker are measured too,
in turns with this one's (A, B, A, B, each turn its own servers and its share of the
approvals), and the CPU row reads "this vs that" with its ratio, held to the goal of halving
it (issue 46: ≤ 0.5× of the version before).
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import counted, counting_env, database_pids
from bench.longpoll import (
    ROOT,
    Bench,
    Browser,
    Person,
    Row,
    _cpu_ticks,
    _csrf,
    _people,
    _progress_,
    ready_receiver,
    servers,
)

GROUP = "one whole approval (make serve, 2 processes; one worker)"
RATE = 10.0  # approvals started a second
APPROVALS = 300
QUICK_APPROVALS = 100
WARM = 10  # approvals before the window opens: imports, connections, caches
ROUNDS = 2  # turns of each version with --against (one turn without)
HALVED = 0.5  # the goal with --against: this version's CPU per approval against the other's
TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class Window:
    approvals: int
    seconds: float
    server_ms: float  # CPU milliseconds, all in the window
    worker_ms: float
    database_ms: float
    statements: int
    transactions: int
    failed: list[str]

    @classmethod
    def total(cls, windows: list[Window]) -> Window:
        """One version's turns as one window."""
        return cls(
            sum(w.approvals for w in windows),
            sum(w.seconds for w in windows),
            sum(w.server_ms for w in windows),
            sum(w.worker_ms for w in windows),
            sum(w.database_ms for w in windows),
            sum(w.statements for w in windows),
            sum(w.transactions for w in windows),
            [f for w in windows for f in w.failed],
        )

    @property
    def done(self) -> int:
        """The approvals that succeeded (at least 1: what the figures are divided by)."""
        return max(self.approvals - len(self.failed), 1)

    def per_approval(self) -> float:
        """Milliseconds of CPU (servers, worker and database) per approval that succeeded."""
        return (self.server_ms + self.worker_ms + self.database_ms) / self.done


def measure(bench: Bench, quick: bool, against: Path | None = None) -> list[dict[str, Any]]:
    """The rows of GROUP (each the fields of a `bench.main.Row`), on the child's database: of
    this checkout, and in turns with it the one at `against`."""
    for noisy in ("httpx", "axes"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    bench.task_class("bench.approval", 1)
    count = QUICK_APPROVALS if quick else APPROVALS
    versions = {"this": ROOT, **({"that": against} if against else {})}
    rounds = ROUNDS if against else 1
    # Few enough approvals a person that none becomes a habit the console raises friction for
    # (CONSOLE_HABIT_WINDOW confirmations of under 2 s): a person confirms one in 10.
    turns = rounds * len(versions)
    people = _people(bench, -(-(count * len(versions) + WARM * turns) // 10), prefix="approving")
    arrived: dict[str, threading.Event] = {}
    lock = threading.Lock()

    def on_event(item: Any) -> None:
        if item.event is not None and item.event.get("type") == "instance.ready":
            with lock:
                arrived.setdefault(item.event["data"]["instance_id"], threading.Event()).set()

    windows: dict[str, list[Window]] = {name: [] for name in versions}
    if against:  # its pages need its own static files (this checkout's the child collected)
        subprocess.run(
            [sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"],
            cwd=against,
            env={**os.environ, "STATIC_ROOT": str(against / "staticfiles")},
            check=True,
        )
    receiver = ready_receiver(bench, on_event)
    started = 0  # approvals started so far: each turn's people are the next ones in line
    share = count // rounds
    try:
        for turn in range(rounds):
            for name, root in versions.items():
                if against:
                    _progress_(f"turn {turn + 1} of {rounds}: {root}")
                counts = Path(tempfile.mkdtemp(prefix="bench-approval-"))
                with servers(extra_env=counting_env(counts), root=root) as running:
                    window = asyncio.run(
                        _run(bench, running, people, share, started, arrived, lock, counts)
                    )  # fmt: skip
                started += share + WARM
                windows[name].append(window)
    finally:
        receiver.stop()
    mine = Window.total(windows["this"])
    theirs = Window.total(windows["that"]) if against else None
    return _rows(bench, mine, theirs)


async def _run(
    bench: Bench,
    running: Any,
    people: list[Person],
    count: int,
    first: int,
    arrived: dict[str, threading.Event],
    lock: threading.Lock,
    counts: Path,
) -> Window:
    import httpx

    browser = Browser(running.base)
    agent = httpx.AsyncClient(
        base_url=running.base,
        timeout=60,
        headers={"Authorization": f"Api-Key {bench.raw_key}"},
        limits=httpx.Limits(max_connections=None, max_keepalive_connections=50),
    )
    pages = httpx.AsyncClient(base_url=running.base, timeout=60)
    failed: list[str] = []

    def ready(instance_id: str) -> threading.Event:
        with lock:
            return arrived.setdefault(instance_id, threading.Event())

    async def one(n: int) -> None:
        person = people[n % len(people)]
        try:
            opened = await agent.post(
                "/api/v1/instances/",
                json={
                    "task_class": "bench.approval",
                    "principal": person.username,
                    "beliefs": [{"slot": "s000", "value": f"value {n}", "source": "tool"}],
                },
            )
            assert opened.status_code == 201, opened.text
            instance_id = opened.json()["id"]
            path = f"/api/v1/instances/{instance_id}/"
            planned = await agent.post(f"{path}plan/")
            assert planned.status_code == 200, planned.text
            # The plan's answer carries no ETag: the agent reads the instance once for it.
            tag = (await agent.get(path)).headers["ETag"]
            waiting = asyncio.create_task(_until_ready(agent, path, tag))
            page = await pages.get(
                f"/instances/{instance_id}/", headers={"Cookie": person.cookie()}
            )
            assert page.status_code == 200, page.status_code
            (prompt,) = [i["prompt"] for i in planned.json()["items"] if i["prompt"]]
            form = {
                "csrfmiddlewaretoken": person.csrf_token,
                "version": str(prompt["version"]),
                "action": "confirm",
            }
            answer = f"/instances/{instance_id}/prompts/{prompt['id']}/respond/"
            status = await browser.post(person, answer, form)
            assert status == 200, status
            await waiting
            event = ready(instance_id)
            await asyncio.to_thread(event.wait, 60)
            assert event.is_set(), "no instance.ready webhook"
        except Exception as exc:  # noqa: BLE001 - counted and shown, the run goes on
            failed.append(f"{n}: {exc!r}"[:300])

    try:
        for person in people:
            await _csrf(pages, person)
        _progress_(f"{WARM} approvals to warm up")
        await asyncio.gather(*(one(first + n) for n in range(WARM)))
        failed.clear()  # the window's own failures only
        await asyncio.sleep(1)
        server_pids = running.pids()
        worker_pid = running.processes[1].pid
        database = _blocking(database_pids)
        statements, transactions = counted(counts)
        before = _ticks(server_pids, [worker_pid], database)
        _progress_(f"{count} approvals, {RATE:g} a second")
        started = time.monotonic()
        tasks = []
        for n in range(count):
            pause = started + n / RATE - time.monotonic()
            if pause > 0:
                await asyncio.sleep(pause)
            tasks.append(asyncio.create_task(one(first + WARM + n)))
        await asyncio.gather(*tasks)
        seconds = time.monotonic() - started
        database = sorted(set(database) | set(_blocking(database_pids)))
        after = _ticks(server_pids, [worker_pid], database)
        now_statements, now_transactions = counted(counts)
    finally:
        await agent.aclose()
        await pages.aclose()
        browser.close()
    server_ms, worker_ms, database_ms = (
        1000 * (a - b) / TICKS for a, b in zip(after, before, strict=True)
    )
    return Window(
        count,
        seconds,
        server_ms,
        worker_ms,
        database_ms,
        now_statements - statements,
        now_transactions - transactions,
        failed,
    )


async def _until_ready(agent: Any, path: str, tag: str) -> None:
    """The agent's wait, as the client's `wait()` does it: a long-poll from the ETag it holds,
    again from each new one (the person's opening of the page changes the instance too), until
    the instance is ready."""
    while True:
        woken = await agent.get(path, headers={"If-None-Match": tag, "Prefer": "wait=30"})
        if woken.status_code == 200:
            status = woken.json()["status"]
            if status == "ready":
                return
            assert status == "awaiting_user", status
            tag = woken.headers["ETag"]
        else:
            assert woken.status_code == 304, woken.text


def _blocking(read: Any) -> Any:
    """`read()`, a quick query of the bench's own connection, from the event loop: it blocks
    the loop for a moment, between two approvals' requests, where a thread would read through
    a connection of its own (another of the database's processes)."""
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        return read()
    finally:
        del os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"]


def _ticks(servers: list[int], worker: list[int], database: list[int]) -> tuple[int, int, int]:
    return _cpu_ticks(servers), _cpu_ticks(worker), _cpu_ticks(database)


def _cpu(bench: Bench, window: Window) -> str:
    if window.failed:
        _progress_(f"{len(window.failed)} approvals failed, e.g. {window.failed[:3]}")
    n = window.done
    rate = window.approvals / window.seconds
    cpu = (
        f"{window.per_approval():.1f} ms: servers {window.server_ms / n:.1f}, "
        f"worker {window.worker_ms / n:.1f}"
    )
    if bench.postgres:
        cpu += f", PostgreSQL {window.database_ms / n:.1f}"
    suffix = f" ({rate:.1f} approvals/s, {window.approvals:,}"
    return cpu + suffix + (f"; {len(window.failed)} failed)" if window.failed else ")")


def _statements(window: Window) -> str:
    n = window.done
    return f"{window.statements / n:.1f} ({window.transactions / n:.1f})"


def _rows(bench: Bench, mine: Window, theirs: Window | None) -> list[dict[str, Any]]:
    """The CPU and the statements of one approval; with another version, each "this vs that",
    the CPU's ratio held to HALVED."""
    cpu_figure = "CPU of one approval, open → webhook"
    statements_figure = "SQL statements (transactions) of one approval, open → webhook"
    if theirs is None:
        return [
            Row(GROUP, cpu_figure, _cpu(bench, mine), None, "", None),
            Row(GROUP, statements_figure, _statements(mine), None, "", None),
        ]
    ratio = mine.per_approval() / theirs.per_approval() if theirs.per_approval() else None
    return [
        Row(
            GROUP,
            f"{cpu_figure}, this vs --against",
            f"{_cpu(bench, mine)} vs {_cpu(bench, theirs)}",
            ratio,
            f"≤ {HALVED:g}× of --against",
            None if ratio is None else ratio <= HALVED,
        ),
        Row(
            GROUP,
            f"{statements_figure}, this vs --against",
            f"{_statements(mine)} vs {_statements(theirs)}",
            None,
            "",
            None,
        ),
    ]
