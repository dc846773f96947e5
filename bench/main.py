"""The benchmark of record: `make bench` (`python -m bench [--quick]`).

Prints one table. Each figure is a ratio of two timings taken in the same run, on SQLite and,
when DATABASE_URL names one, on PostgreSQL, with the goal it is held to and whether it holds.
A figure to compare, never a test: the machine is shared and noisy, so timings of the same
table are interleaved (A, B, A, B, ...) where the data allows and reported as medians.

Each database runs in a child process (settings read DATABASE_URL once, at import) against a
database made for the benchmark and dropped first: a temporary SQLite file, and on PostgreSQL
BENCH_DATABASE_URL or else DATABASE_URL's database name with `_bench` appended.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from statistics import median
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from bench.common import free_port, local_endpoint

ROOT = Path(__file__).resolve().parents[1]
ROW_PREFIX = "BENCH-ROW "
# Production settings, minus the HTTPS redirect (the load generator speaks plain HTTP).
PRODUCTION_ENV = {
    "DEBUG": "false",
    "DJANGO_SECRET_KEY": "benchmark-only-secret-" + "x" * 40,
    "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost,testserver",
    "DJANGO_SECURE_SSL_REDIRECT": "false",
    "DATABASE_CONN_MAX_AGE": "60",
    # The passkeys' relying party (console.serve refuses to start without one).
    "CONSOLE_WEBAUTHN_RP_ID": "localhost",
    "CONSOLE_WEBAUTHN_ORIGINS": "http://localhost",
}


@dataclass(frozen=True)
class Scale:
    samples: int  # timings per figure
    history: int  # earlier runs of the long-history principal
    other_beliefs: int  # beliefs of other principals (PostgreSQL)
    instances: int  # instances for the "large" pages
    audit_rows: int  # audit rows for the "large" pages
    load_seconds: int  # per wrk run
    load_rounds: int


# What --only can name; the table's groups, in the order they are measured.
GROUPS = (
    "pages",
    "slots",
    "throughput",
    "history",
    "others",
    "worker",
    "trickle",
    "waiting",
    "many",
    "servers",
    "approval",
    "validator",
)

# Rounds of the plan-by-slots figures, whatever the scale.
SLOT_ROUNDS = 101

FULL = Scale(21, 5_000, 1_000_000, 100_000, 1_000_000, 4, 2)
QUICK = Scale(9, 1_000, 100_000, 10_000, 100_000, 2, 1)


@dataclass(frozen=True)
class Row:
    group: str
    figure: str
    value: str  # what was measured, e.g. "12.1 ms vs 13.0 ms"
    ratio: float | None
    goal: str
    holds: bool | None


# --- the parent: one child per database, one table --------------------------------------------


def _bench_postgres_url() -> str | None:
    explicit = os.environ.get("BENCH_DATABASE_URL")
    if explicit:
        return explicit
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        return None
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "_bench"))


def _recreate_postgres(url: str) -> None:
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    admin = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def _receipt_key() -> str:
    """A receipts signing key for this benchmark run (production settings need one)."""
    import tempfile

    from beliefs.signing import new_key, write_key

    path = Path(tempfile.mkdtemp(prefix="bench-receipts-")) / "signing.pem"
    write_key(path, new_key())
    return str(path)


def _run_child(
    label: str,
    url: str,
    quick: bool,
    only: Sequence[str],
    against: str | None = None,
    agents: int | None = None,
) -> list[Row]:
    env = {
        **os.environ,
        **PRODUCTION_ENV,
        "DATABASE_URL": url,
        "CONSOLE_RECEIPT_SIGNING_KEYS": os.environ.get("CONSOLE_RECEIPT_SIGNING_KEYS")
        or _receipt_key(),
    }
    args = [sys.executable, "-m", "bench", "--child", label]
    args += [f"--only={group}" for group in only]
    if quick:
        args.append("--quick")
    if against:
        args.append(f"--against={against}")
    if agents:
        args.append(f"--agents={agents}")
    print(f"--- {label}: measuring (progress below)", file=sys.stderr, flush=True)
    proc = subprocess.run(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"the {label} benchmark failed (exit {proc.returncode})")
    return [
        Row(**json.loads(line[len(ROW_PREFIX) :]))
        for line in proc.stdout.splitlines()
        if line.startswith(ROW_PREFIX)
    ]


def _cell(row: Row | None) -> str:
    if row is None:
        return "—"
    if row.ratio is None:
        return row.value
    return f"{row.ratio:.2f}× ({row.value})"


def _holds(row: Row | None) -> str:
    if row is None or row.holds is None:
        return "—"
    return "yes" if row.holds else "NO"


def print_table(results: dict[str, list[Row]]) -> None:
    print("\n".join(table_lines(results)))


def table_lines(results: dict[str, list[Row]]) -> list[str]:
    """The table as Markdown lines: a row per figure, a column per database."""
    labels = list(results)
    keys: list[tuple[str, str]] = []
    goals: dict[tuple[str, str], str] = {}
    for rows in results.values():
        for row in rows:
            key = (row.group, row.figure)
            if key not in goals:
                keys.append(key)
                goals[key] = row.goal
    by_label = {label: {(r.group, r.figure): r for r in rows} for label, rows in results.items()}
    header = ["group", "figure", *labels, "goal", *(f"holds ({label})" for label in labels)]
    lines = []
    for key in keys:
        cells = [by_label[label].get(key) for label in labels]
        lines.append(
            [*key, *(_cell(c) for c in cells), goals[key] or "—", *(_holds(c) for c in cells)]
        )
    return [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
        *("| " + " | ".join(line) + " |" for line in lines),
    ]


# The page that shows the latest table. Only the text between the markers is rewritten, so the
# hand-written explanation around it stays.
DOCS_PAGE = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
TABLE_START = "<!-- make bench writes the table below: do not edit by hand -->"
TABLE_END = "<!-- end of the table make bench writes -->"


def write_docs_table(heading: str, results: dict[str, list[Row]], page: Path = DOCS_PAGE) -> bool:
    """Put the heading and the table between the page's markers; False where it has none."""
    text = page.read_text() if page.exists() else ""
    before, start, rest = text.partition(TABLE_START)
    _, end, after = rest.partition(TABLE_END)
    if not start or not end:
        return False
    table = "\n".join(table_lines(results))
    page.write_text(f"{before}{TABLE_START}\n{heading}\n\n{table}\n{TABLE_END}{after}")
    return True


