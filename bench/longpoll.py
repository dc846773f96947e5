"""`make bench`'s "agents waiting" rows: the agent resumes the moment the person answers.

Measured from outside, over real HTTP, against the production command (`make serve`:
`console.serve`, uvicorn in 2 processes) and a real `manage.py worker` delivering webhooks to a
receiver on loopback, all on the benchmark's database:

1. A thousand agents (200 with --quick, N with --agents N) open an instance each and plan it
   (the client, `AsyncConsole`), then wait with `wait()`. The authenticated read's requests/s
   (wrk, as the requests/s rows but with RATE_CONNECTIONS connections) is taken in rounds that
   alternate, on the same servers and the same database: none waiting, all waiting, none
   waiting, ... (RATE_ROUNDS rounds while they wait, each compared with the idle rounds on
   either side of it), so that the machine's own drift, which moves the same read by up to 2x
   within a minute here, falls on both sides. The agents start waiting spread over one
   long-poll period (ARM_SECONDS), so that their renewals come as steadily as in a long wait,
   and stop waiting by dropping their requests (the servers end a wait whose client went
   away). The server processes' memory is read before the agents come and once they all wait.
2. Each agent's person opens the instance's page, thinks for a time drawn from 2 to 30 s, and
   clicks Confirm: the page's own form post
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

from bench.common import free_port, percentile

# `bench.main.Bench`, which calls this module (typed loosely: the import would be a cycle).
Bench = Any

ROOT = Path(__file__).resolve().parents[1]
GROUP = "agents waiting (make serve: uvicorn, 2 processes)"
PROCESSES = 2
AGENTS = 1_000
# --quick: fewer agents, thinking as long (a shorter think with as many agents would click
# faster than people do, and measure a burst instead).
QUICK_AGENTS = 200
# The people the agents ask, in turn: each person has at most CONSOLE_MAX_OPEN_INSTANCES (50)
# open instances from one runtime, so at least one person per AGENTS_PER_PERSON agents.
PEOPLE = 25
AGENTS_PER_PERSON = 40
THINK_SECONDS = (2.0, 30.0)
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
    worker_id: str | None = None, extra_env: dict[str, str] | None = None
) -> Iterator[Servers]:
    """`make serve` on a free port and a worker (named `worker_id` when given), both with
    `extra_env` in their environment, until the block ends."""
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
                        cwd=ROOT,
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
    person: int
    instance_id: str = ""
    prompt_path: str = ""
    version: int = 0
    clicked: float = 0.0
    recorded: float = 0.0
    resumed: float = 0.0
    hooked: float = 0.0
    error: str = ""
    console: Any = None  # its `AsyncConsole`, kept from opening to the end


@dataclass
class Person:
    username: str
    session: str
    csrf_cookie: str = ""
    csrf_token: str = ""

    def cookie(self) -> str:
        return f"sessionid={self.session}; csrftoken={self.csrf_cookie}"


def measure(bench: Bench, quick: bool, agents: int | None = None) -> list[dict[str, Any]]:
    """The rows of GROUP (each the fields of a `bench.main.Row`), measured on the child's
    database, with `agents` waiting at once (AGENTS, or QUICK_AGENTS when `quick`)."""
    for noisy in ("httpx", "axes"):  # a line per request, a line per sign-in
        logging.getLogger(noisy).setLevel(logging.WARNING)
    count = agents or (QUICK_AGENTS if quick else AGENTS)
    bench.task_class("bench.wait", 1)
    people = _people(bench, max(PEOPLE, -(-count // AGENTS_PER_PERSON)))
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
            result = asyncio.run(_run(bench, running, people, count, think, hooked))
    finally:
        receiver.stop()
    return _rows(bench, result, think)


def ready_receiver(bench: Bench, on_event: Callable[[Any], None]) -> Any:
    """A receiver on loopback, serving, of the `instance.ready` webhooks of the bench's runtime
    (an endpoint made for it); `on_event` sees each request it takes."""
    from django.test import override_settings

    from beliefs.services.webhooks.endpoints import endpoint_create
    from demo.receiver import Receiver

    port = free_port()
    with override_settings(CONSOLE_WEBHOOK_ALLOW_PRIVATE=True):
        assert bench.actor.key is not None
        _, secret = endpoint_create(
            runtime=bench.actor.key.runtime,
            url=f"http://127.0.0.1:{port}/hooks",
            event_types=["instance.ready"],
            actor=bench.actor,
        )
    return Receiver(secret=secret, port=port, on_event=on_event).start()


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
    agents_cpu: float  # CPU seconds of this process meanwhile (the agents' own renewals)


async def _run(
    bench: Bench,
    running: Servers,
    people: list[Person],
    count: int,
    think: tuple[float, float],
    hooked: dict[str, float],
) -> Result:
    import httpx
    from console_client import AsyncConsole

    base = running.base
    agents = [Agent(person=n % len(people)) for n in range(count)]
    # The people's browsers, one pool; each agent has a client of its own (as agents do, and
    # one pool holding a thousand long-polls would spend the run scanning its connections).
    pages = httpx.AsyncClient(base_url=base, timeout=60)
    browser = Browser(base)
    console = AsyncConsole(base, bench.raw_key)
    try:
        for person in people:
            await _csrf(pages, person)
        probe = await console.resolve(
            "bench.wait", people[0].username, {"s000": "probe"}, source="tool", wait=False
        )
        read_url = f"{base}/api/v1/instances/{probe.instance_id}/"
        rss_before = running.rss_kb()

        _progress_(f"{count:,} agents open and plan")
        arriving = asyncio.Semaphore(ARRIVING_AT_ONCE)
        await asyncio.gather(
            *(_open(base, bench.raw_key, agent, people, arriving) for agent in agents)
        )
        await _quiet(running)

        _progress_("requests/s of the authenticated read, idle and while they all wait, by turns")
        idle = await _round(bench, running, read_url)
        waiting: list[Round] = []
        rss_waiting = waiting_count = 0
        for _ in range(RATE_ROUNDS):
            waits = await _arm(agents)
            if not rss_waiting:
                rss_waiting = running.rss_kb()
                waiting_count = sum(1 for w in waits if not w.done())
            waiting += await _round(bench, running, read_url)
            waiting_count = min(waiting_count, sum(1 for w in waits if not w.done()))
            await _disarm(waits)
            await _quiet(running)
            idle += await _round(bench, running, read_url)

        _progress_(f"they wait; the people think {think[0]:g}-{think[1]:g} s and click")
        waits = await _arm(agents)
        rng = random.Random(21)
        clicks = [
            asyncio.create_task(
                _click(browser, agent, people[agent.person], rng.uniform(*think), hooked)
            )
            for agent in agents
            if agent.prompt_path and not agent.error
        ]
        await asyncio.gather(*clicks)
        _progress_("the last agents resume")
        _, late = await asyncio.wait(waits, timeout=60)
        await _disarm(list(late))  # reported as never resumed
        # The webhooks of the last clicks.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not all(a.instance_id in hooked for a in agents):
            await asyncio.sleep(0.05)
        for agent in agents:
            agent.hooked = hooked.get(agent.instance_id, 0.0)
    finally:
        for agent in agents:
            if agent.console is not None:
                await agent.console.close()
        await console.close()
        await pages.aclose()
        browser.close()
    return Result(agents, rss_before, rss_waiting, waiting_count, idle, waiting)


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


async def _round(bench: Bench, running: Servers, url: str) -> list[Round]:
    """One wrk round of the authenticated read (none without wrk), in a thread: the agents'
    renewals go on meanwhile on this loop. With the CPU the servers and this process spent."""
    wrk = shutil.which("wrk")
    if wrk is None:
        return []
    key = ["-H", f"Authorization: Api-Key {bench.raw_key}", url]
    pids = running.pids()
    hz = os.sysconf("SC_CLK_TCK")
    server, own, started = _cpu_ticks(pids), time.process_time(), time.monotonic()
    rate = await asyncio.to_thread(bench._wrk, wrk, key, connections=RATE_CONNECTIONS)
    return [
        Round(
            rate=rate,
            seconds=time.monotonic() - started,
            server_cpu=(_cpu_ticks(pids) - server) / hz,
            agents_cpu=time.process_time() - own,
        )
    ]


async def _open(
    base: str, key: str, agent: Agent, people: list[Person], arriving: asyncio.Semaphore
) -> None:
    """The agent opens its instance and plans it (the client's `resolve`), as many at once as
    `arriving` lets in; its console stays open for its waits."""
    from console_client import AsyncConsole

    agent.console = AsyncConsole(base, key)
    try:
        async with arriving:
            opened = await agent.console.resolve(
                "bench.wait",
                people[agent.person].username,
                {"s000": f"value {id(agent)}"},
                source="tool",
                wait=False,
            )
            assert opened.status == "awaiting_user", opened.status
            agent.instance_id = opened.instance_id
            payload = await agent.console.get(agent.instance_id)
        (prompt,) = [p for p in payload["prompts"] if p["state"] == "open"]
        agent.prompt_path = f"/instances/{agent.instance_id}/prompts/{prompt['id']}/respond/"
        agent.version = prompt["version"]
    except Exception as exc:
        agent.error = f"open: {exc!r}"


async def _wait(agent: Agent, delay: float) -> None:
    """After `delay`, the agent waits for its person (`wait()`) and notes when it resumes;
    cancelled, it stops waiting (its request is dropped)."""
    await asyncio.sleep(delay)
    try:
        resolution = await agent.console.wait(agent.instance_id)
    except Exception as exc:
        agent.error = f"wait: {exc!r}"
        return
    agent.resumed = time.monotonic()
    if resolution.status != "ready":
        agent.error = f"resumed {resolution.status}"


async def _arm(agents: list[Agent]) -> list[asyncio.Task[None]]:
    """Every agent that opened waits, one after another over ARM_SECONDS; returns once the
    last has been taken in."""
    ready = [a for a in agents if a.prompt_path and not a.error]
    step = ARM_SECONDS / max(len(ready), 1)
    waits = [asyncio.create_task(_wait(a, n * step)) for n, a in enumerate(ready)]
    await asyncio.sleep(ARM_SECONDS + ARM_SLACK)
    return waits


async def _disarm(waits: list[asyncio.Task[None]]) -> None:
    """The agents still waiting stop (their requests dropped)."""
    for wait in waits:
        wait.cancel()
    await asyncio.gather(*waits, return_exceptions=True)


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


def _rows(bench: Bench, result: Result, think: tuple[float, float]) -> list[dict[str, Any]]:
    postgres = bench.postgres
    agents = result.agents
    total = len(agents)
    answered = [a for a in agents if not a.error and a.resumed]
    failed = [a.error for a in agents if a.error]
    if failed:
        _progress_(f"{len(failed)} agents failed, e.g. {failed[:3]}")
    hooked = [a for a in answered if a.hooked]
    recorded = [a.recorded - a.clicked for a in answered]
    resumed = [a.resumed - a.clicked for a in answered]
    webhook = [a.hooked - a.clicked for a in hooked]
    thinking = f"think {think[0]:g}–{think[1]:g} s"
    rows = []
    rows.append(
        Row(
            GROUP,
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
            count == total
            and bool(values)
            and within_goal(postgres, percentile(values, 50), percentile(values, 90))
        )
        value = _spread(values) if values else "none"
        if count != total:
            value += f" ({total - count:,} of {total:,} never)"
        rows.append(Row(GROUP, f"{figure}, {total:,} agents, {thinking}", value, None,
                        GOAL_TEXT, holds))  # fmt: skip
    # The notification's own part: from the answer recorded (the click's post answered) to the
    # agent resumed, apart from how long the servers took to take the click.
    after = [a.resumed - a.recorded for a in answered]
    rows.append(
        Row(
            GROUP,
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
            GROUP,
            f"memory per waiter ({PROCESSES} processes' RSS, before vs {total:,} waiting)",
            f"{per:.0f} KB ({result.rss_before_kb / 1024:.0f} MB vs "
            f"{result.rss_waiting_kb / 1024:.0f} MB, {result.waiting_when_measured:,} waiting)",
            None,
            "",
            None,
        )
    )
    idle_rates = [r.rate for r in result.idle]
    waiting_rates = [r.rate for r in result.waiting]
    rates = _alternating(idle_rates, waiting_rates)
    ratio = median(rates) if rates else None
    rows.append(
        Row(
            GROUP,
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
                GROUP,
                "CPU in those rounds: the servers' per read answered; the agents' own process",
                f"{_per_read(result.waiting):.2f} vs {_per_read(result.idle):.2f} ms a read"
                f" (waiting vs none; the renewals included); the agents"
                f" {_share(result.waiting):.0%} vs {_share(result.idle):.0%} of a core",
                None,
                "",
                None,
            )
        )
    return rows
