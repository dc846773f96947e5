"""`make bench`'s "agents waiting" rows: the agent resumes the moment the person answers.

Measured from outside, over real HTTP, against the production command (`make serve`:
`console.serve`, uvicorn in 2 processes) and a real `manage.py worker` delivering webhooks to a
receiver on loopback, all on the benchmark's database:

1. A thousand agents (200 with --quick, N with --agents N; the "many" rows 10,000, 2,000 with
   --quick) open an instance each and plan it (the client, `AsyncConsole`), then wait with
   `wait()`. They run in processes of their own (`bench.agents`, AGENTS_PER_PROCESS each and
   at least 2), so that no one event loop is the limit. The authenticated read's requests/s
   (wrk, as the requests/s rows but with RATE_CONNECTIONS connections) is taken in rounds that
   alternate, on the same servers and the same database: none waiting, all waiting, none
   waiting, ... (RATE_ROUNDS rounds while they wait, each compared with the idle rounds on
   either side of it), so that the machine's own drift, which moves the same read by up to 2x
   within a minute here, falls on both sides. The agents start waiting spread over one
   long-poll period (ARM_SECONDS), so that their renewals come as steadily as in a long wait,
   and stop waiting by dropping their requests (the servers end a wait whose client went
   away). The server processes' memory is read before the agents come and once they all wait.
2. Each agent's person (at most CLICKS of them, spread over the agents) opens the instance's
   page, thinks for a time drawn from 2 to 30 s, and clicks Confirm: the page's own form post
   (`POST /instances/{id}/prompts/{n}/respond/`, htmx's request, with the session and CSRF
   token of a signed-in person). From the click: the answer recorded (the post's answer), the
   `instance.ready` webhook arriving at the receiver, and the agent's `wait()` returning.

A figure to compare, never a test.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median
from typing import Any
from urllib.parse import urlencode, urlsplit

from bench.agents import CLASS
from bench.common import free_port, percentile

# `bench.main.Bench`, which calls this module (typed loosely: the import would be a cycle).
Bench = Any

ROOT = Path(__file__).resolve().parents[1]
GROUP = "agents waiting (make serve: uvicorn, 2 processes)"
MANY_GROUP = "many agents waiting (make serve: uvicorn, 2 processes; the agents in several)"
PROCESSES = 2
AGENTS = 1_000
# --quick: fewer agents, thinking as long (a shorter think with as many agents would click
# faster than people do, and measure a burst instead).
QUICK_AGENTS = 200
# The many-agents rows (`--only many`), held to the memory goal as well.
MANY_AGENTS = 10_000
QUICK_MANY_AGENTS = 2_000
MEMORY_GOAL_KB = 20
# The people the agents ask, in turn: each person has at most CONSOLE_MAX_OPEN_INSTANCES (50)
# open instances from one runtime, so at least one person per AGENTS_PER_PERSON agents.
PEOPLE = 25
AGENTS_PER_PERSON = 40
THINK_SECONDS = (2.0, 30.0)
# At most this many of the agents' people click (every k-th agent's, spread over them all): with
# 10,000 agents waiting, as many clicks in 2-30 s would be a burst of 350 a second, not people;
# the others wait on to the end, as agents whose people are away do.
CLICKS = 1_000
# The agents run in processes of their own (`bench.agents`), this many agents each (and at least
# 2 processes), so that no one event loop is the limit.
AGENTS_PER_PROCESS = 2_500
# Agents opening and planning at once while they arrive (they arrive as fast as the servers
# take them; the figures are taken once all wait).
ARRIVING_AT_ONCE = 8
# How long the servers may take to come to rest (the waits of agents that stopped waiting
# ended) before requests/s are read regardless.
SETTLE_SECONDS = 30.0
# The agents start waiting one after another over this long (the client's long-poll,
# `Prefer: wait=25`), so that each renews its wait at its own time, as in a long wait; the
# rounds while they wait begin ARM_SLACK later, once the last has been taken in.
ARM_SECONDS = 25.0
# With many agents, over three periods: any whole number of periods spreads the renewals as
# evenly, and each agent's `wait()` begins with a plain read (it has no ETag yet), so 10,000
# beginning within one period would be a burst of 800 requests a second that no long wait has.
MANY_ARM_SECONDS = 75.0
ARM_SLACK = 2.0
# Goals: PostgreSQL p50 <= 100 ms and p90 <= 250 ms; SQLite p90 <= 1 s.
GOAL_TEXT = "PostgreSQL p50 ≤ 100 ms, p90 ≤ 250 ms; SQLite p90 ≤ 1 s"
RATE_GOAL = 0.8
# wrk rounds of the read's requests/s while they wait, each between two idle rounds; the figure
# is the median of the rounds' ratios, so that one round the machine spent elsewhere does not
# make it (on a shared 2-core machine the same read moves by up to 2x from one 4 s round to the
# next, and one round's ratio ran from 0.46 to 1.23 within a day: with three rounds the median
# still moved from 0.59 to 1.01 between runs).
RATE_ROUNDS = 5
MANY_RATE_ROUNDS = 3  # each round's arming takes three times as long
# wrk's connections in those rounds (the requests/s rows use 4): the kernel gives each new
# connection to one of the 2 processes by a hash of its addresses, and a round whose connections
# all went to one process measures that process alone (half the requests/s); with 8 that
# happens in 1 round of 128, with 4 in 1 of 8.
RATE_CONNECTIONS = 8
SERVE_POOL = "12"  # as the Makefile's `serve` sets DATABASE_POOL
_CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


def within_goal(postgres: bool, p50: float, p90: float) -> bool:
    """Seconds; the goal of the database measured."""
    return p50 <= 0.100 and p90 <= 0.250 if postgres else p90 <= 1.0


def _spread(values: Sequence[float]) -> str:
    ms = [v * 1000 for v in values]
    return (
        f"p50 {percentile(ms, 50):.0f} ms, p90 {percentile(ms, 90):.0f} ms, "
        f"max {max(ms):.0f} ms, n {len(ms):,}"
    )


# --- processes ----------------------------------------------------------------------------------


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def _tree(pid: int) -> list[int]:
    pids = [pid]
    for child in _children(pid):
        pids += _tree(child)
    return pids


def _rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _cpu_ticks(pids: Sequence[int]) -> int:
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total


@dataclass
class Servers:
    """`make serve` (uvicorn, PROCESSES processes) and `manage.py worker`, on the child's
    database and settings."""

    base: str = ""
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    logs: list[Path] = field(default_factory=list)
    server_pid: int = 0

    def pids(self) -> list[int]:
        return _tree(self.server_pid)

    def rss_kb(self) -> int:
        return sum(_rss_kb(pid) for pid in self.pids())


@contextmanager
def servers(
    worker_id: str | None = None, extra_env: dict[str, str] | None = None, root: Path = ROOT
) -> Iterator[Servers]:
    """`make serve` on a free port and a worker (named `worker_id` when given), both with
    `extra_env` in their environment, until the block ends; of the checkout at `root` (this
    one unless another version is measured against it)."""
    port = free_port()
    env = {
        **os.environ,
        # As `make serve` runs it (production settings: SQLite connections kept 60 s by each
        # request thread, PostgreSQL's taken from the pool); the receiver listens on loopback.
        "CONSOLE_WEBHOOK_ALLOW_PRIVATE": "true",
        "CONSOLE_BASE_URL": f"http://127.0.0.1:{port}",
        **(extra_env or {}),
    }
    logs = Path(tempfile.mkdtemp(prefix="bench-servers-"))
    running = Servers(base=f"http://127.0.0.1:{port}")
    commands = {
        "uvicorn": [
            sys.executable, "-m", "console.serve", "--host", "127.0.0.1", "--port", str(port),
            "--workers", str(PROCESSES), "--log-level", "warning",
        ],
        "worker": [sys.executable, "manage.py", "worker",
                   *(["--worker-id", worker_id] if worker_id else [])],
    }  # fmt: skip
    # `make serve`'s connection pool is the web processes' (the worker keeps its own).
    pooled = {"uvicorn": {"DATABASE_POOL": os.environ.get("DATABASE_POOL", SERVE_POOL)}}
    try:
        for name, command in commands.items():
            log = logs / f"{name}.log"
            running.logs.append(log)
            with log.open("wb") as out:
                running.processes.append(
                    subprocess.Popen(
                        command,
                        cwd=root,
                        env={**env, **pooled.get(name, {})},
                        stdout=subprocess.DEVNULL,
                        stderr=out,
                    )
                )
        running.server_pid = running.processes[0].pid
        _wait_for_workers(running)
        yield running
    finally:
        for process in running.processes:
            process.terminate()
        for process in running.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for log in running.logs:
            text = log.read_text(errors="replace")
            if "Traceback" in text:
                print(f"    {log.name}: {text[-3000:]}", file=sys.stderr, flush=True)
        shutil.rmtree(logs, ignore_errors=True)


def _wait_for_workers(running: Servers) -> None:
    """Until both uvicorn processes are up and answer (each request lands on either)."""
    import urllib.request

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if len(_children(running.server_pid)) >= PROCESSES:
            try:
                url = f"{running.base}/healthz"
                with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310
                    if response.status == 200:
                        time.sleep(1)  # the second process's startup
                        return
            except OSError:
                pass
        time.sleep(0.2)
    raise RuntimeError("uvicorn did not come up")


# --- the run ------------------------------------------------------------------------------------


@dataclass
class Agent:
    n: int
    person: int
    instance_id: str = ""
    prompt_path: str = ""
    version: int = 0
    clicked: float = 0.0
    recorded: float = 0.0
    resumed: float = 0.0
    hooked: float = 0.0
    error: str = ""


class Crowd:
    """The agents, run by processes of their own (`bench.agents`), each with its share; this
    process gives them their orders and gathers their answers."""

    def __init__(self, processes: list[asyncio.subprocess.Process]) -> None:
        self.processes = processes
        self.shares: list[list[Agent]] = [[] for _ in processes]

    @classmethod
    async def start(cls, bases: Sequence[str], key: str, count: int) -> Crowd:
        """`count` processes of agents, the k-th against the server `bases[k % len(bases)]`;
        agent n is in process n % count."""
        processes = [
            await asyncio.create_subprocess_exec(
                sys.executable, "-m", "bench.agents", bases[k % len(bases)],
                cwd=ROOT,
                env={**os.environ, "BENCH_AGENT_KEY": key},
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                limit=2**26,
            )
            for k in range(count)
        ]  # fmt: skip
        return cls(processes)

    def pids(self) -> list[int]:
        return [p.pid for p in self.processes]

    async def _order(self, k: int, order: dict[str, Any]) -> dict[str, Any]:
        import json

        process = self.processes[k]
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(json.dumps(order).encode() + b"\n")
        await process.stdin.drain()
        line = await process.stdout.readline()
        if not line:
            raise RuntimeError(f"the agents' process {process.pid} ended")
        answer: dict[str, Any] = json.loads(line)
        return answer

    async def _all(self, order: dict[str, Any]) -> list[dict[str, Any]]:
        return list(
            await asyncio.gather(*(self._order(k, order) for k in range(len(self.processes))))
        )

    async def open(self, agents: list[Agent], people: list[Person]) -> None:
        """Each agent opens its instance and plans it, in its process; ARRIVING_AT_ONCE of
        them at once in all."""
        for agent in agents:
            self.shares[agent.n % len(self.processes)].append(agent)
        at_once = max(ARRIVING_AT_ONCE // len(self.processes), 1)
        by_n = {a.n: a for a in agents}

        async def share(k: int) -> None:
            specs = [
                {"n": a.n, "person": people[a.person].username, "value": f"value {a.n}"}
                for a in self.shares[k]
            ]
            answer = await self._order(k, {"op": "open", "agents": specs, "at_once": at_once})
            for opened in answer["opened"]:
                agent = by_n[opened["n"]]
                agent.error = opened.get("error", "")
                agent.instance_id = opened.get("instance_id", "")
                agent.prompt_path = opened.get("prompt_path", "")
                agent.version = opened.get("version", 0)

        await asyncio.gather(*(share(k) for k in range(len(self.processes))))

    async def arm(self, seconds: float = ARM_SECONDS, slack: float = ARM_SLACK) -> None:
        """Every agent that opened waits, one after another over `seconds`; returns once the
        last has been taken in (`slack` later)."""
        await self._all({"op": "arm", "seconds": seconds})
        await asyncio.sleep(seconds + slack)

    async def waiting(self) -> int:
        return sum(a["waiting"] for a in await self._all({"op": "count"}))

    async def disarm(self) -> None:
        """The agents still waiting stop (their requests dropped)."""
        await self._all({"op": "disarm"})

    async def finish(self, watched: list[Agent], timeout: float) -> None:
        """The `watched` agents' waits return within `timeout` (noted on each), or are
        reported as never resumed; every other agent stops waiting."""
        of = [a.n for a in watched]
        by_n = {a.n: a for a in watched}
        for answer in await self._all({"op": "finish", "timeout": timeout, "of": of}):
            for n, resumed in answer["resumed"].items():
                by_n[int(n)].resumed = resumed
            for n, error in answer["errors"].items():
                by_n[int(n)].error = error

    async def close(self) -> None:
        for process in self.processes:
            if process.stdin is not None:
                process.stdin.close()
        for process in self.processes:
            try:
                await asyncio.wait_for(process.wait(), timeout=30)
            except TimeoutError:
                process.kill()
                await process.wait()


@dataclass
class Person:
    username: str
    session: str
    csrf_cookie: str = ""
    csrf_token: str = ""

    def cookie(self) -> str:
        return f"sessionid={self.session}; csrftoken={self.csrf_cookie}"


def measure(
    bench: Bench, quick: bool, agents: int | None = None, many: bool = False
) -> list[dict[str, Any]]:
    """The rows of GROUP (each the fields of a `bench.main.Row`), measured on the child's
    database, with `agents` waiting at once (AGENTS, or QUICK_AGENTS when `quick`); `many`: the
    rows of MANY_GROUP instead, MANY_AGENTS (QUICK_MANY_AGENTS) waiting, held to its goals."""
    for noisy in ("httpx", "axes"):  # a line per request, a line per sign-in
        logging.getLogger(noisy).setLevel(logging.WARNING)
    if many:
        count = agents or (QUICK_MANY_AGENTS if quick else MANY_AGENTS)
    else:
        count = agents or (QUICK_AGENTS if quick else AGENTS)
    bench.task_class(CLASS, 1)
    # People of their own: a whole run measures "waiting" first, in the same database.
    prefix = "many-waiting" if many else "waiting"
    people = _people(bench, max(PEOPLE, -(-count // AGENTS_PER_PERSON)), prefix=prefix)
    hooked: dict[str, float] = {}

    def arrived(item: Any) -> None:
        if item.event is not None and item.event.get("type") == "instance.ready":
            hooked.setdefault(item.event["data"]["instance_id"], time.monotonic())

    receiver = ready_receiver(bench, arrived)
    # Stopped (Ctrl-C, a timeout): the servers stop with it (`servers` cleans up on the way out).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    low, high = THINK_SECONDS
    think = (low, high)
    try:
        with servers() as running:
            arming = (MANY_ARM_SECONDS, MANY_RATE_ROUNDS) if many else (ARM_SECONDS, RATE_ROUNDS)
            result = asyncio.run(_run(bench, running, people, count, think, hooked, *arming))
    finally:
        receiver.stop()
    return _rows(bench, result, think, MANY_GROUP if many else GROUP, many)


@dataclass
class ReadyReceiver:
    """A receiver of the bench runtime's `instance.ready` webhooks and the endpoint it serves.

    Stopped, it deletes its endpoint as well: the groups of a whole run use the same runtime,
    and an endpoint left behind would have the worker of every later group deliver each event
    to a receiver that is gone (a refused connection, then retries), in the figures of that
    group."""

    receiver: Any  # demo.receiver.Receiver
    endpoint: Any  # beliefs.models.WebhookEndpoint
    actor: Any

    def stop(self) -> None:
        from beliefs.services.webhooks.endpoints import endpoint_delete

        self.receiver.stop()
        endpoint_delete(endpoint=self.endpoint, actor=self.actor)


def ready_receiver(bench: Bench, on_event: Callable[[Any], None]) -> ReadyReceiver:
    """A receiver on loopback, serving, of the `instance.ready` webhooks of the bench's runtime
    (an endpoint made for it, deleted when it stops); `on_event` sees each request it takes."""
    from django.test import override_settings

    from beliefs.services.webhooks.endpoints import endpoint_create
    from demo.receiver import Receiver

    port = free_port()
    with override_settings(CONSOLE_WEBHOOK_ALLOW_PRIVATE=True):
        assert bench.actor.key is not None
        endpoint, secret = endpoint_create(
            runtime=bench.actor.key.runtime,
            url=f"http://127.0.0.1:{port}/hooks",
            event_types=["instance.ready"],
            actor=bench.actor,
        )
    receiver = Receiver(secret=secret, port=port, on_event=on_event).start()
    return ReadyReceiver(receiver, endpoint, bench.actor)


def _people(bench: Bench, count: int, prefix: str = "waiting") -> list[Person]:
    from django.contrib.auth.models import User
    from django.test import Client

    people = []
    for n in range(count):
        user = User.objects.create_user(f"{prefix}-{n}", password=None)
        client = Client()
        client.force_login(user)
        people.append(Person(user.username, client.cookies["sessionid"].value))
    return people


@dataclass
class Result:
    agents: list[Agent]
    clickers: list[Agent]  # the agents whose people clicked
    rss_before_kb: int
    rss_waiting_kb: int
    waiting_when_measured: int
    # Alternating: idle[k] and idle[k + 1] were read before and after waiting[k].
    idle: list[Round]
    waiting: list[Round]


@dataclass(frozen=True)
class Round:
    """One wrk round of the authenticated read."""

    rate: float  # requests/s
    seconds: float
    server_cpu: float  # CPU seconds of the uvicorn processes meanwhile
    agents_cpu: float  # CPU seconds of the agents' processes meanwhile (their renewals)


async def _run(
    bench: Bench,
    running: Servers,
    people: list[Person],
    count: int,
    think: tuple[float, float],
    hooked: dict[str, float],
    arm_seconds: float = ARM_SECONDS,
    rounds: int = RATE_ROUNDS,
) -> Result:
    """The run: the agents open, wait in `rounds` rounds (each armed over `arm_seconds`)
    between idle ones, then wait while their people click."""
    import httpx
    from console_client import AsyncConsole

    base = running.base
    agents = [Agent(n=n, person=n % len(people)) for n in range(count)]
    # The people's browsers, one pool; the agents run in processes of their own, each agent with
    # a client of its own (as agents do, and one pool holding a thousand long-polls would spend
    # the run scanning its connections).
    pages = httpx.AsyncClient(base_url=base, timeout=60)
    browser = Browser(base)
    console = AsyncConsole(base, bench.raw_key)
    crowd = await Crowd.start([base], bench.raw_key, agent_processes(count))
    try:
        for person in people:
            await _csrf(pages, person)
        probe = await console.resolve(
            CLASS, people[0].username, {"s000": "probe"}, source="tool", wait=False
        )
        read_url = f"{base}/api/v1/instances/{probe.instance_id}/"
        rss_before = running.rss_kb()

        _progress_(f"{count:,} agents open and plan ({len(crowd.processes)} processes)")
        await crowd.open(agents, people)
        await _quiet(running)

        _progress_("requests/s of the authenticated read, idle and while they all wait, by turns")
        idle = await _round(bench, running, crowd, read_url)
        waiting: list[Round] = []
        rss_waiting = waiting_count = 0
        for _ in range(rounds):
            await crowd.arm(arm_seconds)
            if not rss_waiting:
                rss_waiting = running.rss_kb()
                waiting_count = await crowd.waiting()
            waiting += await _round(bench, running, crowd, read_url)
            waiting_count = min(waiting_count, await crowd.waiting())
            await crowd.disarm()
            await _quiet(running)
            idle += await _round(bench, running, crowd, read_url)

        ready = [a for a in agents if a.prompt_path and not a.error]
        clickers = ready[:: max(len(ready) // CLICKS, 1)][:CLICKS]
        _progress_(
            f"they wait; the people of {len(clickers):,} think {think[0]:g}-{think[1]:g} s"
            " and click"
        )
        await crowd.arm(arm_seconds)
        rng = random.Random(21)
        clicks = [
            asyncio.create_task(
                _click(browser, agent, people[agent.person], rng.uniform(*think), hooked)
            )
            for agent in clickers
        ]
        await asyncio.gather(*clicks)
        _progress_("the last agents resume")
        await crowd.finish(clickers, timeout=60)
        # The webhooks of the last clicks.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not all(a.instance_id in hooked for a in clickers):
            await asyncio.sleep(0.05)
        for agent in clickers:
            agent.hooked = hooked.get(agent.instance_id, 0.0)
    finally:
        await crowd.close()
        await console.close()
        await pages.aclose()
        browser.close()
    return Result(agents, clickers, rss_before, rss_waiting, waiting_count, idle, waiting)


def agent_processes(count: int) -> int:
    """The agents' processes for `count` agents: AGENTS_PER_PROCESS each, and at least 2."""
    return max(2, -(-count // AGENTS_PER_PROCESS))


async def _csrf(pages: Any, person: Person) -> None:
    """The person opens their inbox (`pages`, an httpx client of the server) once: the page
    carries the CSRF token their clicks send."""
    response = await pages.get("/", headers={"Cookie": f"sessionid={person.session}"})
    assert response.status_code == 200, response.status_code
    person.csrf_cookie = response.cookies["csrftoken"]
    found = _CSRF.search(response.text)
    assert found, "no CSRF token on the inbox page"
    person.csrf_token = found.group(1)


def _alternating(idle: Sequence[float], waiting: Sequence[float]) -> list[float]:
    """Each waiting round's requests/s over the mean of the idle rounds before and after it."""
    return [w / ((idle[k] + idle[k + 1]) / 2) for k, w in enumerate(waiting) if k + 1 < len(idle)]


def _per_read(rounds: Sequence[Round]) -> float:
    """The servers' CPU milliseconds per read wrk had answered, over the rounds."""
    reads = sum(r.rate * r.seconds for r in rounds)
    return 1000 * sum(r.server_cpu for r in rounds) / max(reads, 1)


def _share(rounds: Sequence[Round]) -> float:
    """This process's CPU (the agents') as a share of one core, over the rounds."""
    return sum(r.agents_cpu for r in rounds) / max(sum(r.seconds for r in rounds), 1e-9)


def _by_turns(idle: Sequence[float], waiting: Sequence[float], ratios: Sequence[float]) -> str:
    if not ratios:
        return "none (no wrk)"
    turns = [f"{idle[0]:.0f}"]
    for k, w in enumerate(waiting):
        turns += [f"{w:.0f}", f"{idle[k + 1]:.0f}"]
    each = ", ".join(f"{r:.2f}" for r in ratios)
    return (
        f"{median(waiting):.0f} vs {median(idle):.0f} req/s; rounds idle/waiting by turns"
        f" {' / '.join(turns)}; each waiting round vs the idle ones beside it {each}"
    )


def _progress_(message: str) -> None:
    print(f"    {message}", file=sys.stderr, flush=True)


async def _round(bench: Bench, running: Servers, crowd: Crowd, url: str) -> list[Round]:
    """One wrk round of the authenticated read (none without wrk), in a thread: the agents'
    renewals go on meanwhile in their processes. With the CPU the servers and the agents'
    processes spent."""
    wrk = shutil.which("wrk")
    if wrk is None:
        return []
    key = ["-H", f"Authorization: Api-Key {bench.raw_key}", url]
    pids, theirs = running.pids(), crowd.pids()
    hz = os.sysconf("SC_CLK_TCK")
    server, own, started = _cpu_ticks(pids), _cpu_ticks(theirs), time.monotonic()
    rate = await asyncio.to_thread(bench._wrk, wrk, key, connections=RATE_CONNECTIONS)
    return [
        Round(
            rate=rate,
            seconds=time.monotonic() - started,
            server_cpu=(_cpu_ticks(pids) - server) / hz,
            agents_cpu=(_cpu_ticks(theirs) - own) / hz,
        )
    ]


async def _quiet(running: Servers) -> None:
    """Until the servers have come to rest (their CPU under 5% of a core for a second), or
    SETTLE_SECONDS."""
    started = time.monotonic()
    pids = running.pids()
    hz = os.sysconf("SC_CLK_TCK")
    before = _cpu_ticks(pids)
    while time.monotonic() - started < SETTLE_SECONDS:
        await asyncio.sleep(1)
        now = _cpu_ticks(pids)
        if (now - before) / hz < 0.05:  # the uvicorn processes together
            break
        before = now


class Browser:
    """The people's browsers, reduced to what a click sends: an HTTP/1.1 form post over kept-alive
    connections to the server, up to `PER_PERSON` at once per person, as a browser keeps a few
    per site. Written on asyncio's streams rather than a general client: the benchmark's own
    CPU is taken from the same two cores as the servers', and this spends a small part of what
    an httpx request does."""

    PER_PERSON = 6
    # A kept connection idle longer than this is dropped before it is used: the server closes
    # it after its keep-alive timeout (uvicorn's: 5 s), as browsers know.
    KEEP_SECONDS = 4.0

    def __init__(self, base: str) -> None:
        """Browsers of the server at `base` (its scheme, host and port)."""
        parts = urlsplit(base)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.idle: dict[str, list[tuple[float, asyncio.StreamReader, asyncio.StreamWriter]]] = {}

    async def post(self, person: Person, path: str, form: dict[str, str]) -> int:
        """The status of a form post (htmx's: `HX-Request`), with the person's cookies. A kept
        connection the server closed as the post went out is tried again once, on a new
        connection, as a browser does."""
        body = urlencode(form).encode()
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            f"Cookie: {person.cookie()}\r\nHX-Request: true\r\n"
            "Content-Type: application/x-www-form-urlencoded\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode()
        idle = self.idle.setdefault(person.username, [])
        for fresh in (False, True):
            reader, writer = await self._connection(idle, fresh)
            try:
                writer.write(head + body)
                status, keep = await self._answer(reader)
            except (ConnectionError, asyncio.IncompleteReadError):
                writer.close()
                if fresh:
                    raise
                continue
            if keep and len(idle) < self.PER_PERSON:
                idle.append((time.monotonic(), reader, writer))
            else:
                writer.close()
            return status
        raise AssertionError("unreachable")

    async def _connection(
        self, idle: list[tuple[float, asyncio.StreamReader, asyncio.StreamWriter]], fresh: bool
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """The newest kept connection still within KEEP_SECONDS (unless `fresh`), or a new one."""
        while idle and not fresh:
            since, reader, writer = idle.pop()
            if time.monotonic() - since < self.KEEP_SECONDS:
                return reader, writer
            writer.close()
        return await asyncio.open_connection(self.host, self.port)

    @staticmethod
    async def _answer(reader: asyncio.StreamReader) -> tuple[int, bool]:
        """The status, and whether the connection may be kept; the body is read and dropped."""
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        headers = dict(line.lower().split(": ", 1) for line in lines[1:] if ": " in line)
        if "content-length" in headers:
            await reader.readexactly(int(headers["content-length"]))
        elif headers.get("transfer-encoding") == "chunked":
            while size := int((await reader.readline()).split(b";")[0], 16):
                await reader.readexactly(size + 2)
            await reader.readline()
        return status, headers.get("connection") != "close"

    def close(self) -> None:
        for connections in self.idle.values():
            for _, _, writer in connections:
                writer.close()
        self.idle.clear()


async def _click(
    browser: Browser, agent: Agent, person: Person, think: float, hooked: dict[str, float]
) -> None:
    await asyncio.sleep(think)
    agent.clicked = time.monotonic()
    form = {"csrfmiddlewaretoken": person.csrf_token, "version": str(agent.version)}
    try:
        status = await browser.post(person, agent.prompt_path, {**form, "action": "confirm"})
    except Exception as exc:
        agent.error = f"click: {exc!r}"
        return
    agent.recorded = time.monotonic()
    if status != 200:
        agent.error = f"click: {status}"


def Row(  # noqa: N802 - builds what bench.main.Row takes
    group: str, figure: str, value: str, ratio: float | None, goal: str, holds: bool | None
) -> dict[str, Any]:
    return {
        "group": group,
        "figure": figure,
        "value": value,
        "ratio": ratio,
        "goal": goal,
        "holds": holds,
    }


def _rows(
    bench: Bench, result: Result, think: tuple[float, float], group: str, many: bool
) -> list[dict[str, Any]]:
    """The rows of `group`; `many`: with the memory goal (MEMORY_GOAL_KB) too."""
    postgres = bench.postgres
    agents = result.agents
    total = len(agents)
    clickers = result.clickers
    clicked = len(clickers)
    answered = [a for a in clickers if not a.error and a.resumed]
    clicked_ns = {a.n for a in clickers}
    failed = [a.error for a in agents if a.error and (a.n in clicked_ns or not a.prompt_path)]
    if failed:
        _progress_(f"{len(failed)} agents failed, e.g. {failed[:3]}")
    hooked = [a for a in answered if a.hooked]
    recorded = [a.recorded - a.clicked for a in answered]
    resumed = [a.resumed - a.clicked for a in answered]
    webhook = [a.hooked - a.clicked for a in hooked]
    thinking = f"think {think[0]:g}–{think[1]:g} s"
    unopened = [a for a in agents if not a.prompt_path]
    who = (
        f"{total:,} agents"
        if clicked == total
        else f"{total:,} agents waiting, the people of {clicked:,} click"
    )
    rows = []
    rows.append(
        Row(
            group,
            f"click → answer recorded (the page's post), {thinking}",
            _spread(recorded) if recorded else "none",
            None,
            "",
            None,
        )
    )
    for figure, values, count in (
        ("click → instance.ready webhook arrives (worker)", webhook, len(hooked)),
        ("click → the agent's wait() returns", resumed, len(answered)),
    ):
        holds = (
            count == clicked
            and not unopened
            and bool(values)
            and within_goal(postgres, percentile(values, 50), percentile(values, 90))
        )
        value = _spread(values) if values else "none"
        if count != clicked:
            value += f" ({clicked - count:,} of {clicked:,} never)"
        if unopened:
            value += f" ({len(unopened):,} of {total:,} agents could not open)"
        rows.append(Row(group, f"{figure}, {who}, {thinking}", value, None,
                        GOAL_TEXT, holds))  # fmt: skip
    # The notification's own part: from the answer recorded (the click's post answered) to the
    # agent resumed, apart from how long the servers took to take the click.
    after = [a.resumed - a.recorded for a in answered]
    rows.append(
        Row(
            group,
            "answer recorded → the agent's wait() returns",
            _spread(after) if after else "none",
            None,
            "",
            None,
        )
    )
    grown = result.rss_waiting_kb - result.rss_before_kb
    per = grown / max(result.waiting_when_measured, 1)
    rows.append(
        Row(
            group,
            f"memory per waiter ({PROCESSES} processes' RSS, before vs {total:,} waiting)",
            f"{per:.0f} KB ({result.rss_before_kb / 1024:.0f} MB vs "
            f"{result.rss_waiting_kb / 1024:.0f} MB, {result.waiting_when_measured:,} waiting)",
            None,
            f"≤ {MEMORY_GOAL_KB} KB on PostgreSQL" if many else "",
            (per <= MEMORY_GOAL_KB) if many and postgres else None,
        )
    )
    idle_rates = [r.rate for r in result.idle]
    waiting_rates = [r.rate for r in result.waiting]
    rates = _alternating(idle_rates, waiting_rates)
    ratio = median(rates) if rates else None
    rows.append(
        Row(
            group,
            f"authenticated read, {result.waiting_when_measured:,} waiting vs none, by turns (wrk)",
            _by_turns(idle_rates, waiting_rates, rates),
            ratio,
            f"≥ {RATE_GOAL:g}×",
            None if ratio is None else ratio >= RATE_GOAL,
        )
    )
    if result.idle and result.waiting:
        rows.append(
            Row(
                group,
                "CPU in those rounds: the servers' per read answered; the agents' processes",
                f"{_per_read(result.waiting):.2f} vs {_per_read(result.idle):.2f} ms a read"
                f" (waiting vs none; the renewals included); the agents"
                f" {_share(result.waiting):.0%} vs {_share(result.idle):.0%} of a core",
                None,
                "",
                None,
            )
        )
    return rows
