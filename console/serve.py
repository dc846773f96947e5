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
flight) and exits; a second signal kills them. On SIGHUP it replaces them one by one with
processes that load the code anew, each new one listening before its old one is stopped, so
the port is served throughout (a deploy's reload). Where the platform has no `SO_REUSEPORT`,
it runs `uvicorn --workers` instead.

uvicorn's own handling of X-Forwarded-For and X-Forwarded-Proto is off: by default it believes
those headers from any client on 127.0.0.1, and would hand the application an address the
client chose (a way around the sign-in lockout from the same host). The application reads
them itself, as far as CONSOLE_TRUSTED_PROXIES (console/client_ip.py) and
SECURE_PROXY_SSL_HEADER say, the same under every server.

With DEBUG off it first runs the settings' startup checks (the receipts' signing keys, the
passkeys' relying party) and does not listen at all if one fails.

    python -m console.serve [--host 0.0.0.0] [--port $PORT] [--workers $WEB_CONCURRENCY]

`make run` serves with `--reload` instead: one process, the same application, started again by
uvicorn's reloader when the code changes.
"""

from __future__ import annotations

import argparse
import atexit
import logging
import multiprocessing
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing import resource_tracker
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from types import FrameType

APP = "console.asgi:application"
# uvicorn's exit status when its application cannot start (uvicorn.config.STARTUP_FAILURE):
# starting another process would fail the same way.
STARTUP_FAILURE = 3
# How often the supervisor looks for a process that died (and so, at most how often it starts
# another: a process that dies at once is not restarted in a tight loop).
CHECK_SECONDS = 1.0
# How long a reload waits for a new process to listen (load the application, start up) before
# it gives up and keeps the old one.
READY_SECONDS = 60.0

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


def serve_one(host: str, port: int, log_level: str, ready: Connection) -> None:
    """One server process: its own socket on the shared port, and uvicorn's server on it; it
    says so on `ready` once it listens."""
    import uvicorn

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.started:
                ready.send_bytes(b"listening")
                ready.close()

    sock = listening_socket(host, port, shared=True)
    config = uvicorn.Config(
        APP,
        host=host,
        port=port,
        server_header=False,
        log_level=log_level,
        workers=1,
        proxy_headers=False,
    )
    Server(config).run(sockets=[sock])


# What `--reload` watches: the project's own code and templates (not the virtualenv's).
RELOAD_DIRS = ("beliefs", "console", "demo", "templates")


def serve_reloading(host: str, port: int, log_level: str) -> int:
    """`make run`'s server: the same application and settings in one uvicorn process, which
    uvicorn's reloader starts again when a module or template of the project changes."""
    import uvicorn

    root = Path(__file__).resolve().parent.parent
    uvicorn.run(
        APP, host=host, port=port, server_header=False, log_level=log_level,
        proxy_headers=False, reload=True, reload_dirs=[str(root / d) for d in RELOAD_DIRS],
        reload_includes=["*.py", "*.html"],
    )  # fmt: skip
    return 0


@dataclass(frozen=True)
class Child:
    """A server process, and the end of a pipe it writes to once it listens (a pipe rather
    than a multiprocessing Event, whose semaphore would be registered with multiprocessing's
    resource tracker: the pipe needs nothing of another process)."""

    process: BaseProcess
    ready: Connection


def start_child(
    process_class: type[BaseProcess],
    target: Callable[..., object],
    args: tuple[object, ...],
) -> Child:
    """Starts `target(*args, tell)` in a new process of `process_class`, where `tell` is the
    end of the pipe it says "listening" on; the parent keeps the other end."""
    ready, tell = multiprocessing.Pipe(duplex=False)
    process = process_class(target=target, args=(*args, tell), name="console-server")
    process.start()
    tell.close()  # the child's end: the parent's copy closed, the pipe ends with the child
    return Child(process, ready)


class Supervisor:
    """Keeps `count` processes running `start()` until stopped (see the module's docstring)."""

    def __init__(self, count: int, start: Callable[[], Child]) -> None:
        self.count = count
        self.start = start
        self.children: list[Child] = []
        self.retiring: list[BaseProcess] = []  # replaced by a reload, finishing their requests
        self.stopping = threading.Event()
        self.reload_asked = threading.Event()
        self.signals = 0
        self.status = 0

    def on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.signals += 1
        if self.signals > 1:
            for process in self.processes():
                if process.is_alive():
                    process.kill()
        self.stopping.set()

    def on_hangup(self, signum: int, frame: FrameType | None) -> None:
        self.reload_asked.set()

    def processes(self) -> list[BaseProcess]:
        return [child.process for child in self.children] + self.retiring

    def run(self) -> int:
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, self.on_signal)
        signal.signal(signal.SIGHUP, self.on_hangup)
        self.children = [self.start() for _ in range(self.count)]
        log.info("Server processes: %s", ", ".join(str(c.process.pid) for c in self.children))
        while not self.stopping.wait(CHECK_SECONDS):
            if self.reload_asked.is_set():
                self.reload_asked.clear()
                self.reload()
            self.replace_the_dead()
        for process in self.processes():
            if process.is_alive() and process.pid is not None:
                os.kill(process.pid, signal.SIGTERM)
        for process in self.processes():
            process.join()
        return self.status

    def replace_the_dead(self) -> None:
        self.retiring = [process for process in self.retiring if process.exitcode is None]
        for n, child in enumerate(self.children):
            process = child.process
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
            forget_metrics_of(process.pid)
            self.children[n] = self.start()

    def reload(self) -> None:
        """Replaces each process in turn: the new one listens before the old one is asked to
        stop (it finishes its requests in flight meanwhile). A new process that does not listen
        within READY_SECONDS is killed, and the old ones it was to replace keep serving."""
        log.info("SIGHUP: replacing the server processes")
        for n, old in enumerate(self.children):
            if self.stopping.is_set():
                return
            new = self.start()
            if not self.until_ready(new):
                if new.process.is_alive():
                    new.process.kill()
                new.process.join()
                if not self.stopping.is_set():
                    log.error(
                        "New server process %s did not start (status %s); the reload stops, "
                        "and %s go on serving",
                        new.process.pid,
                        new.process.exitcode,
                        ", ".join(str(c.process.pid) for c in self.children),
                    )
                return
            if old.process.is_alive() and old.process.pid is not None:
                os.kill(old.process.pid, signal.SIGTERM)
                self.retiring.append(old.process)
            self.children[n] = new
        log.info("Server processes: %s", ", ".join(str(c.process.pid) for c in self.children))

    def until_ready(self, child: Child) -> bool:
        """True once `child` listens; False if it exits, takes over READY_SECONDS, or the
        supervisor is stopping meanwhile."""
        deadline = time.monotonic() + READY_SECONDS
        while not child.ready.poll(0.1):
            if self.stopping.is_set() or child.process.exitcode is not None:
                return False
            if time.monotonic() > deadline:
                return False
        try:
            return child.ready.recv_bytes() == b"listening"
        except EOFError:  # it ended before it listened
            return False


