"""The inbox: the user's instances awaiting them, newest first, kept current live."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from beliefs.models import InstanceStatus, Prompt, TaskClass, TaskInstance
from beliefs.services.instances import instance_cancel
from beliefs.services.responses import prompt_respond
from tests.browser import scenarios
from tests.support.pages import HTMX, marked

pytestmark = pytest.mark.django_db


def test_it_lists_the_instances_awaiting_the_user_with_what_is_at_stake(
    vendor: TaskInstance, alice_client: Client
) -> None:
    html = alice_client.get("/").content.decode()
    assert f'href="/instances/{vendor.pk}/"' in html
    assert "Vendor payment" in html
    assert "attempt 2" in html and "run 2" not in html
    assert 'Asked by <strong class="runtime">' in html
    assert "3 answers needed" in html
    assert "2 assumptions to review" in html
    # One clock: the opening as a moment with its zone; the expiry also from now.
    moment = r"<time datetime=\"[^\"]+\">\d{1,2} \w{3} \d{4}, \d\d:\d\d UTC</time>"
    assert re.search("opened " + moment, html)
    assert "expires in" in html and "23\xa0hours" in html  # the TTL is 24 h by default


def test_it_lists_newest_first_and_leaves_finished_runs_to_the_recent_list(
    vendor: TaskInstance, alice: User, alice_client: Client
) -> None:
    newer = scenarios.hostile(alice)
    html = alice_client.get("/").content.decode()
    waiting = html.split("Recently finished")[0]
    assert waiting.index(str(newer.pk)) < waiting.index(str(vendor.pk))
    run_1 = TaskInstance.objects.get(task_class__key="payments.vendor", run_number=1)
    assert str(run_1.pk) not in waiting
    assert f'id="recent-link-{run_1.pk}"' in html
    assert "✓ ready" in html


def test_it_shows_an_empty_state(alice_client: Client) -> None:
    html = alice_client.get("/").content.decode()
    assert "Nothing is waiting for you" in html


def test_it_never_lists_another_users_instances(
    vendor: TaskInstance, mallory_client: Client
) -> None:
    html = mallory_client.get("/").content.decode()
    assert str(vendor.pk) not in html
    assert "Nothing is waiting for you" in html


def test_it_leaves_out_an_instance_past_its_ttl(vendor: TaskInstance, alice_client: Client) -> None:
    Prompt.objects.filter(instance=vendor).update(expires_at=timezone.now() - timedelta(1))
    html = alice_client.get("/").content.decode()
    assert "Nothing is waiting for you" in html


def test_its_rows_ask_their_live_endpoint(vendor: TaskInstance, alice_client: Client) -> None:
    html = alice_client.get("/").content.decode()
    assert 'data-live-url="/inbox/rows/"' in html
    assert re.search(r'data-live-version="[0-9]{16}" data-live-digest="[0-9a-f]{32}"', html)
    # No timed polling: the rows ask when live.js triggers them, and the live endpoint waits.
    assert re.findall(r'hx-trigger="([^"]*)"', html) == ["live-poll"]


def test_it_renders_the_rows_partial_alone_with_its_own_trigger(
    vendor: TaskInstance, alice_client: Client
) -> None:
    response = alice_client.get("/inbox/rows/", **HTMX)
    html = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in html
    assert html.strip().startswith('<div id="inbox-rows" data-live-url="/inbox/rows/"')
    assert f'href="/instances/{vendor.pk}/"' in html


def test_it_picks_up_a_new_instance_on_the_next_poll(
    vendor: TaskInstance, alice: User, alice_client: Client
) -> None:
    assert "Hostile" not in alice_client.get("/inbox/rows/", **HTMX).content.decode()
    scenarios.hostile(alice)
    assert "Hostile" in alice_client.get("/inbox/rows/", **HTMX).content.decode()


def test_it_drops_an_instance_once_it_is_cancelled(
    vendor: TaskInstance, alice_client: Client
) -> None:
    instance_cancel(instance=vendor, actor=scenarios.RUNTIME, reason="not needed")
    html = alice_client.get("/inbox/rows/", **HTMX).content.decode()
    assert "Nothing is waiting for you" in html
    assert "✕ cancelled" in html


@pytest.mark.parametrize("url", ["/", "/inbox/rows/"])
@pytest.mark.parametrize("prompts", [2, 50])
def test_it_runs_the_same_queries_for_2_and_50_prompts(
    url: str,
    prompts: int,
    alice: User,
    alice_client: Client,
    django_assert_num_queries,  # noqa: ANN001
) -> None:
    scenarios.many(alice, prompts)
    scenarios.vendor(alice)
    # 1 the session, 2 the user, in one snapshot (console.live; the test's transaction here):
    # 3 the waiting instances with their runtime, counts and next expiry, 4 their decisions
    # and 5 the decisions' slots (prefetches: which values are decisive), 6 the recently
    # finished instances, 7 the latest write to the person's instances (the live version),
    # 8 the instances waiting for this person's approval (M-of-N; none), 9 the person's own
    # actions waiting for their approvers (none: their approvals, groups and decisions are
    # read only when there are some), 10 the person's ready actions done on a runtime's
    # report (the vendor's run 1: its values were the runtime's report of hers), with 11 their
    # decisions and 12 the decisions' slots, and for the whole page 13 the person's
    # permissions, their own and their groups' (the header's roles: the rows' fragment has no
    # header, and reads none).
    with django_assert_num_queries(13 if url == "/" else 12):
        response = alice_client.get(url)
    assert response.status_code == 200


# --- pages ---------------------------------------------------------------------------------


@pytest.fixture
def sixty_waiting(alice: User) -> list[str]:
    """Sixty instances waiting for alice, one minute apart; their ids newest first."""
    task_class = TaskClass.objects.create(key="bulk.inbox", name="Bulk inbox")
    now = timezone.now()
    instances = TaskInstance.objects.bulk_create(
        TaskInstance(
            task_class=task_class,
            principal=alice,
            run_number=n,
            status=InstanceStatus.AWAITING_USER,
        )
        for n in range(1, 61)
    )
    for n, instance in enumerate(instances, start=1):
        TaskInstance.objects.filter(pk=instance.pk).update(
            created_at=now - timedelta(minutes=60 - n)
        )
    return [str(instance.pk) for instance in reversed(instances)]


def _listed(html: str) -> list[str]:
    return re.findall(r'id="inbox-link-([0-9a-f-]+)"', html)


def test_it_pages_the_waiting_list_newest_first_without_gaps_or_repeats(
    sixty_waiting: list[str], alice_client: Client
) -> None:
    pages = [alice_client.get("/" if n == 1 else f"/?page={n}").content.decode() for n in (1, 2, 3)]
    assert [len(_listed(html)) for html in pages] == [25, 25, 10]
    assert [i for html in pages for i in _listed(html)] == sixty_waiting
    first, second, last = pages
    assert 'href="/?page=2" rel="next"' in first and 'rel="prev"' not in first
    assert 'href="/" rel="prev"' in second and 'href="/?page=3" rel="next"' in second
    assert 'href="/?page=2" rel="prev"' in last and 'rel="next"' not in last
    assert "Page 2" in second


def test_it_shows_no_page_links_when_one_page_holds_everything(
    vendor: TaskInstance, alice_client: Client
) -> None:
    assert 'class="pagination"' not in alice_client.get("/").content.decode()


def test_the_polled_rows_keep_their_page(sixty_waiting: list[str], alice_client: Client) -> None:
    html = alice_client.get("/?page=2").content.decode()
    assert 'data-live-url="/inbox/rows/?page=2"' in html
    rows = alice_client.get("/inbox/rows/?page=2", **HTMX).content.decode()
    assert rows.strip().startswith('<div id="inbox-rows" data-live-url="/inbox/rows/?page=2"')
    assert _listed(rows) == sixty_waiting[25:50]


@pytest.mark.parametrize("page", ["4", "99", "10000", "99999999999999999999999", "0" * 50 + "7"])
def test_a_page_past_the_end_says_so(
    sixty_waiting: list[str], alice_client: Client, page: str
) -> None:
    response = alice_client.get(f"/?page={page}")
    assert response.status_code == 200
    html = response.content.decode()
    assert _listed(html) == []
    assert "There is no page" in html and 'href="/">Go to the first page' in html
    assert "Nothing is waiting for you" not in html


@pytest.mark.parametrize("page", ["abc", "0", "-1", "1.5", "", "٣"])
def test_a_page_that_is_no_page_number_is_the_first(
    sixty_waiting: list[str], alice_client: Client, page: str
) -> None:
    response = alice_client.get(f"/?page={page}")
    assert response.status_code == 200
    assert _listed(response.content.decode()) == sixty_waiting[:25]


@pytest.mark.parametrize("url", ["/?page=2", "/inbox/rows/?page=3"])
def test_a_later_page_runs_the_same_queries(
    url: str,
    sixty_waiting: list[str],
    alice_client: Client,
    django_assert_num_queries,  # noqa: ANN001
) -> None:
    # 1 the session, 2 the user, 3 the waiting instances, 4 the recently finished, 5 the
    # decisions of both (this class declares none: no slots of theirs to fetch), 6 a count of the
    # waiting instances (the title's number: one page does not hold them all), 7 the latest
    # write (live); and for the whole page 8 the person's permissions (the header's roles:
    # the rows' fragment has no header). (The reported actions, the approvals asked and the
    # actions with approvers are listed on the first page only.)
    with django_assert_num_queries(8 if url.startswith("/?") else 7):
        response = alice_client.get(url)
    assert response.status_code == 200


# --- triage: what each row says ------------------------------------------------------------


def _row(html: str, instance: TaskInstance) -> str:
    start = html.index(f'id="inbox-link-{instance.pk}"')
    return html[start : html.index("</li>", start)]


def test_rows_of_one_task_class_say_who_asks_and_what_each_would_do(
    alice: User, alice_client: Client
) -> None:
    changed, hidden = scenarios.refunds(alice)
    html = alice_client.get("/").content.decode()
    first, second = _row(html, changed), _row(html, hidden)
    for row in (first, second):
        assert "Refund a customer" in row
        assert 'Asked by <strong class="runtime">billing-agent</strong>' in row
        assert "2 answers needed" in row
    # The decisive values (those feeding "Send the refund"), not the note, which feeds none.
    assert '<span class="value">1200</span>' in first and "NL91ABNA0417164300" in first
    assert '<span class="value">35</span>' in second
    assert "late delivery" not in first + second
    assert "attempt 2" in first and "attempt 3" in second
    # The holder changed since the IBAN was given: the row counts it; the other has no change.
    assert "⚠ 1 detail changed" in first and "changed" not in second
    # A hidden character is marked in the row as everywhere else.
    assert marked("U+200B") in second and "⚠ hidden characters" in second
    assert first.replace(str(changed.pk), "") != second.replace(str(hidden.pk), "")


def test_a_row_clamps_a_long_value(alice: User, alice_client: Client) -> None:
    changed, _ = scenarios.refunds(alice)
    long_iban = "NL" + "9" * 300
    open_prompt = scenarios.open_prompt(changed, "iban")
    prompt_respond(
        prompt_id=open_prompt.pk, user=alice, action="edit", version=open_prompt.version,
        value=long_iban, value_confirmation=long_iban,
    )  # fmt: skip
    row = _row(alice_client.get("/").content.decode(), changed)
    assert long_iban not in row and long_iban[:39] + "…" in row


def test_the_title_counts_the_waiting_instances(alice: User, alice_client: Client) -> None:
    assert "<title>Inbox · Confirmation console</title>" in alice_client.get("/").content.decode()
    changed, hidden = scenarios.refunds(alice)
    html = alice_client.get("/").content.decode()
    assert "<title>(2) Inbox · Confirmation console</title>" in html
    instance_cancel(instance=hidden, actor=scenarios.RUNTIME, reason="duplicate")
    rows = alice_client.get("/inbox/rows/", **HTMX).content.decode()
    assert 'data-live-title="(1) Inbox · Confirmation console"' in rows


def test_the_title_counts_past_one_page(sixty_waiting: list[str], alice_client: Client) -> None:
    html = alice_client.get("/?page=2").content.decode()
    assert "<title>(60) Inbox · Confirmation console</title>" in html


def test_the_live_digest_changes_when_a_rows_value_changes(
    alice: User, alice_client: Client
) -> None:
    changed, _ = scenarios.refunds(alice)
    before = re.search(r'data-live-digest="([0-9a-f]+)"', alice_client.get("/").content.decode())
    prompt = scenarios.open_prompt(changed, "amount")
    prompt_respond(
        prompt_id=prompt.pk, user=alice, action="edit", version=prompt.version, value=1100,
        value_confirmation=1100,
    )  # fmt: skip
    html = alice_client.get("/").content.decode()
    after = re.search(r'data-live-digest="([0-9a-f]+)"', html)
    assert before and after and before.group(1) != after.group(1)
    assert '<span class="value">1100</span>' in _row(html, changed)


def test_a_finished_instance_links_to_the_next_waiting_one(
    alice: User, alice_client: Client
) -> None:
    changed, hidden = scenarios.refunds(alice)
    waiting = alice_client.get(f"/instances/{hidden.pk}/").content.decode()
    assert 'id="next-waiting"' not in waiting  # not finished: nothing to go on to yet
    instance_cancel(instance=hidden, actor=scenarios.RUNTIME, reason="duplicate")
    html = alice_client.get(f"/instances/{hidden.pk}/").content.decode()
    assert f'id="next-waiting-link" href="/instances/{changed.pk}/"' in html
    assert "Refund a customer, attempt 2" in html
    instance_cancel(instance=changed, actor=scenarios.RUNTIME, reason="duplicate")
    html = alice_client.get(f"/instances/{hidden.pk}/").content.decode()
    assert "Nothing else waits for you." in html and 'id="next-waiting-link"' not in html