def _contract_rows() -> list[Row]:
    """The proposal validator's figures, as `bench.contract` measures them."""
    from bench import contract as bench_contract

    rows = []
    for size in bench_contract.SIZES:
        nodes, edges, mutations, verdict, ms = bench_contract.measure(size)
        rows.append(
            Row(
                "proposal validator",
                f"{nodes:,} nodes, {edges:,} edges, {mutations:,} mutations ({verdict.value})",
                f"{ms:.0f} ms median of {bench_contract.REPEATS}",
                None,
                "",
                None,
            )
        )
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the data, fewer samples")
    parser.add_argument(
        "--only",
        choices=GROUPS,
        action="append",
        help="measure only this group (repeatable); the table then has only its rows",
    )
    parser.add_argument(
        "--against",
        metavar="PATH",
        help="trickle, approval: also measure the worker (and the servers) of the checkout at"
        " PATH, in turns with this one",
    )
    parser.add_argument(
        "--agents",
        type=_positive,
        metavar="N",
        help="waiting, many: N agents wait at once (default 1,000 and 10,000; 200 and 2,000"
        " with --quick)",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    only = args.only or list(GROUPS)
    against = str(Path(args.against).resolve()) if args.against else None
    if args.child:
        child(args.child, QUICK if args.quick else FULL, only, against, args.agents)
        return
    started = time.perf_counter()
    speed = python_speed()
    results: dict[str, list[Row]] = {}
    with tempfile.TemporaryDirectory(prefix="console-bench-") as tmp:
        results["SQLite"] = _run_child(
            "SQLite", f"sqlite:///{tmp}/bench.sqlite3", args.quick, only, against, args.agents
        )
    postgres = _bench_postgres_url()
    if postgres:
        _recreate_postgres(postgres)
        results["PostgreSQL"] = _run_child(
            "PostgreSQL", postgres, args.quick, only, against, args.agents
        )
    contract = _contract_rows() if "validator" in only else []
    for rows in results.values():
        rows.extend(contract)
    scale = QUICK if args.quick else FULL
    heading = (
        f"Benchmark ({'quick' if args.quick else 'full'}: history {scale.history:,} runs, "
        f"pages at {scale.instances:,} instances and {scale.audit_rows:,} audit rows; "
        f"medians of {scale.samples}; {os.cpu_count()} CPUs; this machine's Python sums "
        f"10,000,000 squares in {speed:.2f} s; {time.perf_counter() - started:.0f} s)"
    )
    print(heading + "\n")
    print_table(results)
    # Only a whole table replaces the one of record: a quick or partial run would hide rows.
    if args.quick or args.only or against:
        print(f"\n(a quick or partial table: {DOCS_PAGE.name} is left as it was)")
    elif write_docs_table(heading, results):
        print(f"\nWritten into {DOCS_PAGE}")
    else:
        print(f"\n{DOCS_PAGE} has no table markers: the table was not written", file=sys.stderr)


def _positive(text: str) -> int:
    number = int(text)
    if number < 1:
        raise argparse.ArgumentTypeError("a whole number from 1")
    return number


def python_speed(repeat: int = 3) -> float:
    """Seconds this machine's Python takes to sum 10,000,000 squares (the median of `repeat`):
    printed with the table, so that tables taken on different machines can be compared."""
    timings = []
    for _ in range(repeat):
        began = time.perf_counter()
        sum(i * i for i in range(10_000_000))
        timings.append(time.perf_counter() - began)
    return median(timings)


# --- the child: one database -------------------------------------------------------------------


def _progress(message: str) -> None:
    print(f"    {message}", file=sys.stderr, flush=True)


def _emit(row: Row) -> None:
    print(ROW_PREFIX + json.dumps(asdict(row)), flush=True)


def _ms(fn: Callable[[], Any]) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def side_by_side(calls: dict[str, Callable[[], Any]], samples: int) -> dict[str, float]:
    """Median milliseconds of each call, the calls taken in turn so drift hits all alike."""
    timings: dict[str, list[float]] = {name: [] for name in calls}
    for call in calls.values():  # warm caches and connections once
        call()
    for _ in range(samples):
        for name, call in calls.items():
            timings[name].append(_ms(call))
    return {name: median(values) for name, values in timings.items()}


def _ratio_row(group: str, figure: str, a: float, b: float, limit: float, unit: str = "ms") -> Row:
    ratio = b / a
    return Row(
        group, figure, f"{a:.1f} {unit} vs {b:.1f} {unit}", ratio, f"≤ {limit:g}×", ratio <= limit
    )


class Bench:
    def __init__(self, label: str, scale: Scale) -> None:
        from django.contrib.auth.models import User
        from django.db import connection
        from django.test import Client

        from beliefs.roles import CLASSIFIERS_GROUP, REVIEWERS_GROUP, grant_role
        from beliefs.services.audit import Actor

        self.label = label
        self.scale = scale
        self.connection = connection
        self.postgres = connection.vendor == "postgresql"
        from beliefs.models import Runtime, RuntimeAPIKey

        runtime, _ = Runtime.objects.get_or_create(name="bench")
        key, self.raw_key = RuntimeAPIKey.objects.create_key(name="bench", runtime=runtime)
        assert isinstance(key, RuntimeAPIKey)
        self.actor = Actor(key=key)
        self.runtime = Client(HTTP_AUTHORIZATION=f"Api-Key {self.raw_key}")
        self.viewer = User.objects.create_user("viewer", password="unused-" + uuid.uuid4().hex)
        staff = User.objects.create_user("staff", password="unused-" + uuid.uuid4().hex)
        grant_role(staff, CLASSIFIERS_GROUP)
        grant_role(staff, REVIEWERS_GROUP)
        self.person = Client()
        self.person.force_login(self.viewer)
        self.staff = Client()
        self.staff.force_login(staff)

    # -- data ------------------------------------------------------------------------------

    def task_class(self, key: str, slots: int) -> Any:
        from beliefs.models import Decision, TaskClass
        from beliefs.schemas import TaskClassIn, parse
        from beliefs.services.task_classes import task_class_register

        keys = [f"s{i:03d}" for i in range(slots)]
        body = {
            "name": key,
            "slots": [{"key": k, "label": f"Slot {k}"} for k in keys],
            "decisions": [{"key": "act", "label": "Act", "slots": keys}],
        }
        task_class_register(key=key, **parse(TaskClassIn, body, key=key), actor=self.actor)
        task_class = TaskClass.objects.get(key=key)
        # As a classifier would leave it: reversible slots feeding an irreversible decision.
        task_class.slots.update(risk_class="reversible")
        Decision.objects.filter(task_class=task_class).update(risk_class="irreversible")
        return task_class

    def open_and_plan(
        self, key: str, principal: str, beliefs: list[dict[str, Any]], world: dict[str, Any]
    ) -> Any:
        from beliefs.schemas import InstanceIn, parse
        from beliefs.services.instances import instance_open
        from beliefs.services.planning import instance_plan

        data = parse(
            InstanceIn,
            {"task_class": key, "principal": principal, "world": world, "beliefs": beliefs},
        )
        instance = instance_open(
            task_class_key=key,
            principal=principal,
            world=data.get("world"),
            beliefs=data.get("beliefs", []),
            actor=self.actor,
        )
        return instance_plan(instance=instance, actor=self.actor)

    def two_runs(self, key: str, slots: int, principal: str) -> Any:
        """Run 1 answered by the person; run 2 carries every value into a CONFIRM with a
        world diff: one prompt per slot. Returns run 2, planned."""
        task_class = self.task_class(key, slots)
        keys = list(task_class.slots.values_list("key", flat=True))
        world1 = {k: {"holder": "Ada", "ref": 1} for k in keys}
        world2 = {k: {"holder": "Ada", "ref": 2} for k in keys}
        beliefs = [
            {"slot": k, "value": f"value of {k}", "source": "user", "world_ref": world1[k]}
            for k in keys
        ]
        self.open_and_plan(key, principal, beliefs, world1)
        return self.open_and_plan(key, principal, [], world2)

    def bulk_load(self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        """COPY on PostgreSQL, executemany on SQLite: millions of rows in seconds (in one
        transaction: SQLite would otherwise commit, so sync to disk, row by row)."""
        from django.db import transaction

        with transaction.atomic(), self.connection.cursor() as cursor:
            if self.postgres:
                names = ", ".join(columns)
                raw = cursor.cursor  # psycopg's own cursor, for COPY
                with raw.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row(row)
            else:
                marks = ", ".join("?" for _ in columns)
                sql = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})"
                batch: list[Sequence[Any]] = []
                for row in rows:
                    batch.append([self._sqlite(v) for v in row])
                    if len(batch) == 50_000:
                        cursor.executemany(sql, batch)
                        batch = []
                if batch:
                    cursor.executemany(sql, batch)

    @staticmethod
    def _sqlite(value: Any) -> Any:
        # As Django stores them on SQLite: UUIDs as 32 hex digits, times as naive UTC text.
        if isinstance(value, uuid.UUID):
            return value.hex
        if isinstance(value, datetime):
            return value.astimezone(UTC).replace(tzinfo=None).isoformat(sep=" ")
        return value

    def analyze(self) -> None:
        with self.connection.cursor() as cursor:
            cursor.execute("ANALYZE")

    # -- figures ---------------------------------------------------------------------------

    def plan_call(self, instance: Any) -> Callable[[], Any]:
        url = f"/api/v1/instances/{instance.pk}/plan/"

        def call() -> None:
            response = self.runtime.post(url)
            assert response.status_code == 200, response.content

        return call

    def queries(self, call: Callable[[], Any]) -> int:
        from django.test.utils import CaptureQueriesContext

        with CaptureQueriesContext(self.connection) as captured:
            call()
        return len(captured)

    def slots_group(self, emit: bool = True) -> dict[int, Any]:
        _progress("plan at 5, 50 and 200 slots")
        runs = {n: self.two_runs(f"bench.slots{n}", n, "viewer") for n in (5, 50, 200)}
        if not emit:
            return runs
        calls = {n: self.plan_call(run) for n, run in runs.items()}
        # More rounds than other figures (they are quick): with 21, the 5-slot median moved by
        # a fifth from run to run, and the 200-slot ratio by 1.5 with it.
        times = side_by_side({str(n): c for n, c in calls.items()}, SLOT_ROUNDS)
        q5, q200 = self.queries(calls[5]), self.queries(calls[200])
        group = "plan by slots"
        _emit(Row(group, "queries, 5 vs 200 slots", f"{q5} vs {q200}", None, "equal", q5 == q200))
        _emit(_ratio_row(group, "p50 plan, 5 vs 50 slots", times["5"], times["50"], 8))
        # Re-planning 200 slots within 6x of 5: what each slot still costs when nothing changed
        # (its row of the slots' query, compared with the reads the plan was remembered from:
        # beliefs/services/plan_memo.py) against the request's fixed cost.
        _emit(_ratio_row(group, "p50 plan, 5 vs 200 slots", times["5"], times["200"], 6))
        # What the ratio divides: each slot's own cost, and so what 200 slots add.
        per_slot = (times["200"] - times["5"]) / 195 * 1000
        _emit(Row(group, "each slot beyond 5 (of 200)", f"{per_slot:.0f} µs", None, "", None))
        return runs

    def past_runs(
        self, task_class: Any, slots: list[Any], user: Any, runtime: Any, start: datetime, runs: int
    ) -> None:
        """`runs` finished runs of `user` by `runtime`, run n on day n after `start`, each with a
        user's belief for every slot (bulk-created: thousands in seconds)."""
        from beliefs.models import Belief, InstanceStatus, TaskInstance

        instances = TaskInstance.objects.bulk_create(
            TaskInstance(
                task_class=task_class,
                principal=user,
                runtime=runtime,
                run_number=run,
                status=InstanceStatus.READY,
                planned_at=start + timedelta(days=run),
                world={s.key: {"ref": run} for s in slots},
                plan_items=[{"slot": s.key, "value": run} for s in slots],
                bindings={s.key: run for s in slots},
            )
            for run in range(1, runs + 1)
        )
        Belief.objects.bulk_create(
            (
                Belief(
                    instance=instance,
                    runtime=runtime,
                    principal=user,
                    slot=slot,
                    value=f"{slot.key} of run {instance.run_number}",
                    source="user",
                    turn=1,
                    acquired_at=start + timedelta(days=instance.run_number),
                    world_ref={"ref": instance.run_number},
                )
                for instance in instances
                for slot in slots
            ),
            batch_size=5_000,
        )

    def history_group(self, emit: bool = True) -> Any:
        from django.contrib.auth.models import User

        _progress(f"plan after 10 vs {self.scale.history:,} earlier runs")
        key = "bench.history"
        task_class = self.task_class(key, 5)
        slots = list(task_class.slots.all())
        now = datetime.now(UTC)
        planned = {}
        for name, earlier in (("short", 10), ("long", self.scale.history)):
            user = User.objects.create_user(f"history-{name}", password=None)
            start = now - timedelta(days=earlier)
            # The measured run's own runtime: its history is what it carries.
            self.past_runs(task_class, slots, user, self.actor.runtime, start, earlier)
            world = {s.key: {"ref": 0} for s in slots}
            planned[name] = self.open_and_plan(key, user.username, [], world)
        self.analyze()
        if not emit:
            return planned["short"]
        calls = {name: self.plan_call(run) for name, run in planned.items()}
        times = side_by_side(calls, self.scale.samples)
        _emit(
            _ratio_row(
                "plan by history",
                f"p50 plan, 10 vs {self.scale.history:,} earlier runs",
                times["short"],
                times["long"],
                1.3,
            )
        )
        return planned["short"]

    def shared_history_group(self) -> None:
        """A class shared without its history: the measured run's runtime may carry none of the
        other runtime's values, however many the person has."""
        from django.contrib.auth.models import User

        from beliefs.models import Belief, Runtime, TaskClassShare

        _progress(f"plan after 10 vs {self.scale.history:,} runs of another runtime")
        key = "bench.shared"
        task_class = self.task_class(key, 5)
        other, _ = Runtime.objects.get_or_create(name="bench-owner")
        task_class.owner = other
        task_class.save(update_fields=["owner"])
        measured = self.actor.runtime
        assert measured is not None
        TaskClassShare.objects.create(task_class=task_class, runtime=measured)
        slots = list(task_class.slots.all())
        now = datetime.now(UTC)
        planned = {}
        for name, earlier in (("short", 10), ("long", self.scale.history)):
            user = User.objects.create_user(f"shared-{name}", password=None)
            start = now - timedelta(days=earlier)
            # Not the measured run's runtime: none of these may be carried.
            self.past_runs(task_class, slots, user, other, start, earlier)
            # The measured runtime's own earlier run, older than all of the other's: the one
            # value it may carry, which planning must reach past the other's history.
            mine = self.open_and_plan(
                key,
                user.username,
                [{"slot": s.key, "value": "mine", "source": "user"} for s in slots],
                {s.key: {"ref": 0} for s in slots},
            )
            Belief.objects.filter(instance=mine).update(acquired_at=start - timedelta(days=1))
            world = {s.key: {"ref": 0} for s in slots}
            planned[name] = self.open_and_plan(key, user.username, [], world)
        self.analyze()
        calls = {name: self.plan_call(run) for name, run in planned.items()}
        times = side_by_side(calls, self.scale.samples)
        _emit(
            _ratio_row(
                "plan by another runtime's history",
                f"p50 plan, 10 vs {self.scale.history:,} runs of a class shared without history",
                times["short"],
                times["long"],
                1.3,
            )
        )

    def other_principals_group(self, run: Any) -> None:
        group = "plan by others' beliefs"
        figure = f"p50 plan, before vs after +{self.scale.other_beliefs:,} others' beliefs"
        if not self.postgres:
            _emit(Row(group, figure, "PostgreSQL only", None, "≤ 1.3×", None))
            return
        _progress(f"plan before and after {self.scale.other_beliefs:,} beliefs of others")
        call = self.plan_call(run)
        before = side_by_side({"before": call}, self.scale.samples)["before"]
        per_principal = self.scale.other_beliefs // 1_000 // 5
        with self.connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO auth_user (password, is_superuser, username, first_name, last_name,"
                " email, is_staff, is_active, date_joined) SELECT '!', false, 'other-' || g,"
                " '', '', '', false, true, now() FROM generate_series(1, 1000) g"
            )
            cursor.execute(
                "INSERT INTO beliefs_taskinstance (id, task_class_id, principal_id, run_number,"
                " world, status, status_reason, plan_items, bindings_digest, idempotency_hash,"
                " action_slots, audience, created_at, updated_at) SELECT gen_random_uuid(), %s,"
                " u.id, 1, '{}', 'ready', '', '[]', '', '', '[]', '', now(), now()"
                " FROM auth_user u WHERE u.username LIKE 'other-%%'",
                [run.task_class_id],
            )
            cursor.execute(
                "INSERT INTO beliefs_belief (instance_id, principal_id, slot_id, value, source,"
                " turn, acquired_at, world_ref, status, status_reason, created_at)"
                " SELECT i.id, i.principal_id, s.id, to_jsonb(g), 'user', g,"
                " now() - g * interval '1 minute', '{\"ref\": 1}',"
                " CASE WHEN g = 1 THEN 'active' ELSE 'superseded' END, '', now()"
                " FROM beliefs_taskinstance i JOIN auth_user u ON u.id = i.principal_id"
                " JOIN beliefs_slot s ON s.task_class_id = i.task_class_id"
                " CROSS JOIN generate_series(1, %s) g WHERE u.username LIKE 'other-%%'",
                [per_principal],
            )
        self.analyze()
        after = side_by_side({"after": call}, self.scale.samples)["after"]
        _emit(_ratio_row(group, figure, before, after, 1.3))

    # -- pages -----------------------------------------------------------------------------

    def page_data(self, instances: int, audit_rows: int, start: int) -> None:
        """Instances of a hundred other principals (ready, three answered prompts each) and
        audit rows, loaded in bulk; numbered from `start` so that loads add up."""
        from django.contrib.auth.models import User

        from beliefs.models import TaskClass

        task_class = TaskClass.objects.get(key="bench.pages")
        slot_ids = list(task_class.slots.order_by("id").values_list("id", flat=True))[:3]
        users = list(
            User.objects.filter(username__startswith="page-").order_by("id").values_list("id")
        )
        if not users:
            User.objects.bulk_create(User(username=f"page-{i}", password="!") for i in range(100))
            users = list(
                User.objects.filter(username__startswith="page-").order_by("id").values_list("id")
            )
        user_ids = [u[0] for u in users]
        now = datetime.now(UTC)
        ids = [uuid.uuid4() for _ in range(instances)]

        def instance_rows() -> Iterator[Sequence[Any]]:
            for n, pk in enumerate(ids, start):
                at = now - timedelta(minutes=n)
                run = n // len(user_ids) + 1  # one run number per principal, as is unique
                yield (
                    pk, task_class.pk, user_ids[n % len(user_ids)], run, "{}", "ready", "",
                    "[]", "", "", at, len(slot_ids), "[]", "", at, at,
                )  # fmt: skip

        self.bulk_load(
            "beliefs_taskinstance",
            (
                "id",
                "task_class_id",
                "principal_id",
                "run_number",
                "world",
                "status",
                "status_reason",
                "plan_items",
                "bindings_digest",
                "idempotency_hash",
                "planned_at",
                "blocking_asked",  # the blocking prompts loaded below
                "action_slots",  # finished runs: not planned again
                "audience",
                "created_at",
                "updated_at",
            ),  # fmt: skip
            instance_rows(),
        )

        def prompt_rows() -> Iterator[Sequence[Any]]:
            for n, pk in enumerate(ids, start):
                at = now - timedelta(minutes=n)
                for slot_id in slot_ids:
                    yield (
                        pk, slot_id, "CONFIRM", "R6", "carried", "irreversible", "decision",
                        True, "[]", "answered", 1, "confirm" if n % 3 else "edit", "",
                        at, at + timedelta(seconds=5 + n % 7), at, at,
                    )  # fmt: skip

        # The column of each value in the rows above, laid out line for line as they are.
        prompt_columns = (
            "instance_id", "slot_id", "route", "rule", "reason", "effective_risk", "risk_reason",
            "blocking", "world_diff", "state", "version", "action", "response_reason",
            "shown_at", "responded_at", "created_at", "updated_at",
        )  # fmt: skip
        self.bulk_load("beliefs_prompt", prompt_columns, prompt_rows())
        kinds = ["instance.opened", "belief.recorded", "instance.planned", "prompt.confirm"]

        def audit_rows_() -> Iterator[Sequence[Any]]:
            for n in range(audit_rows):
                instance = ids[n % len(ids)]
                at = now - timedelta(seconds=start * 10 + n)
                actor = "runtime:bench" if n % 4 < 3 else f"page-{n % 100}"
                yield (kinds[n % 4], "", actor, task_class.pk, instance, "", "{}", at)

        self.bulk_load(
            "beliefs_auditevent",
            (
                "kind",
                "actor_key_name",
                "actor",
                "task_class_id",
                "instance_id",
                "subject",
                "data",
                "created_at",
            ),  # fmt: skip
            audit_rows_(),
        )
        self.analyze()

    def page_calls(self, waiting: Any) -> dict[str, Callable[[], Any]]:
        def get(client: Any, url: str) -> Callable[[], Any]:
            def call() -> None:
                response = client.get(url)
                assert response.status_code == 200, (url, response.status_code)

            return call

        return {
            "inbox": get(self.person, "/"),
            "instance": get(self.person, f"/instances/{waiting.pk}/"),
            "activity": get(self.staff, "/activity/"),
            "insights": get(self.staff, "/insights/"),
        }

    def pages_group(self) -> None:
        from beliefs.models import AuditEvent, TaskInstance

        _progress("pages at 100 instances")
        waiting = self.two_runs("bench.pages", 5, "viewer")
        small_instances = 100 - TaskInstance.objects.count()
        small_audit = 1_000 - AuditEvent.objects.count()
        self.page_data(small_instances, small_audit, start=0)
        calls = self.page_calls(waiting)
        small = side_by_side(calls, self.scale.samples)
        small_queries = {name: self.queries(call) for name, call in calls.items()}
        _progress(
            f"loading {self.scale.instances:,} instances and {self.scale.audit_rows:,} audit rows"
        )
        self.page_data(
            self.scale.instances - TaskInstance.objects.count(),
            self.scale.audit_rows - AuditEvent.objects.count(),
            start=small_instances,
        )
        _progress(f"pages at {TaskInstance.objects.count():,} instances")
        large = side_by_side(calls, self.scale.samples)
        large_queries = {name: self.queries(call) for name, call in calls.items()}
        group = "pages by volume"
        for name in calls:
            row = _ratio_row(
                group,
                f"p50 {name} page, 100 vs {self.scale.instances:,} instances",
                small[name],
                large[name],
                2,
            )
            _emit(row)
            q = f"{small_queries[name]} vs {large_queries[name]}"
            same = small_queries[name] == large_queries[name]
            _emit(Row(group, f"queries, {name} page", q, None, "equal", same))

    # -- requests per second ---------------------------------------------------------------

    def throughput_group(self, run: Any) -> None:
        group = "requests/s (gunicorn, 2 workers, wrk)"
        wrk = shutil.which("wrk")
        if wrk is None:
            _emit(
                Row(group, "requests/s", "wrk not installed (apt-get install wrk)", None, "", None)
            )
            return
        _progress("requests per second under gunicorn")
        port = free_port()
        env = {**os.environ}
        server = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "console.wsgi", "--workers", "2",
             "--bind", f"127.0.0.1:{port}", "--log-level", "warning"],
            cwd=ROOT, env=env,
        )  # fmt: skip
        base = f"http://127.0.0.1:{port}"
        try:
            self._wait_for(f"{base}/healthz")
            with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
                script.write('wrk.method = "POST"\n')
            header = ["-H", f"Authorization: Api-Key {self.raw_key}"]
            targets = {
                "healthz": [f"{base}/healthz"],
                "read": [*header, f"{base}/api/v1/instances/{run.pk}/"],
                "plan": [*header, "-s", script.name, f"{base}/api/v1/instances/{run.pk}/plan/"],
            }
            # Warm both workers on every URL first (imports, template and URL caches, their
            # database connections, kept by DATABASE_CONN_MAX_AGE), so that no figure pays for
            # a cold start the others do not.
            for args in targets.values():
                self._wrk(wrk, args, seconds=1)
            rates: dict[str, list[float]] = {name: [] for name in targets}
            for _ in range(self.scale.load_rounds):
                for name, args in targets.items():
                    rates[name].append(self._wrk(wrk, args))
            os.unlink(script.name)
        finally:
            server.terminate()
            server.wait(timeout=30)
        rps = {name: median(values) for name, values in rates.items()}
        read_ratio = rps["read"] / rps["healthz"]
        plan_ratio = rps["plan"] / rps["read"]
        _emit(
            Row(
                group,
                "authenticated instance read vs /healthz",
                f"{rps['read']:.0f} vs {rps['healthz']:.0f} req/s",
                read_ratio,
                "≥ 0.3×",
                read_ratio >= 0.3,
            )
        )
        _emit(
            Row(
                group,
                "plan (5 slots) vs authenticated read",
                f"{rps['plan']:.0f} vs {rps['read']:.0f} req/s",
                plan_ratio,
                "≥ 0.5×",
                plan_ratio >= 0.5,
            )
        )

    @staticmethod
    def _wait_for(url: str) -> None:
        import urllib.request

        for _ in range(100):
            try:
                with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310
                    if response.status == 200:
                        return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"gunicorn did not answer {url}")

    def _wrk(
        self, wrk: str, args: list[str], seconds: int | None = None, connections: int = 4
    ) -> float:
        """Requests per second of one URL: the same connections, thread and duration for
        every URL (the agents-waiting rows take more connections)."""
        seconds = seconds or self.scale.load_seconds
        load = ["-t", "1", "-c", str(connections), "-d", f"{seconds}s", "--timeout", "10s"]
        out = subprocess.run(
            [wrk, *load, *args],
            capture_output=True,
            text=True,
            timeout=seconds + 30,
            check=True,
        ).stdout
        if "Non-2xx" in out:
            raise RuntimeError(f"wrk saw errors: {out}")
        match = re.search(r"Requests/sec:\s+([\d.]+)", out)
        if match is None:
            raise RuntimeError(f"no rate in wrk's output: {out}")
        return float(match.group(1))