def metrics_directory() -> Path:
    """The directory where the server processes keep what /metrics sums over them
    (PROMETHEUS_MULTIPROC_DIR, set before any of them imports prometheus_client): the one
    named in the environment, emptied of an earlier run's files, or a fresh one removed at
    exit."""
    named = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if named:
        directory = Path(named)
        directory.mkdir(parents=True, exist_ok=True)
        for stale in directory.glob("*.db"):
            stale.unlink()
    else:
        directory = Path(tempfile.mkdtemp(prefix="console-metrics-"))
        atexit.register(shutil.rmtree, directory, True)
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(directory)
    return directory


def forget_metrics_of(pid: int | None) -> None:
    """A server process that exited holds no waiters any more (its live gauges drop out)."""
    if pid is not None and os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid)


def startup_problems() -> list[str]:
    """With DEBUG off, what in the settings would let the server start and then fail people
    (the system checks tagged "startup": the receipts' signing keys, the passkeys' relying
    party), each with what to set; the settings module's own refusal if it refuses to load.
    Empty with DEBUG on, where development defaults stand in."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    import django
    from django.conf import settings
    from django.core import checks
    from django.core.exceptions import ImproperlyConfigured

    try:
        django.setup()
    except ImproperlyConfigured as exc:
        return [str(exc)]
    if settings.DEBUG:
        return []
    from console.checks import STARTUP

    found = checks.run_checks(tags=[STARTUP], include_deployment_checks=True)
    return [
        f"{message.id}: {message.msg}" + (f"\n    {message.hint}" if message.hint else "")
        for message in found
        if message.is_serious()
    ]


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
    parser.add_argument(
        "--reload",
        action="store_true",
        help="development (`make run`): one process, started again when the code changes",
    )
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error("--workers must be at least 1")
    logging.basicConfig(level=args.log_level.upper(), format="%(levelname)s:  %(message)s")
    metrics_directory()

    # Before anything listens: a server that answered /healthz and then 500 to every receipt
    # would pass a deploy's health check.
    problems = startup_problems()
    if problems:
        print("Not serving: the production settings are incomplete.", file=sys.stderr)
        for problem in problems:
            print(f"  {problem}", file=sys.stderr)
        print("(`python manage.py check --deploy` lists every check.)", file=sys.stderr)
        return 1
    if args.reload:
        return serve_reloading(args.host, args.port, args.log_level)

    if not hasattr(socket, "SO_REUSEPORT"):  # pragma: no cover - Linux, macOS and BSD have it
        import uvicorn

        uvicorn.run(
            APP, host=args.host, port=args.port, workers=args.workers, server_header=False,
            log_level=args.log_level, proxy_headers=False,
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
    # multiprocessing's resource tracker is a process of its own, started with the first server
    # process; started while SIGHUP is ignored, it goes on ignoring it (a disposition that
    # survives exec), so that a SIGHUP to the whole process group does not end it. The server
    # processes, started once the supervisor handles SIGHUP, get the default disposition.
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    resource_tracker.ensure_running()

    def start() -> Child:
        return start_child(spawn.Process, serve_one, (args.host, args.port, args.log_level))

    print(
        f"Serving on http://{args.host}:{args.port} in {args.workers} processes",
        file=sys.stderr,
        flush=True,
    )
    return Supervisor(args.workers, start).run()


if __name__ == "__main__":
    sys.exit(main())
