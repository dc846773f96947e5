"""Triage and pages that stay true, in real Chromium at 1280 and 390 px, DEBUG on and off:
inbox rows of one task class differ and name the runtime, the title counts what waits and
follows a change, a finished instance leads to the next one; every section of an open instance
page follows a change of the world, another tab's veto and an expiry; a refused veto says so."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import override_settings
from django.utils import timezone
from playwright.sync_api import Page, expect

from beliefs.models import Prompt
from beliefs.services.instances import instance_cancel
from beliefs.services.responses import prompt_respond
from tests.browser import scenarios
from tests.browser.test_enduser import assumption, card
from tests.builders import set_world
from tests.conftest import PASSWORD

SignIn = Callable[[str, str], None]
WIDTHS = [1280, 390]


@pytest.fixture(params=[False, True], ids=["debug-off", "debug-on"])
def debug(request: pytest.FixtureRequest) -> Iterator[bool]:
    with override_settings(DEBUG=request.param):
        yield request.param


def _fits(page: Page) -> None:
    width, screen = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert width <= screen


@pytest.mark.parametrize("width", WIDTHS)
def test_inbox_rows_of_one_task_class_differ_and_name_the_runtime(
    page: Page,
    sign_in: SignIn,
    screenshot: Callable[[str], object],
    alice: User,
    debug: bool,
    width: int,
) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    changed, hidden = scenarios.refunds(alice)
    sign_in("alice", PASSWORD)
    expect(page).to_have_title("(2) Inbox · Confirmation console")
    rows = page.locator(".inbox-item")
    expect(rows).to_have_count(2)
    first, second = rows.nth(0), rows.nth(1)  # newest first: attempt 3, then attempt 2
    for row in (first, second):
        expect(row.get_by_role("link")).to_have_text("Refund a customer")
        expect(row.locator(".runtime")).to_have_text("billing-agent")
    expect(first).to_contain_text("Amount 35")
    expect(first).to_contain_text("⚠ hidden characters")
    expect(first.locator(".hidden-char")).to_have_text("⟨U+200B⟩")
    expect(second).to_contain_text("Amount 1200")
    expect(second).to_contain_text("IBAN NL91ABNA0417164300")
    expect(second).to_contain_text("⚠ 1 detail changed")
    assert first.inner_text() != second.inner_text()
    _fits(page)
    screenshot(f"triage-inbox-{width}-{'debug' if debug else 'nodebug'}")

    # The runtime cancels one: the row leaves and the title counts one, without a reload.
    instance_cancel(instance=hidden, actor=scenarios.RUNTIME, reason="duplicate")
    expect(rows).to_have_count(1)
    expect(page).to_have_title("(1) Inbox · Confirmation console")


@pytest.mark.parametrize("width", WIDTHS)
def test_a_finished_instance_leads_to_the_next_waiting_one(
    page: Page, sign_in: SignIn, alice: User, fast_confirm: int, debug: bool, width: int
) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    changed, hidden = scenarios.refunds(alice)
    sign_in("alice", PASSWORD)
    page.locator(f"#inbox-link-{hidden.pk}").click()
    expect(page.locator("#next-waiting")).to_have_count(0)
    reject = card(page, "Amount").locator("details.reject")
    reject.locator("summary").click()
    reject.get_by_role("button", name=re.compile("^Reject")).click()
    expect(page.locator("#instance-banner")).to_contain_text("Cancelled")
    link = page.locator("#next-waiting-link")
    expect(link).to_have_text("Refund a customer, attempt 2")
    link.click()
    expect(page).to_have_url(re.compile(f"/instances/{changed.pk}/$"))
    _fits(page)


@pytest.mark.parametrize("width", WIDTHS)
def test_an_open_page_follows_a_change_of_the_world(
    page: Page, sign_in: SignIn, alice: User, debug: bool, width: int
) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    changed, _ = scenarios.refunds(alice)
    sign_in("alice", PASSWORD)
    page.goto(f"/instances/{changed.pk}/")
    iban = card(page, "IBAN")
    expect(iban.locator("table.diff")).to_contain_text("B. Exampel Holdings")
    set_world(
        instance=changed,
        world={"iban": {"holder": "Bob Example Ltd"}},
        actor=scenarios.refund_agent(),
    )
    expect(iban.locator("table.diff")).to_contain_text("Bob Example Ltd")
    expect(iban.locator("table.diff")).not_to_contain_text("B. Exampel Holdings")
    expect(page.locator("[data-live-stale]")).to_have_count(0)
    _fits(page)


@pytest.mark.parametrize("width", WIDTHS)
def test_an_open_page_follows_another_tabs_veto(
    page: Page, sign_in: SignIn, alice: User, debug: bool, width: int
) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    instance = scenarios.vendor(alice)
    sign_in("alice", PASSWORD)
    page.goto(f"/instances/{instance.pk}/")
    expect(
        assumption(page, "Due date").get_by_role("button", name=re.compile("^Veto"))
    ).to_be_visible()

    other = page.context.new_page()
    other.set_viewport_size({"width": width, "height": 900})
    other.goto(f"/instances/{instance.pk}/")
    line = assumption(other, "Due date")
    line.get_by_label("Reason for a veto (optional)").fill("we moved it")
    line.get_by_role("button", name=re.compile("^Veto")).click()
    expect(assumption(other, "Due date")).to_contain_text("Vetoed. Reason: we moved it")

    # The first tab: the line says vetoed, its Veto is gone, the question it opened is asked,
    # and the banner counts it.
    first = assumption(page, "Due date")
    expect(first).to_contain_text("Vetoed. Reason: we moved it")
    expect(first.get_by_role("button", name=re.compile("^Veto"))).to_have_count(0)
    expect(card(page, "Due date")).to_be_visible()
    expect(page.locator("#instance-banner")).to_contain_text("4 answers needed")
    other.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_an_open_page_shows_its_expiry(
    page: Page, sign_in: SignIn, alice: User, debug: bool, width: int
) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    instance = scenarios.vendor(alice)
    soon = timezone.now() + timedelta(seconds=3)
    Prompt.objects.filter(instance=instance, blocking=True).update(expires_at=soon)
    sign_in("alice", PASSWORD)
    page.goto(f"/instances/{instance.pk}/")
    expect(page.locator("#instance-banner")).to_contain_text("3 answers needed")
    expect(page.locator("#instance-banner")).to_contain_text("Expired")  # nobody wrote
    expect(page.get_by_role("button", name=re.compile("^(Confirm|Answer|Veto)"))).to_have_count(0)


@pytest.mark.parametrize("width", WIDTHS)
def test_a_refused_veto_says_so(
    page: Page,
    sign_in: SignIn,
    screenshot: Callable[[str], object],
    alice: User,
    debug: bool,
    width: int,
) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    instance = scenarios.vendor(alice)
    sign_in("alice", PASSWORD)
    # A tab that has not heard of the veto yet (its live asks held back).
    page.route(re.compile(r"/live/\?"), lambda route: route.abort())
    page.goto(f"/instances/{instance.pk}/")
    prompt = scenarios.open_prompt(instance, "due_date")
    prompt_respond(
        prompt_id=prompt.pk, user=alice, action="veto", version=prompt.version, reason="moved"
    )
    line = assumption(page, "Due date")
    line.get_by_label("Reason for a veto (optional)").fill("the date is wrong")
    line.get_by_role("button", name=re.compile("^Veto")).click()
    message = page.locator(f"#prompt-{prompt.pk} .message-409")
    expect(message).to_contain_text("Not recorded. This was already vetoed")
    expect(message).to_contain_text("with the reason “moved”")
    expect(message).to_contain_text("Your reason was not sent either: “the date is wrong”.")
    expect(
        assumption(page, "Due date").get_by_role("button", name=re.compile("^Veto"))
    ).to_have_count(0)
    _fits(page)
    screenshot(f"triage-refused-veto-{width}-{'debug' if debug else 'nodebug'}")