def worker_group(scale: Scale) -> None:
    """Events per second one worker delivers: events queued for one endpoint of a fast local
    receiver (in this process, verifying every signature), then one `manage.py worker`
    started; timed from the first arrival to the last delivery recorded as succeeded."""

    from beliefs.domain import webhooks as rules
    from beliefs.models import WebhookDelivery, WebhookEvent
    from demo.receiver import Receiver

    events = 1_000 if scale is QUICK else 3_000
    group, goal = "webhooks (one worker)", "≥ 500 events/s on PostgreSQL"
    figure = f"events per second one worker delivers ({events:,} queued, a fast local receiver)"
    _progress(f"one worker delivering {events:,} queued events")
    endpoint, port = local_endpoint("bench-worker")
    now = datetime.now(UTC)
    queued = WebhookEvent.objects.bulk_create(
        (
            WebhookEvent(
                webhook_id=rules.new_webhook_id(),
                type=rules.WEBHOOK_TEST,
                runtime=endpoint.runtime,
                payload={"type": rules.WEBHOOK_TEST, "timestamp": now.isoformat(), "data": {}},
            )
            for _ in range(events)
        ),
        batch_size=1_000,
    )
    WebhookDelivery.objects.bulk_create(
        (WebhookDelivery(event=e, endpoint=endpoint, next_attempt_at=now) for e in queued),
        batch_size=1_000,
    )
    first: list[float] = []

    def arrived(_: object) -> None:
        if not first:
            first.append(time.time())

    receiver = Receiver(endpoint.secret, port=port, on_event=arrived)
    env = {**os.environ, "CONSOLE_WEBHOOK_ALLOW_PRIVATE": "true"}
    command = [sys.executable, "manage.py", "worker", "--no-startup-delay", "--sweep-interval=0"]
    succeeded = WebhookDelivery.objects.filter(endpoint=endpoint, state="succeeded")
    with receiver:
        worker = subprocess.Popen(
            [*command, "--worker-id=bench"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL
        )
        try:
            limit = time.time() + 600
            while succeeded.count() < events and time.time() < limit:
                time.sleep(0.05)
            done = time.time()
        finally:
            worker.terminate()
            worker.wait(timeout=60)
    delivered = succeeded.count()
    if delivered < events or not first or len(receiver.events()) < events:
        _emit(Row(group, figure, f"only {delivered:,} delivered", None, goal, False))
        return
    rate = events / (done - first[0])
    postgres = _vendor() == "postgresql"
    holds = rate >= 500 if postgres else None
    _emit(Row(group, figure, f"{rate:.0f} events/s", None, goal, holds))


def _vendor() -> str:
    from django.db import connection

    return connection.vendor


def child(
    label: str,
    scale: Scale,
    only: Sequence[str],
    against: str | None = None,
    agents: int | None = None,
) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    import django

    django.setup()
    from django.core.management import call_command

    _progress("migrating and collecting static files")
    call_command("migrate", verbosity=0)
    call_command("collectstatic", interactive=False, verbosity=0)
    bench = Bench(label, scale)
    if "worker" in only:
        worker_group(scale)
    if "trickle" in only:
        from bench import trickle as bench_trickle

        rows = bench_trickle.measure(
            quick=scale == QUICK, against=Path(against) if against else None, progress=_progress
        )
        for fields in rows:
            _emit(Row(**fields))
    if "pages" in only:
        bench.pages_group()
    if "waiting" in only:
        from bench import longpoll as bench_longpoll

        _progress("agents waiting on the production server (make serve), the worker beside it")
        for fields in bench_longpoll.measure(bench, quick=scale == QUICK, agents=agents):
            _emit(Row(**fields))
    if "many" in only:
        from bench import longpoll as bench_longpoll

        _progress("many agents waiting on the production server, from several processes")
        rows = bench_longpoll.measure(bench, quick=scale == QUICK, agents=agents, many=True)
        for fields in rows:
            _emit(Row(**fields))
    if {"slots", "history", "throughput", "others"} & set(only):
        _planning_groups(bench, only)
    # Last: their servers, people and hundreds of instances come after every row above.
    if "approval" in only:
        from bench import approval

        _progress("one whole approval at a steady rate")
        versus = Path(against) if against else None
        for fields in approval.measure(bench, quick=scale == QUICK, against=versus):
            _emit(Row(**fields))
    if "servers" in only:
        from bench import twoservers

        _progress("two app servers and two workers on one database")
        for fields in twoservers.measure(bench, quick=scale == QUICK):
            _emit(Row(**fields))


def _planning_groups(bench: Bench, only: Sequence[str]) -> None:
    """Planning's rows: by slots, requests/s, by history, by others' beliefs."""
    runs = bench.slots_group(emit="slots" in only)
    if "throughput" in only:
        bench.throughput_group(runs[5])
    if {"history", "others"} & set(only):
        short_history = bench.history_group(emit="history" in only)
        if "history" in only:
            bench.shared_history_group()
        if "others" in only:
            bench.other_principals_group(short_history)


if __name__ == "__main__":
    main()
