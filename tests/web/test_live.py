"""The live endpoints of the instance page and the inbox: `?since=<version>` answers the fresh
fragment once what the person would see differs, else 204 after the wait. Through the test
client (WSGI: the request's thread waits), on SQLite and PostgreSQL."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from beliefs import services
from beliefs.models import Prompt, PromptState, TaskInstance
from beliefs.services import changes
from console import live
from tests.browser import scenarios
from tests.web.conftest import HTMX

VERSION = re.compile(r'data-live-version="([0-9a-f]{32})"')


def _until(condition: Callable[[], bool], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def _version(client: Client, url: str) -> str:
    found = VERSION.search(client.get(url).content.decode())
    assert found is not None
    return found.group(1)


def _live(instance: TaskInstance) -> str:
    return f"/instances/{instance.pk}/live/"


@pytest.mark.parametrize(
    ("raw", "seconds"),
    [("", 20), ("0", 0), ("1", 1), ("20", 20), ("21", 20), ("999", 20), ("9999", 20)]
    + [("-1", 20), ("1.5", 20), ("x", 20), ("٣", 20)],
)
def test_the_wait_it_reads(rf: Any, raw: str, seconds: int) -> None:  # noqa: ANN401
    assert live.requested_wait(rf.get("/", {"wait": raw})) == seconds


@pytest.mark.django_db
@pytest.mark.parametrize("since", ["", "0" * 32, None])
def test_anyone_else_gets_404(
    alice: User, mallory_client: Client, alice_client: Client, since: str | None
) -> None:
    instance = scenarios.vendor(alice)
    if since is None:
        since = _version(alice_client, f"/instances/{instance.pk}/")  # even the right version
    response = mallory_client.get(_live(instance), {"since": since, "wait": "0"}, **HTMX)
    assert response.status_code == 404
    assert "Vendor payment" not in response.content.decode()
    assert changes.waiting() == 0


@pytest.mark.django_db
def test_signed_out_it_sends_to_sign_in(alice: User, client: Client) -> None:
    instance = scenarios.vendor(alice)
    response = client.get(_live(instance), {"since": "", "wait": "0"})
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


@pytest.mark.django_db
def test_a_different_version_gets_the_fragment_at_once(alice: User, alice_client: Client) -> None:
    instance = scenarios.vendor(alice)
    version = _version(alice_client, f"/instances/{instance.pk}/")
    started = time.monotonic()
    response = alice_client.get(_live(instance), {"since": "stale"}, **HTMX)
    assert time.monotonic() - started < 5
    html = response.content.decode()
    assert response.status_code == 200
    assert response["Live-Version"] == version
    assert "no-store" in response["Cache-Control"]
    assert html.strip().startswith('<div id="instance-view"') and "<html" not in html
    assert f'data-live-version="{version}"' in html
    assert html.count('<article class="card') == 3


@pytest.mark.django_db
def test_with_nothing_changed_it_answers_204_after_its_wait(
    alice: User, alice_client: Client
) -> None:
    instance = scenarios.vendor(alice)
    version = _version(alice_client, f"/instances/{instance.pk}/")
    started = time.monotonic()
    response = alice_client.get(_live(instance), {"since": version, "wait": "1"}, **HTMX)
    took = time.monotonic() - started
    assert response.status_code == 204 and response.content == b""
    assert "no-store" in response["Cache-Control"]
    assert 1.0 <= took < 10.0
    assert changes.waiting() == 0


@pytest.mark.django_db
def test_showing_the_page_again_is_no_change(alice: User, alice_client: Client) -> None:
    # The first showing sets the prompts' shown_at: not something the page shows.
    instance = scenarios.vendor(alice)
    first = _version(alice_client, f"/instances/{instance.pk}/")
    assert _version(alice_client, f"/instances/{instance.pk}/") == first
    response = alice_client.get(_live(instance), {"since": first, "wait": "0"}, **HTMX)
    assert response.status_code == 204


@pytest.mark.django_db
def test_the_fragment_escapes_untrusted_text(alice: User, alice_client: Client) -> None:
    instance = scenarios.hostile(alice)
    response = alice_client.get(_live(instance), {"since": "", "wait": "0"}, **HTMX)
    html = response.content.decode()
    assert response.status_code == 200
    for raw in (scenarios.HOSTILE_SCRIPT, scenarios.HOSTILE_IMG):
        assert raw not in html
    assert "&lt;script&gt;alert(&#x27;script&#x27;)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(&#x27;img&#x27;)&gt;" in html
    assert "<script" not in html


@pytest.mark.django_db(transaction=True)
def test_a_change_elsewhere_wakes_the_waiting_page(
    alice: User, signed_in: Callable[[User], Client], monkeypatch: pytest.MonkeyPatch
) -> None:
    # No polling: only the change's notification can end the wait before its 20 s.
    monkeypatch.setattr(live, "POLL_SECONDS", 30.0)
    instance = scenarios.vendor(alice)
    client = signed_in(alice)
    version = _version(client, f"/instances/{instance.pk}/")
    answers: list[Any] = []

    def wait() -> None:
        answers.append(client.get(_live(instance), {"since": version}, **HTMX))

    waiter = threading.Thread(target=wait)
    waiter.start()
    try:
        _until(lambda: changes.waiting() == 1)
        services.instance_cancel(
            instance=instance, actor=scenarios.RUNTIME, reason="<b>gone</b> away"
        )
        changed_at = time.monotonic()
        _until(lambda: bool(answers), 30.0)
        woke_after = time.monotonic() - changed_at
    finally:
        waiter.join(60)
    (response,) = answers
    html = response.content.decode()
    assert response.status_code == 200 and response["Live-Version"] != version
    assert "✕ Cancelled" in html and "&lt;b&gt;gone&lt;/b&gt; away" in html
    assert 'value="confirm"' not in html and 'value="veto"' not in html
    assert woke_after < 1.0


@pytest.mark.django_db
def test_a_question_running_out_of_time_is_a_change(alice: User, alice_client: Client) -> None:
    # Nobody writes when a TTL runs out: the wait re-reads by then.
    instance = scenarios.vendor(alice)
    Prompt.objects.filter(instance=instance, state=PromptState.OPEN, blocking=True).update(
        expires_at=timezone.now() + timedelta(seconds=1)
    )
    version = _version(alice_client, f"/instances/{instance.pk}/")
    response = alice_client.get(_live(instance), {"since": version, "wait": "10"}, **HTMX)
    assert response.status_code == 200
    assert "✕ Expired" in response.content.decode()


@pytest.mark.django_db
def test_the_inbox_rows_wait_for_a_change_and_drop_a_finished_instance(
    alice: User, alice_client: Client
) -> None:
    instance = scenarios.vendor(alice)
    version = _version(alice_client, "/")
    unchanged = alice_client.get("/inbox/rows/", {"since": version, "wait": "1"}, **HTMX)
    assert unchanged.status_code == 204
    services.instance_cancel(instance=instance, actor=scenarios.RUNTIME, reason="")
    response = alice_client.get("/inbox/rows/", {"since": version, "wait": "1"}, **HTMX)
    html = response.content.decode()
    assert response.status_code == 200 and response["Live-Version"] != version
    assert f'id="inbox-link-{instance.pk}"' not in html
    assert f'id="recent-link-{instance.pk}"' in html
    assert html.strip().startswith('<div id="inbox-rows" data-live-url="/inbox/rows/"')


@pytest.mark.django_db
def test_the_inbox_rows_of_someone_else_stay_theirs(alice: User, mallory_client: Client) -> None:
    instance = scenarios.vendor(alice)
    response = mallory_client.get("/inbox/rows/", {"since": "", "wait": "0"}, **HTMX)
    assert response.status_code == 200
    assert str(instance.pk) not in response.content.decode()
