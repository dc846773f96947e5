"""The inbox: the user's instances awaiting them, newest first, refreshed by htmx polling."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from beliefs import services
from beliefs.models import Prompt, TaskInstance
from tests.browser import scenarios
from tests.web.conftest import HTMX

pytestmark = pytest.mark.django_db


def test_it_lists_the_instances_awaiting_the_user_with_what_is_at_stake(
    vendor: TaskInstance, alice_client: Client
) -> None:
    html = alice_client.get("/").content.decode()
    assert f'href="/instances/{vendor.pk}/"' in html
    assert "Vendor payment" in html
    assert "run 2" in html
    assert "Send payment" in html and "Authorize the vendor" in html  # decisions at stake
    assert "3 answers needed" in html
    assert "2 assumptions to review" in html
    assert "opened" in html and "ago" in html
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


def test_it_polls_its_rows_partial(vendor: TaskInstance, alice_client: Client) -> None:
    html = alice_client.get("/").content.decode()
    assert 'hx-get="/inbox/rows/"' in html
    assert 'hx-trigger="every 10s"' in html
    assert 'hx-swap="outerHTML"' in html


def test_it_renders_the_rows_partial_alone_with_its_own_trigger(
    vendor: TaskInstance, alice_client: Client
) -> None:
    response = alice_client.get("/inbox/rows/", **HTMX)
    html = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in html
    assert html.strip().startswith('<div id="inbox-rows" hx-get="/inbox/rows/"')
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
    services.instance_cancel(instance=vendor, actor=scenarios.RUNTIME, reason="not needed")
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
    # 1 the session, 2 the user,
    # 3 the waiting instances with their counts and next expiry, 4 their decisions (prefetch),
    # 5 the recently finished instances,
    # 6 and 7 the user's and the groups' permissions (the header's roles).
    with django_assert_num_queries(7):
        response = alice_client.get(url)
    assert response.status_code == 200
