"""The production server (`make serve`): uvicorn serving `console.asgi` in several processes,
each listening on a socket of its own on the one port (`SO_REUSEPORT`), so that the kernel
spreads new connections over the processes.

Why not `uvicorn --workers N`: its processes share one listening socket, and the process that
is idle when a client connects takes every connection that arrives meanwhile. A client that
opens a few kept-alive connections at once (a proxy's pool of upstream connections, a load
generator) then sends all its requests to one process while the other waits. In the benchmark,
with 1,000 agents waiting (their renewals keep the processes busy by turns), wrk's 4
connections all went to one process in 2 of 5 rounds of one run and 4 of 5 of another, and
those rounds answered half the requests/s. With a socket each, the kernel picks the process by
a hash of the connection's addresses, whatever the processes are doing.

This process only supervises: it starts the server processes, starts another when one dies,
and on SIGINT or SIGTERM stops them (uvicorn's graceful shutdown: each finishes the requests in
flight) and exits; a second signal kills them. Where the platform has no `SO_REUSEPORT`, it
runs `uvicorn --workers` instead.

    python -m console.serve [--host 0.0.0.0] [--port $PORT] [--workers $WEB_CONCURRENCY]
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable
from multiprocessing.process import BaseProcess
from types import FrameType

APP = "console.asgi:application"
# uvicorn's exit status when its application cannot start (uvicorn.config.STARTUP_FAILURE):
# starting another process would fail the same way.
STARTUP_FAILURE = 3
# How often the supervisor looks for a process that died (and so, at most how often it starts
# another: a process that dies at once is not restarted in a tight loop).
CHECK_SECONDS = 1.0

log = logging.getLogger("console.serve")


def listening_socket(host: str, port: int, *, shared: bool) -> socket.socket:
    """A TCP socket bound to (host, port), not yet listening; `shared`: with `SO_REUSEPORT`, so
    that every server process binds one of its own to the same port."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if shared:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


def serve_one(host: str, port: int, log_level: str) -> None:
    """One server process: its own socket on the shared port, and uvicorn's server on it."""
    import uvicorn

    sock = listening_socket(host, port, shared=True)
    config = uvicorn.Config(
        APP, host=host, port=port, server_header=False, log_level=log_level, workers=1
    )
    uvicorn.Server(config).run(sockets=[sock])


class Supervisor:
    """Keeps `count` processes running `start()` until stopped (see the module's docstring)."""

    def __init__(self, count: int, start: Callable[[], BaseProcess]) -> None:
        self.count = count
        self.start = start
        self.processes: list[BaseProcess] = []
        self.stopping = threading.Event()
        self.signals = 0
        self.status = 0

    def on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.signals += 1
        if self.signals > 1:
            for process in self.processes:
                if process.is_alive():
                    process.kill()
        self.stopping.set()

    def run(self) -> int:
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, self.on_signal)
        self.processes = [self.start() for _ in range(self.count)]
        log.info("Server processes: %s", ", ".join(str(p.pid) for p in self.processes))
        while not self.stopping.wait(CHECK_SECONDS):
            self.replace_the_dead()
        for process in self.processes:
            if process.is_alive() and process.pid is not None:
                os.kill(process.pid, signal.SIGTERM)
        for process in self.processes:
            process.join()
        return self.status

    def replace_the_dead(self) -> None:
        for n, process in enumerate(self.processes):
            if process.exitcode is None or self.stopping.is_set():
                continue
            if process.exitcode == STARTUP_FAILURE:
                log.error("Server process %s could not start; stopping", process.pid)
                self.status = 1
                self.stopping.set()
                return
            log.warning(
                "Server process %s exited (status %s); starting another",
                process.pid,
                process.exitcode,
            )
            self.processes[n] = self.start()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m console.serve", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    parser.add_argument(
        "--workers", type=int, default=int(os.environ.get("WEB_CONCURRENCY", "2")), metavar="N"
    )
    parser.add_argument(
        "--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"]
    )
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error("--workers must be at least 1")
    logging.basicConfig(level=args.log_level.upper(), format="%(levelname)s:  %(message)s")

    if not hasattr(socket, "SO_REUSEPORT"):  # pragma: no cover - Linux, macOS and BSD have it
        import uvicorn

        uvicorn.run(
            APP, host=args.host, port=args.port, workers=args.workers, server_header=False,
            log_level=args.log_level,
        )  # fmt: skip
        return 0
    # The port must be free: a socket that did not ask to share it (as ours do) fails to bind
    # while anyone listens there, an earlier `make serve` still running included (whose
    # sockets ours would otherwise join).
    try:
        listening_socket(args.host, args.port, shared=False).close()
    except OSError as exc:
        print(f"Cannot serve on {args.host}:{args.port}: {exc.strerror}", file=sys.stderr)
        return 1

    spawn = multiprocessing.get_context("spawn")

    def start() -> BaseProcess:
        process = spawn.Process(
            target=serve_one, args=(args.host, args.port, args.log_level), name="console-server"
        )
        process.start()
        return process

    print(
        f"Serving on http://{args.host}:{args.port} in {args.workers} processes",
        file=sys.stderr,
        flush=True,
    )
    return Supervisor(args.workers, start).run()


if __name__ == "__main__":
    sys.exit(main())
