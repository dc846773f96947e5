"""The live endpoints of the instance page and the inbox: `?since=<version>` answers the fresh
fragment once what the person would see differs, else 204 after the wait. A request that waits
goes to the live server (uvicorn and `console.asgi` in the test process, the handler that waits
in production); the others to the test client. On SQLite and PostgreSQL."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import DatabaseError, OperationalError, connection
from django.test import Client
from django.utils import timezone

from beliefs import selectors
from beliefs.models import Prompt, PromptState, TaskInstance
from beliefs.services import changes
from beliefs.services.audit import SYSTEM
from beliefs.services.instances import instance_cancel
from console import asgi, live
from tests.browser import scenarios
from tests.support.live_server import Served
from tests.support.pages import HTMX

MARKER = re.compile(r'data-live-version="([0-9]+)" data-live-digest="([0-9a-f]{32})?"')


def _until(condition: Callable[[], bool], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def _marker(html: str) -> dict[str, Any]:
    found = MARKER.search(html)
    assert found is not None
    return {"since": int(found.group(1)), "seen": found.group(2) or ""}


def _version(client: Client | Served, url: str) -> dict[str, Any]:
    """What the page at `url` shows: `since` (its version) and `seen` (its digest)."""
    return _marker(client.get(url).content.decode())


def _live(instance: TaskInstance) -> str:
    return f"/instances/{instance.pk}/live/"


def _respond(prompt: Prompt) -> str:
    return f"/instances/{prompt.instance_id}/prompts/{prompt.pk}/respond/"


@pytest.mark.parametrize(
    ("raw", "seconds"),
    [("", 20), ("0", 0), ("1", 1), ("20", 20), ("21", 20), ("999", 20), ("9999", 20)]
    + [("-1", 20), ("1.5", 20), ("x", 20), ("٣", 20)],
)
def test_the_wait_it_reads(rf: Any, raw: str, seconds: int) -> None:  # noqa: ANN401
    assert live.requested_wait(rf.get("/", {"wait": raw})) == seconds


@pytest.mark.django_db
@pytest.mark.parametrize(
    "asks", [{"since": "", "seen": ""}, {"since": "0", "seen": "0" * 32}, None]
)
def test_anyone_else_gets_404(
    alice: User, mallory_client: Client, alice_client: Client, asks: dict[str, Any] | None
) -> None:
    instance = scenarios.vendor(alice)
    if asks is None:
        asks = _version(alice_client, f"/instances/{instance.pk}/")  # even the right version
    response = mallory_client.get(_live(instance), {**asks, "wait": "0"}, **HTMX)
    assert response.status_code == 404
    assert "Vendor payment" not in response.content.decode()
    assert changes.waiting() == 0


@pytest.mark.django_db
def test_signed_out_it_sends_to_sign_in(alice: User, client: Client) -> None:
    instance = scenarios.vendor(alice)
    response = client.get(_live(instance), {"since": "", "wait": "0"})
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_a_different_version_gets_the_fragment_at_once(
    alice: User, served: Callable[..., Served]
) -> None:
    instance = scenarios.vendor(alice)
    client = served(alice)
    version = _version(client, f"/instances/{instance.pk}/")
    started = time.monotonic()
    asks = {"since": version["since"], "seen": "stale"}
    response = client.get(_live(instance), asks, **HTMX)
    assert time.monotonic() - started < 5
    html = response.content.decode()
    assert response.status_code == 200
    # Nothing was written since the page was read, yet it differs from what the page says it
    # shows: the answer is the newer, labelled above the page's version.
    assert response["Live-Version"] == str(version["since"] + 1)
    assert _marker(html) == {"since": version["since"] + 1, "seen": version["seen"]}
    assert "no-store" in response["Cache-Control"]
    assert html.strip().startswith('<div id="instance-view"') and "<html" not in html
    assert html.count('<article class="card') == 3


@pytest.mark.django_db
@pytest.mark.parametrize("since", ["", "x", "-1", "1.5", "9" * 19, None])
def test_a_since_that_is_no_version_is_none(
    alice: User, alice_client: Client, since: str | None
) -> None:
    instance = scenarios.vendor(alice)
    version = _version(alice_client, f"/instances/{instance.pk}/")
    asks = {"seen": "stale"} if since is None else {"since": since, "seen": "stale"}
    response = alice_client.get(_live(instance), asks, **HTMX)
    assert response.status_code == 200
    assert response["Live-Version"] == str(version["since"])


@pytest.mark.django_db
def test_versions_grow_with_every_change(alice: User, alice_client: Client) -> None:
    instance = scenarios.vendor(alice)
    page = f"/instances/{instance.pk}/"
    seen = [_version(alice_client, page)]
    prompt = scenarios.open_prompt(instance, "amount")
    answered = alice_client.post(
        _respond(prompt), {"action": "confirm", "value": "1250", "version": prompt.version}
    )
    assert answered.status_code == 302
    seen.append(_version(alice_client, page))
    instance_cancel(instance=instance, actor=scenarios.RUNTIME, reason="")
    seen.append(_version(alice_client, page))
    numbers = [v["since"] for v in seen]
    assert numbers == sorted(numbers) and len(set(numbers)) == 3
    assert len({v["seen"] for v in seen}) == 3


def test_with_nothing_changed_it_answers_204_after_its_wait(
    alice: User, served: Callable[..., Served]
) -> None:
    instance = scenarios.vendor(alice)
    client = served(alice)
    version = _version(client, f"/instances/{instance.pk}/")
    started = time.monotonic()
    response = client.get(_live(instance), {**version, "wait": "1"}, **HTMX)
    took = time.monotonic() - started
    assert response.status_code == 204 and response.content == b""
    assert "no-store" in response["Cache-Control"]
    assert 1.0 <= took < 10.0
    assert changes.waiting() == 0


@pytest.mark.django_db
def test_a_server_that_does_not_wait_asks_the_page_to_come_back_later(
    alice: User, alice_client: Client
) -> None:
    # Django's test client repeats no answer, as a WSGI server would not: the 204 comes at once
    # and tells the page's script when to ask again, so that it does not ask again and again.
    instance = scenarios.vendor(alice)
    version = _version(alice_client, f"/instances/{instance.pk}/")
    started = time.monotonic()
    response = alice_client.get(_live(instance), version, **HTMX)
    assert time.monotonic() - started < 5
    assert response.status_code == 204
    assert response["Retry-After"] == str(live.NO_WAIT_RETRY_SECONDS)


@pytest.mark.django_db
def test_showing_the_page_again_is_no_change(alice: User, alice_client: Client) -> None:
    # The first showing sets the prompts' shown_at: not something the page shows.
    instance = scenarios.vendor(alice)
    first = _version(alice_client, f"/instances/{instance.pk}/")
    assert _version(alice_client, f"/instances/{instance.pk}/") == first
    response = alice_client.get(_live(instance), {**first, "wait": "0"}, **HTMX)
    assert response.status_code == 204


@pytest.mark.django_db
def test_the_fragment_escapes_untrusted_text(alice: User, alice_client: Client) -> None:
    instance = scenarios.hostile(alice)
    response = alice_client.get(_live(instance), {"since": "", "seen": "", "wait": "0"}, **HTMX)
    html = response.content.decode()
    assert response.status_code == 200
    for raw in (scenarios.HOSTILE_SCRIPT, scenarios.HOSTILE_IMG):
        assert raw not in html
    assert "&lt;script&gt;alert(&#x27;script&#x27;)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(&#x27;img&#x27;)&gt;" in html
    assert "<script" not in html


def test_a_change_elsewhere_wakes_the_waiting_page(
    alice: User, served: Callable[..., Served], monkeypatch: pytest.MonkeyPatch
) -> None:
    # No polling: only the change's notification can end the wait before its 20 s.
    monkeypatch.setattr(asgi, "POLL_SECONDS", 30.0)
    instance = scenarios.vendor(alice)
    client = served(alice)
    version = _version(client, f"/instances/{instance.pk}/")
    answers: list[Any] = []
    # The change waits for the page's first read (SQLite's shared test database refuses a read
    # during another connection's write as locked, where a file database would wait).
    reads: list[object] = []
    read = live.instance_version
    monkeypatch.setattr(live, "instance_version", lambda *a: reads.append(read(*a)) or reads[-1])

    def wait() -> None:
        answers.append(client.get(_live(instance), version, **HTMX))

    waiter = threading.Thread(target=wait)
    waiter.start()
    try:
        _until(lambda: changes.waiting() == 1 and bool(reads))
        instance_cancel(instance=instance, actor=scenarios.RUNTIME, reason="<b>gone</b> away")
        changed_at = time.monotonic()
        _until(lambda: bool(answers), 30.0)
        woke_after = time.monotonic() - changed_at
    finally:
        waiter.join(60)
    (response,) = answers
    html = response.content.decode()
    assert response.status_code == 200 and int(response["Live-Version"]) > version["since"]
    assert "✕ Cancelled" in html and "&lt;b&gt;gone&lt;/b&gt; away" in html
    assert 'value="confirm"' not in html and 'value="veto"' not in html
    assert woke_after < 1.0


def test_a_question_running_out_of_time_is_a_change(
    alice: User, served: Callable[..., Served]
) -> None:
    # Nobody writes when a TTL runs out: the wait re-reads by then.
    instance = scenarios.vendor(alice)
    Prompt.objects.filter(instance=instance, state=PromptState.OPEN, blocking=True).update(
        expires_at=timezone.now() + timedelta(seconds=1)
    )
    client = served(alice)
    version = _version(client, f"/instances/{instance.pk}/")
    response = client.get(_live(instance), {**version, "wait": "10"}, **HTMX)
    assert response.status_code == 200
    assert int(response["Live-Version"]) > version["since"]
    assert "✕ Expired" in response.content.decode()


def test_the_inbox_rows_wait_for_a_change_and_drop_a_finished_instance(
    alice: User, served: Callable[..., Served]
) -> None:
    instance = scenarios.vendor(alice)
    client = served(alice)
    version = _version(client, "/")
    started = time.monotonic()
    unchanged = client.get("/inbox/rows/", {**version, "wait": "1"}, **HTMX)
    assert unchanged.status_code == 204 and time.monotonic() - started >= 1.0
    instance_cancel(instance=instance, actor=scenarios.RUNTIME, reason="")
    response = client.get("/inbox/rows/", {**version, "wait": "1"}, **HTMX)
    html = response.content.decode()
    assert response.status_code == 200 and int(response["Live-Version"]) > version["since"]
    assert f'id="inbox-link-{instance.pk}"' not in html
    assert f'id="recent-link-{instance.pk}"' in html
    assert html.strip().startswith('<div id="inbox-rows" data-live-url="/inbox/rows/"')


@pytest.mark.django_db
def test_the_inbox_rows_of_someone_else_stay_theirs(alice: User, mallory_client: Client) -> None:
    instance = scenarios.vendor(alice)
    response = mallory_client.get("/inbox/rows/", {"since": "", "seen": "", "wait": "0"}, **HTMX)
    assert response.status_code == 200
    assert str(instance.pk) not in response.content.decode()


# --- the person's own answer carries its version ---------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("ahead", [False, True])
def test_an_answer_s_response_carries_its_version(
    alice: User, alice_client: Client, ahead: bool
) -> None:
    instance = scenarios.vendor(alice)
    before = _version(alice_client, f"/instances/{instance.pk}/")
    prompt = scenarios.open_prompt(instance, "amount")
    # The page may show a live answer labelled above any write (see console.live): the answer
    # is labelled no lower than what the page says it shows.
    since = before["since"] + 10**9 if ahead else before["since"]
    response = alice_client.post(
        _respond(prompt),
        {"action": "confirm", "value": "1250", "version": prompt.version},
        **HTMX,
        HTTP_LIVE_SINCE=str(since),
    )
    assert response.status_code == 200
    number = int(response["Live-Version"])
    assert number == since if ahead else number > since
    # One card and the banner out of band: the marker says so (no digest), and the page's next
    # live ask gets the whole view at once, labelled above the answer.
    assert _marker(response.content.decode()) == {"since": number, "seen": ""}
    whole = alice_client.get(_live(instance), {"since": number, "seen": "", "wait": "0"}, **HTMX)
    assert whole.status_code == 200 and int(whole["Live-Version"]) == number + 1
    assert '<strong>Confirmed</strong>: <span class="value">1250</span>' in whole.content.decode()


@pytest.mark.django_db
def test_a_refused_answer_is_labelled_the_version_the_page_shows(
    alice: User, alice_client: Client
) -> None:
    instance = scenarios.vendor(alice)
    before = _version(alice_client, f"/instances/{instance.pk}/")
    prompt = scenarios.open_prompt(instance, "amount")
    response = alice_client.post(
        _respond(prompt),
        {"action": "confirm", "value": "1250", "version": prompt.version + 1},
        **HTMX,
        HTTP_LIVE_SINCE=str(before["since"]),
    )
    assert response.status_code == 409
    assert response["Live-Version"] == str(before["since"])  # nothing was written: not older


# --- one snapshot ------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_snapshot_reads_one_state_while_a_writer_commits(alice: User) -> None:
    # A version and its fragment are read in one snapshot: a change committed meanwhile is in
    # neither (PostgreSQL: repeatable read; SQLite: a deferred transaction in WAL mode), and the
    # writer does not wait for the read. SQLite's in-memory database cannot hold one (see
    # console.live); the tests' is a file.
    if connection.vendor == "sqlite" and connection.is_in_memory_db():
        pytest.skip("SQLite's in-memory database holds no snapshot")
    instance = scenarios.vendor(alice)

    def version() -> tuple[int, str]:
        found = live.instance_version(instance.pk, alice.pk)
        assert found is not None
        return found.number, found.digest

    outcome: list[str] = []

    def cancel_elsewhere() -> None:
        try:
            instance_cancel(instance=instance, actor=scenarios.RUNTIME, reason="")
            outcome.append("written")
        except DatabaseError as exc:
            outcome.append(f"refused: {exc}")
        finally:
            connection.close()

    first = version()
    writer = threading.Thread(target=cancel_elsewhere)
    with live.snapshot():
        assert version() == first
        writer.start()
        writer.join(60)
        assert not writer.is_alive()
        again = version()
        status = TaskInstance.objects.get(pk=instance.pk).status
    # Committed, while the snapshot still read the old state.
    assert outcome == ["written"] and again == first and status == "awaiting_user"
    after = version()
    assert after[0] > first[0] and after[1] != first[1]


@pytest.mark.django_db
def test_writes_inside_a_snapshot_wait_for_its_end(alice: User) -> None:
    done: list[str] = []
    with live.snapshot():
        live.after_snapshot(lambda: done.append("written"))
        assert done == []
    assert done == ["written"]
    live.after_snapshot(lambda: done.append("at once"))
    assert done == ["written", "at once"]


def test_a_read_the_database_refuses_is_read_again(
    alice: User, served: Callable[..., Served], monkeypatch: pytest.MonkeyPatch
) -> None:
    instance = scenarios.vendor(alice)
    client = served(alice)
    version = _version(client, f"/instances/{instance.pk}/")
    read = live.instance_version
    refused: list[int] = []

    def refuse_once(*args: Any) -> live.Version | None:  # noqa: ANN401
        if not refused:
            refused.append(1)
            raise OperationalError("database table is locked")
        return read(*args)

    monkeypatch.setattr(live, "instance_version", refuse_once)
    response = client.get(_live(instance), {**version, "seen": "stale", "wait": "5"}, **HTMX)
    assert refused == [1] and response.status_code == 200


@pytest.mark.django_db
def test_a_page_read_has_the_version_its_live_look_reads(alice: User, alice_client: Client) -> None:
    """The page's version, worked out from the page's own read (`live.page_version`), is the one
    the live endpoint's cheap look reads (`live.instance_version`), whatever the instance's
    state: were they to differ, an open page would be sent the same view again and again."""
    instance = scenarios.vendor(alice)

    def agree() -> live.Version:
        read = selectors.instance_page(instance.pk, principal_id=alice.pk)
        assert read is not None
        by_page, by_look = live.page_version(read), live.instance_version(instance.pk, alice.pk)
        assert by_look is not None
        assert (by_page.number, by_page.digest) == (by_look.number, by_look.digest)
        assert (by_page.recheck is None) == (by_look.recheck is None)
        return by_page

    seen = [agree()]
    alice_client.get(f"/instances/{instance.pk}/")  # shown: `shown_at` is not on the page
    assert agree().digest == seen[0].digest
    surfaced = Prompt.objects.filter(instance=instance, route="SURFACED").first()
    assert surfaced is not None
    alice_client.post(_respond(surfaced), {"action": "veto", "version": surfaced.version}, **HTMX)
    seen.append(agree())
    for _ in range(5):  # every question answered, the veto's too: ready, with a receipt
        for prompt in Prompt.objects.filter(instance=instance, state="open", blocking=True):
            slot = prompt.slot
            typed = (slot.scope_order or slot.choices or [None])[0] or {
                "date": "2026-12-31",
                "number": "2",
            }.get(slot.value_type, "x")
            action, value = ("confirm", "") if prompt.route == "CONFIRM" else ("answer", typed)
            body = {"action": action, "version": prompt.version, "value": value}
            body["value_confirmation"] = value
            body["acknowledged"] = [d["key"] for d in prompt.world_diff]
            alice_client.post(_respond(prompt), body, **HTMX)
            seen.append(agree())
    instance.refresh_from_db()
    assert instance.status == "ready" and instance.receipt_id is not None
    assert len({v.digest for v in seen}) == len(seen), "each change is a new version"
    instance_cancel(instance=instance, actor=SYSTEM, reason="gone")
    agree()
