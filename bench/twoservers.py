"""`make bench`'s "two app servers" rows: a company's deployment of more than one app server.

Two `make serve` instances (`console.serve`, uvicorn in 2 processes each) on ports of their own
and two `manage.py worker` processes, all on the benchmark's one database, measured from
outside over real HTTP:

1. AGENTS agents (QUICK_AGENTS with --quick) open an instance each and plan it, half on each
   server, and wait (`wait()`) on the server they opened on.
2. Each agent's person thinks for a time drawn from THINK_SECONDS and clicks Confirm through the
   *other* server (the page's own form post, as in the "agents waiting" rows), so every answer
   has to reach its agent across servers (PostgreSQL's NOTIFY; on SQLite, the machine's
   datagram broadcast between processes).
3. From the click: the agent's `wait()` returning, and the `instance.ready` webhook arriving at a
   receiver on loopback through either worker. Every webhook is counted by its `webhook-id`:
   none may arrive twice, none may be missing.

A figure to compare, never a test (`tests/servers/test_two_servers.py` is the test).
"""

from __future__ import annotations

import asyncio
import logging
import random
import signal
import sys
import time
from collections import Counter
from contextlib import ExitStack
from typing import Any

from bench.agents import CLASS
from bench.common import percentile
from bench.longpoll import (
    GOAL_TEXT,
    Agent,
    Bench,
    Browser,
    Crowd,
    Person,
    Row,
    _click,
    _csrf,
    _people,
    _progress_,
    _spread,
    ready_receiver,
    servers,
    within_goal,
)

GROUP = "two app servers (2 × make serve, 2 workers, one database)"
AGENTS = 200
QUICK_AGENTS = 60
THINK_SECONDS = (2.0, 20.0)
# The agents start waiting one after another over this long, then the people begin to think.
ARM_SECONDS = 5.0


def measure(bench: Bench, quick: bool) -> list[dict[str, Any]]:
    """The rows of GROUP (each the fields of a `bench.main.Row`), measured on the child's
    database."""
    from beliefs.models import TaskClass

    for noisy in ("httpx", "axes"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    count = QUICK_AGENTS if quick else AGENTS
    if not TaskClass.objects.filter(key=CLASS).exists():
        bench.task_class(CLASS, 1)
    people = _people(bench, max(2, -(-count // 40)), prefix="two-servers")
    arrivals: Counter[str] = Counter()
    hooked: dict[str, float] = {}

    def arrived(item: Any) -> None:
        if item.event is None:
            return
        arrivals[item.headers.get("webhook-id", "")] += 1
        if item.event.get("type") == "instance.ready":
            hooked.setdefault(item.event["data"]["instance_id"], time.monotonic())

    receiver = ready_receiver(bench, arrived)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    try:
        with ExitStack() as stack:
            running = [stack.enter_context(servers(worker_id=f"bench-{n}")) for n in (1, 2)]
            bases = [r.base for r in running]
            agents = asyncio.run(_run(bench, bases, people, count, hooked))
            # The last deliveries, and any second copy on its way, before the workers stop.
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not all(
                a.instance_id in hooked for a in agents if a.instance_id
            ):
                time.sleep(0.05)
            time.sleep(1)
    finally:
        receiver.stop()
    return _rows(bench, agents, hooked, arrivals)


async def _run(
    bench: Bench, bases: list[str], people: list[Person], count: int, hooked: dict[str, float]
) -> list[Agent]:
    import httpx

    agents = [Agent(n=n, person=n % len(people)) for n in range(count)]
    browsers = [Browser(base) for base in bases]
    # Two processes of agents, the first on the first server, the second on the second: agent n
    # is in process n % 2, so it waits on bases[n % 2].
    crowd = await Crowd.start(bases, bench.raw_key, 2)
    try:
        async with httpx.AsyncClient(base_url=bases[0], timeout=60) as pages:
            for person in people:
                await _csrf(pages, person)
        _progress_(f"{count:,} agents open and plan, half on each server")
        await crowd.open(agents, people)
        _progress_("they wait on their server; each person clicks on the other")
        ready = [a for a in agents if a.prompt_path and not a.error]
        await crowd.arm(ARM_SECONDS, 1)
        rng = random.Random(22)
        clicks = [
            asyncio.create_task(
                _click(
                    browsers[1 - agent.n % 2],  # the other server than the one it waits on
                    agent,
                    people[agent.person],
                    rng.uniform(*THINK_SECONDS),
                    hooked,
                )
            )
            for agent in ready
        ]
        await asyncio.gather(*clicks)
        await crowd.finish(ready, timeout=60)
    finally:
        await crowd.close()
        for browser in browsers:
            browser.close()
    return agents


def _rows(
    bench: Bench, agents: list[Agent], hooked: dict[str, float], arrivals: Counter[str]
) -> list[dict[str, Any]]:
    total = len(agents)
    failed = [a.error for a in agents if a.error]
    if failed:
        _progress_(f"{len(failed)} agents failed, e.g. {failed[:3]}")
    answered = [a for a in agents if not a.error and a.resumed]
    resumed = [a.resumed - a.clicked for a in answered]
    webhook = [hooked[a.instance_id] - a.clicked for a in answered if a.instance_id in hooked]
    rows = []
    for figure, values in (
        ("click on one server → the agent's wait() returns on the other", resumed),
        ("click → instance.ready webhook arrives (either worker)", webhook),
    ):
        holds = (
            len(values) == total
            and bool(values)
            and within_goal(bench.postgres, percentile(values, 50), percentile(values, 90))
        )
        value = _spread(values) if values else "none"
        if len(values) != total:
            value += f" ({total - len(values):,} of {total:,} never)"
        rows.append(Row(GROUP, f"{figure}, {total:,} agents", value, None, GOAL_TEXT, holds))
    twice = sum(1 for n in arrivals.values() if n > 1)
    lost = sum(1 for a in agents if a.instance_id and a.instance_id not in hooked)
    rows.append(
        Row(
            GROUP,
            "instance.ready webhooks: arrived once, twice, never",
            f"{sum(1 for n in arrivals.values() if n == 1):,} once, {twice} twice,"
            f" {lost} never (of {total:,})",
            None,
            "each exactly once",
            twice == 0 and lost == 0 and len(arrivals) == total,
        )
    )
    return rows
