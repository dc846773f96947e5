"""What the benchmark's modules share (`bench.main`, `bench.trickle`, `bench.longpoll` and the
rows built on its servers and people, `bench.twoservers` and `bench.approval`): none imports
`bench.main`, which imports them (that would be a cycle)."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from beliefs.models import WebhookEndpoint


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def local_endpoint(runtime_name: str) -> tuple[WebhookEndpoint, int]:
    """A webhook endpoint with a new secret, of the runtime of this name (made if need be), at
    a free port of 127.0.0.1; and that port, for a `demo.receiver.Receiver` to serve."""
    from beliefs.domain import webhooks as rules
    from beliefs.models import Runtime, WebhookEndpoint

    runtime, _ = Runtime.objects.get_or_create(name=runtime_name)
    port = free_port()
    endpoint = WebhookEndpoint.objects.create(
        runtime=runtime, url=f"http://127.0.0.1:{port}/hooks", secret=rules.new_secret()
    )
    return endpoint, port


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank percentile (q in 0..100) of a non-empty sample."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


COUNTING = Path(__file__).resolve().parent / "counting"


def counting_env(directory: Path) -> dict[str, str]:
    """The environment under which a process started counts its SQL statements and
    transactions into `directory` (`bench/counting/sitecustomize.py`), with its children."""
    path = os.environ.get("PYTHONPATH", "")
    return {
        "BENCH_COUNTS": str(directory),
        "PYTHONPATH": f"{COUNTING}{os.pathsep}{path}" if path else str(COUNTING),
    }


def counted(directory: Path) -> tuple[int, int]:
    """The statements and transactions the processes counting into `directory` have sent so
    far: read once each has written again (it writes every 0.2 s)."""
    time.sleep(0.5)
    statements = transactions = 0
    for file in directory.iterdir():
        if file.suffix == ".tmp":
            continue  # a write under way: the file it replaces holds the count
        sent, committed = file.read_text().split()
        statements += int(sent)
        transactions += int(committed)
    return statements, transactions


def database_pids() -> list[int]:
    """PostgreSQL's processes serving the other connections to this database (the servers' and
    workers' the benchmark started); none on SQLite."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
            " AND pid <> pg_backend_pid()"
        )
        return [pid for (pid,) in cursor.fetchall()]
