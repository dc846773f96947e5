"""Live pages: a page asks "anything new since what I show?" and the answer waits for a change.

The instance page and the inbox each carry what they show in a marker: `data-live-version`, a
number that only grows (the microseconds of the latest write the page shows), and
`data-live-digest`, a digest of what the page is made of, read cheaply (no rendering). Their
script asks the page's live endpoint with `?since=<version>&seen=<digest>`: the answer is the
fresh fragment, its version in `Live-Version`, as soon as the digest differs; or 204 after
`PAGE_WAIT` seconds with no change, when the script simply asks again. The wait is the API
long-poll's (`beliefs.services.changes.wait_for_change`): the 204 is marked unchanged, and the
server's handler reads the page again at each change notification.

Two answers can cross on their way to the page: a live fragment read just before the person's
own answer was recorded may arrive after that answer's response. So every swap carries its
version (the person's own responses too) and the script applies nothing older than what it
shows. For that to hold, a version is read in the same database snapshot as the fragment it
labels (`snapshot`), never newer than the content; and a live fragment that differs from what
the page shows is labelled above the page's version even when no write time moved (two writers
on different instances of an inbox may commit in the other order than their clocks): it was read
after the page showed that version, so it is the newer.

A notice that changed nothing the page shows costs a read, not a swap.

Why a long-poll rather than server-sent events: it is the same wait the API already has (one
code path, one test of it), and a proxy, the test client and htmx handle it as a plain request
(the page's marker asks it with `hx-get`, and the answer is morphed in, `static/console/live.js`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from django.db import OperationalError, connection, transaction
from django.db.models import Max, OuterRef, Subquery
from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from beliefs import selectors
from beliefs.models import Belief, Prompt, TaskInstance, is_blocking_open
from beliefs.selectors import postgres
from beliefs.selectors.pages import PageRead
from beliefs.services import changes

# How long a page's ask waits for a change at most (a proxy's idle timeout is longer).
PAGE_WAIT = 20
# Where the server does not wait (see `unchanged_or`), how long a page waits before asking again.
NO_WAIT_RETRY_SECONDS = 5
RETRY_SECONDS = 0.1
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Version:
    """What a page shows: `number` orders versions (it only grows), `digest` tells them apart,
    `recheck` is the seconds until a question's time to live runs out (None: none will), a
    change nobody writes."""

    number: int
    digest: str
    recheck: float | None

    def after(self, since: int | None) -> Version:
        """This version labelled above `since`: a live answer to a page that showed version
        `since`, and something else, before this was read."""
        if since is None or self.number > since:
            return self
        return Version(since + 1, self.digest, self.recheck)

    def at_least(self, since: int | None) -> Version:
        """This version labelled no lower than `since`: the answer to a request of the person's
        own from a page that showed version `since` before this was read."""
        if since is None or self.number >= since:
            return self
        return Version(since, self.digest, self.recheck)


def digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _micros(moments: list[datetime | None]) -> int:
    return max(((m - EPOCH) // timedelta(microseconds=1) for m in moments if m), default=0)


# --- one snapshot ------------------------------------------------------------------------

_after_snapshot: ContextVar[list[Callable[[], object]] | None] = ContextVar(
    "live_after_snapshot", default=None
)


@contextlib.contextmanager
def snapshot() -> Iterator[None]:
    """Read everything inside in one consistent state of the database, so a page's version and
    its content agree; readers do not block writers, nor writers readers. PostgreSQL: a
    repeatable-read, read-only transaction. SQLite: a deferred transaction (`_deferred`), whose
    reads all see the database as it was at the first of them; not on an in-memory database
    (`_cannot_wait`). Inside a transaction already (a test's), that one.

    Writes wait until it ends (`after_snapshot`): one inside could fail against a writer that
    committed after the snapshot was taken."""
    after: list[Callable[[], object]] = []
    token = _after_snapshot.set(after)
    try:
        if connection.in_atomic_block or _cannot_wait(connection):
            yield  # a transaction already (one state: the tests'), or none that could wait
        elif connection.vendor == "sqlite":
            with _deferred(connection), transaction.atomic():
                yield
        else:
            with transaction.atomic():
                if connection.vendor == "postgresql":
                    postgres.read_only_snapshot()
                yield
    finally:
        _after_snapshot.reset(token)
    for write in after:
        write()


@contextlib.contextmanager
def _deferred(conn: Any) -> Iterator[None]:  # noqa: ANN401 - Django's connection proxy
    """SQLite: the transactions begun inside begin DEFERRED, taking no lock at BEGIN. Writes
    take the database lock at BEGIN (IMMEDIATE, see the settings), so that two racing answers
    queue instead of failing; a read taking it too made every page read wait for every write
    and the other way round. In WAL mode (the settings') a deferred transaction reads one
    snapshot, from its first read to its end, while writers commit; in the rollback journal it
    holds the shared lock for as long, and writers wait for it."""
    conn.ensure_connection()  # connecting sets the mode from the settings again
    mode = conn.transaction_mode
    conn.transaction_mode = "DEFERRED"
    try:
        yield
    finally:
        conn.transaction_mode = mode


def _cannot_wait(conn: Any) -> bool:  # noqa: ANN401 - Django's connection proxy
    """Whether a read transaction here would only make others fail: SQLite's in-memory database
    (the tests') shares one cache between its connections, where a lock held is refused at
    once instead of waited for, and may be one connection shared by several threads, whose
    transaction would be theirs as well as this read's."""
    return conn.allow_thread_sharing or (conn.vendor == "sqlite" and conn.is_in_memory_db())


def after_snapshot(write: Callable[[], object]) -> None:
    """Run `write` once the current `snapshot` ends (at once outside one)."""
    pending = _after_snapshot.get()
    if pending is None:
        write()
    else:
        pending.append(write)


# --- versions ----------------------------------------------------------------------------


def instance_version(instance_id: UUID, user_id: int) -> Version | None:
    """The version of this person's view of the instance (read it inside the `snapshot` of the
    fragment it labels); None when the instance is not theirs."""
    read = selectors.instance_read(instance_id, principal_id=user_id)
    if read is None:
        return None
    expiries = [
        datetime.fromisoformat(p["expires_at"])
        for p in read.payload.get("prompts", [])
        if is_blocking_open(p["state"], p["blocking"]) and p["expires_at"]
    ]
    # Past a question's TTL the page shows it expired: reading it first records that (a write).
    # When it was first shown is not on the page (and showing it sets it).
    shown = {**read.payload, "prompts": [_unshown(p) for p in read.payload.get("prompts", [])]}
    return Version(
        _latest_write(instance_id), digest([shown, read.expiry_due]), _seconds_until(expiries)
    )


def page_version(read: PageRead) -> Version:
    """`instance_version` of what this read of the page holds (read it inside the `snapshot`
    that read the page): the same number and digest, from the read itself."""
    instance, prompts = read.instance, read.prompts
    payload = selectors.instance_payload(instance, prompts)
    expiries = [p.expires_at for p in prompts if p.is_blocking_open and p.expires_at is not None]
    shown = {**payload, "prompts": [_unshown(p) for p in payload["prompts"]]}
    due = selectors.expiry_due(instance, prompts, timezone.now())
    written = [instance.updated_at, read.beliefs_at, *(p.updated_at for p in prompts)]
    return Version(_micros(written), digest([shown, due]), _seconds_until(expiries))


def _latest_write(instance_id: UUID) -> int:
    """When the instance, its prompts or its beliefs were last written. Every writer holds the
    instance's row lock, so these times follow the order of the writes."""
    latest = {
        model: Subquery(
            model.objects.filter(instance=OuterRef("pk"))
            .order_by()
            .values("instance")
            .annotate(at=Max(column))
            .values("at")
        )
        for model, column in ((Prompt, "updated_at"), (Belief, "created_at"))
    }
    found = (
        TaskInstance.objects.filter(pk=instance_id)
        .annotate(prompts_at=latest[Prompt], beliefs_at=latest[Belief])
        .values_list("updated_at", "prompts_at", "beliefs_at")
        .first()
    )
    return _micros(list(found) if found else [])


def inbox_version(context: dict[str, Any], user_id: int) -> Version:
    """The version of an inbox page (the context `_inbox_context` gives it): its rows, and the
    latest write to any of this person's instances. Its recheck: when its first row's time to
    live runs out (the row then leaves the list)."""
    rows = [[*row.shown(), row.instance.updated_at] for row in context["waiting"]]
    recent = [[str(r.pk), r.instance.status] for r in context["recent"]]
    facts = [context[name] for name in ("page", "has_next", "past_the_end", "waiting_count")]
    # M-of-N approval: the approvals asked of this person are part of the page.
    facts.append([[str(r.pk), r.instance.updated_at] for r in context.get("approvals", [])])
    # The person's actions waiting for approvers: who approved, how many are missing.
    facts.append([[*r.shown(), r.instance.updated_at] for r in context.get("with_approvers", [])])
    # Actions done on a runtime's report, until each value is vetoed.
    facts.append([[str(r.pk), r.reported_count] for r in context.get("reported", [])])
    expiries = [i.next_expiry for i in context["waiting"] if i.next_expiry is not None]
    latest = TaskInstance.objects.filter(principal_id=user_id).aggregate(
        instances=Max("updated_at"), prompts=Max("prompts__updated_at")
    )
    return Version(
        _micros(list(latest.values())), digest([rows, recent, facts]), _seconds_until(expiries)
    )


def requested_since(request: HttpRequest) -> int | None:
    """The version the asking page shows: `?since=N` (its live asks), or `Live-Since: N` (its
    own htmx requests); None when absent or not a version."""
    raw = request.GET.get("since", request.headers.get("Live-Since", ""))
    if raw.isascii() and raw.isdigit() and len(raw) < 19:
        return int(raw)
    return None


def _unshown(prompt: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in prompt.items() if k != "shown_at"}


def _seconds_until(moments: list[datetime]) -> float | None:
    return (min(moments) - timezone.now()).total_seconds() if moments else None


def requested_wait(request: HttpRequest) -> float:
    """`?wait=N` seconds (0 to PAGE_WAIT, for tests), else PAGE_WAIT."""
    raw = request.GET.get("wait", "")
    if raw.isascii() and raw.isdigit() and len(raw) < 4:
        return min(int(raw), PAGE_WAIT)
    return PAGE_WAIT


def unchanged_or(
    read: Callable[[], tuple[HttpResponse | None, float | None]], request: HttpRequest
) -> HttpResponse:
    """What `read()` found (the fresh fragment), or a 204 that may wait the requested seconds
    for a change (`changes.unchanged`), read again at each notice for the page and by the time
    the read says (its second value: when a question's time to live runs out, nobody writes).
    Under a server that does not wait, the 204 asks the page to come back in a while
    (`Retry-After`), so that it does not ask again at once, and again."""
    try:
        found, recheck = read()
    except OperationalError:
        # The database refused the read for a moment (locked; SQLite's in-memory test database
        # refuses at once): the page is still waiting, so read again soon.
        found, recheck = None, RETRY_SECONDS
    if found is not None:
        return found
    if not changes.server_waits(request):
        return HttpResponse(status=204, headers={"Retry-After": str(NO_WAIT_RETRY_SECONDS)})
    return changes.mark_unchanged(HttpResponse(status=204), requested_wait(request), recheck)
