"""The waiting agents of `make bench`'s "agents waiting" rows, in processes of their own.

Ten thousand agents in the benchmark's own process would make its one event loop the limit: the
renewals of their long-polls (the client's `wait()`, one request per agent every 25 s) and the
answers that wake them would queue behind each other there, and the figures would time the
loop, not the servers. So `bench.longpoll` starts several of these processes (`python -m
bench.agents BASE`, the runtime's key in BENCH_AGENT_KEY) and gives each a share of the
agents. Each runs the real client (`console_client.AsyncConsole`, one per agent, as agents
have) on its own loop and takes its orders as JSON lines on stdin, answering each with one
JSON line on stdout:

- `{"op": "open", "agents": [{"n": 0, "person": "waiting-0", "value": "..."}, ...],
  "at_once": 2}`: each agent opens an instance of `bench.wait` for its person and plans it
  (`resolve`), then reads its open prompt; answers `{"opened": [{"n", "instance_id",
  "prompt_path", "version", "error"}, ...]}`.
- `{"op": "arm", "seconds": 25}`: every agent that opened starts waiting (`wait()`), one after
  another over that many seconds; answers `{"armed": count}` at once.
- `{"op": "count"}`: answers `{"waiting": the agents whose wait has not returned}`.
- `{"op": "disarm"}`: the agents still waiting stop (their requests dropped, as an agent that
  gives up does); answers `{"disarmed": count}` once they have.
- `{"op": "finish", "timeout": 60, "of": [n, ...]}`: waits up to `timeout` for the waits of the
  agents `of` to return, stops the rest, and answers `{"resumed": {n: monotonic time}, "errors":
  {n: text}}`. `time.monotonic()` is the system's CLOCK_MONOTONIC, the same clock in every
  process of the machine, so the benchmark compares it with its own clicks.

A figure's tool, never a test.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any

CLASS = "bench.wait"


@dataclass
class Agent:
    n: int
    person: str
    value: str
    instance_id: str = ""
    error: str = ""
    resumed: float = 0.0
    console: Any = None
    waiting: asyncio.Task[None] | None = field(default=None, repr=False)


class Agents:
    """This process's agents, against the server at `base` with `key`."""

    def __init__(self, base: str, key: str) -> None:
        import ssl

        self.base, self.key = base, key
        self.agents: dict[int, Agent] = {}
        # One TLS context for all: httpx makes one per client otherwise, loading the system's
        # certificates each time (some 800 KB and milliseconds a client), which ten thousand
        # agents in one machine would spend, where real agents each have a process of their own.
        self.tls = ssl.create_default_context()

    async def open(self, specs: list[dict[str, Any]], at_once: int) -> dict[str, Any]:
        arriving = asyncio.Semaphore(max(at_once, 1))
        agents = [Agent(s["n"], s["person"], s["value"]) for s in specs]
        self.agents.update((a.n, a) for a in agents)
        opened = await asyncio.gather(*(self._open(a, arriving) for a in agents))
        return {"opened": opened}

    async def _open(self, agent: Agent, arriving: asyncio.Semaphore) -> dict[str, Any]:
        import httpx
        from console_client import AsyncConsole

        transport = httpx.AsyncHTTPTransport(verify=self.tls)
        agent.console = AsyncConsole(self.base, self.key, transport=transport)
        answer: dict[str, Any] = {"n": agent.n}
        try:
            async with arriving:
                opened = await agent.console.resolve(
                    CLASS, agent.person, {"s000": agent.value}, source="tool", wait=False
                )
                if opened.status != "awaiting_user":
                    raise AssertionError(f"opened {opened.status}")
                payload = await agent.console.get(opened.instance_id)
            (prompt,) = [p for p in payload["prompts"] if p["state"] == "open"]
            agent.instance_id = opened.instance_id
            answer.update(
                instance_id=opened.instance_id,
                prompt_path=f"/instances/{opened.instance_id}/prompts/{prompt['id']}/respond/",
                version=prompt["version"],
            )
        except Exception as exc:
            agent.error = answer["error"] = f"open: {exc!r}"
        return answer

    def arm(self, seconds: float) -> dict[str, Any]:
        ready = [a for a in self.agents.values() if a.instance_id and not a.error]
        step = seconds / max(len(ready), 1)
        for k, agent in enumerate(ready):
            agent.resumed = 0.0
            agent.waiting = asyncio.create_task(self._wait(agent, k * step))
        return {"armed": len(ready)}

    async def _wait(self, agent: Agent, delay: float) -> None:
        await asyncio.sleep(delay)
        try:
            resolution = await agent.console.wait(agent.instance_id)
        except Exception as exc:
            agent.error = f"wait: {exc!r}"
            return
        agent.resumed = time.monotonic()
        if resolution.status != "ready":
            agent.error = f"resumed {resolution.status}"

    def count(self) -> dict[str, Any]:
        return {"waiting": sum(1 for t in self._waits() if not t.done())}

    async def disarm(self) -> dict[str, Any]:
        waits = self._waits()
        for wait in waits:
            wait.cancel()
        await asyncio.gather(*waits, return_exceptions=True)
        for agent in self.agents.values():
            agent.waiting = None
        return {"disarmed": len(waits)}

    async def finish(self, timeout: float, of: list[int]) -> dict[str, Any]:
        watched = [self.agents[n] for n in of if n in self.agents]
        waits = [a.waiting for a in watched if a.waiting is not None]
        if waits:
            await asyncio.wait(waits, timeout=timeout)
        await self.disarm()
        return {
            "resumed": {a.n: a.resumed for a in watched if a.resumed},
            "errors": {a.n: a.error for a in watched if a.error},
        }

    def _waits(self) -> list[asyncio.Task[None]]:
        return [a.waiting for a in self.agents.values() if a.waiting is not None]

    async def close(self) -> None:
        await self.disarm()
        for agent in self.agents.values():
            if agent.console is not None:
                await agent.console.close()


async def serve(base: str, key: str) -> None:
    """Take orders from stdin until it closes."""
    import logging

    logging.getLogger("httpx").setLevel(logging.WARNING)
    agents = Agents(base, key)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**26)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    try:
        while line := await reader.readline():
            order = json.loads(line)
            op = order["op"]
            if op == "open":
                answer = await agents.open(order["agents"], order.get("at_once", 1))
            elif op == "arm":
                answer = agents.arm(order["seconds"])
            elif op == "count":
                answer = agents.count()
            elif op == "disarm":
                answer = await agents.disarm()
            elif op == "finish":
                answer = await agents.finish(order["timeout"], order["of"])
            else:
                answer = {"error": f"unknown op {op!r}"}
            sys.stdout.write(json.dumps(answer) + "\n")
            sys.stdout.flush()
    finally:
        await agents.close()


if __name__ == "__main__":
    asyncio.run(serve(sys.argv[1], os.environ["BENCH_AGENT_KEY"]))
