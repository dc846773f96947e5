"""The production server (`make serve`): gunicorn, whose processes each run uvicorn serving
`console.asgi` on an event loop of its own (`AsgiWorker`), each listening on a socket of its own
on the one port, so that the kernel spreads new connections over the processes.

Why a socket each (gunicorn's `--reuse-port`: with it, each worker binds its own `SO_REUSEPORT`
socket as it starts, where without it the processes share the master's one): with one shared
socket the process that is idle when a client connects takes every connection that arrives
meanwhile. A client that opens a few kept-alive connections at once (a proxy's pool of upstream
connections, a load generator) then sends all its requests to one process while the other
waits; in the benchmark, with 1,000 agents waiting, such rounds answered half the requests/s.
With a socket each, the kernel picks the process by a hash of the connection's addresses,
whatever the processes are doing.

gunicorn supervises: it starts another process when one dies; on SIGINT or SIGTERM it stops
them (each finishes the requests in flight) and exits; on SIGHUP it starts new processes, which
load the code anew, and then stops the old ones (a deploy's reload).

uvicorn's own handling of X-Forwarded-For and X-Forwarded-Proto is off: by default it believes
those headers from any client on 127.0.0.1, and would hand the application an address the
client chose (a way around the sign-in lockout from the same host). The application reads
them itself, as far as CONSOLE_TRUSTED_PROXIES (console/client_ip.py) and
SECURE_PROXY_SSL_HEADER say, the same under every server.

Before gunicorn takes over this process, with DEBUG off it runs the settings' startup checks
(the receipts' signing keys, the passkeys' relying party) and does not listen at all if one
fails; and it refuses a port already in use.

    python -m console.serve [--host 0.0.0.0] [--port $PORT] [--workers $WEB_CONCURRENCY]
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import warnings
from typing import Any

with warnings.catch_warnings():
    # uvicorn's gunicorn worker is kept in uvicorn, and moves to the `uvicorn-worker` package.
    warnings.simplefilter("ignore", DeprecationWarning)
    from uvicorn.workers import UvicornWorker

APP = "console.asgi:application"


class AsgiWorker(UvicornWorker):
    """A gunicorn worker process: uvicorn serving the application, believing no client's
    forwarding headers (see the module's docstring) and naming no server."""

    CONFIG_KWARGS: dict[str, Any] = {  # noqa: RUF012 - as uvicorn's own worker declares it
        **UvicornWorker.CONFIG_KWARGS,
        "proxy_headers": False,
        "server_header": False,
        "lifespan": "off",
    }


def gunicorn_command(host: str, port: int, workers: int, log_level: str) -> list[str]:
    """The gunicorn command that serves (see the module's docstring)."""
    address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return [
        sys.executable, "-m", "gunicorn", APP,
        "--worker-class", "console.serve.AsgiWorker",
        "--workers", str(workers),
        "--bind", address,
        "--reuse-port",
        # uvicorn's own keep-alive (gunicorn's default, 2 s, drops a browser's kept connection
        # between two clicks).
        "--keep-alive", "5",
        "--log-level", log_level,
        # No control socket: its default path is shared by every gunicorn of the user.
        "--no-control-socket",
    ]  # fmt: skip


def port_free(host: str, port: int) -> str | None:
    """Why nothing can serve on (host, port), or None when it is free: a socket that does not
    ask to share the port fails to bind while anyone listens there, an earlier `make serve`
    still running included (whose workers' sockets ours would otherwise join)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            return exc.strerror or str(exc)
    return None


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
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error("--workers must be at least 1")

    # Before anything listens: a server that answered /healthz and then 500 to every receipt
    # would pass a deploy's health check.
    problems = startup_problems()
    if problems:
        print("Not serving: the production settings are incomplete.", file=sys.stderr)
        for problem in problems:
            print(f"  {problem}", file=sys.stderr)
        print("(`python manage.py check --deploy` lists every check.)", file=sys.stderr)
        return 1
    busy = port_free(args.host, args.port)
    if busy is not None:
        print(f"Cannot serve on {args.host}:{args.port}: {busy}", file=sys.stderr)
        return 1

    print(
        f"Serving on http://{args.host}:{args.port} in {args.workers} processes",
        file=sys.stderr,
        flush=True,
    )
    command = gunicorn_command(args.host, args.port, args.workers, args.log_level)
    os.execv(command[0], command)  # gunicorn becomes this process: signals reach it as before


if __name__ == "__main__":
    sys.exit(main())
