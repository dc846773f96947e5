"""Live pages in real Chromium: an open instance page and the inbox follow changes made
elsewhere (the runtime through the API, another tab of the same person) without a reload."""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Page, expect

from beliefs.models import TaskInstance
from tests.browser import scenarios
from tests.browser.test_enduser import assumption, card
from tests.conftest import PASSWORD, runtime_key_of

SignIn = Callable[[str, str], None]
WIDTHS = [1280, 390]


@pytest.fixture
def fast_confirm(settings: Any) -> int:  # noqa: ANN401
    settings.CONSOLE_CONFIRM_DELAY_MS = 300
    return 300


def _cancel_through_the_api(base: str, instance: TaskInstance, reason: str) -> int:
    key, secret = runtime_key_of("live-runtime")
    TaskInstance.objects.filter(pk=instance.pk).update(runtime=key.runtime)
    request = urllib.request.Request(
        f"{base}/api/v1/instances/{instance.pk}/cancel/",
        data=json.dumps({"reason": reason}).encode(),
        headers={"Authorization": f"Api-Key {secret}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - the live server
        return response.status


def _shoot(page: Page, name: str) -> None:
    page.screenshot(path=str(Path("/tmp") / f"{name}.png"), full_page=True, caret="initial")


@pytest.mark.parametrize("width", WIDTHS)
def test_the_runtime_cancelling_updates_the_open_page(
    page: Page,
    sign_in: SignIn,
    alice: User,
    live_server: Any,
    width: int,  # noqa: ANN401
) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    instance = scenarios.vendor(alice)
    sign_in("alice", PASSWORD)
    page.goto(f"/instances/{instance.pk}/")
    expect(page.locator("#instance-banner")).to_contain_text("3 answers needed")
    expect(page.locator("#instance-live")).to_have_attribute("data-live-version", re.compile("."))

    assert _cancel_through_the_api(live_server.url, instance, "The user changed their mind") == 200

    banner = page.locator("#instance-banner")
    expect(banner).to_contain_text("Cancelled")
    expect(banner).to_contain_text("The user changed their mind")
    expect(page.get_by_role("button", name=re.compile("^Confirm"))).to_have_count(0)
    expect(page.get_by_role("button", name=re.compile("^(Veto|Answer)"))).to_have_count(0)
    _shoot(page, f"live-cancelled-{width}")


@pytest.mark.parametrize("width", WIDTHS)
def test_an_answer_in_another_tab_shows_in_the_first(
    page: Page, sign_in: SignIn, alice: User, fast_confirm: int, width: int
) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    instance = scenarios.vendor(alice)
    sign_in("alice", PASSWORD)
    page.goto(f"/instances/{instance.pk}/")
    other = page.context.new_page()  # a second tab of the same person (same session)
    other.set_viewport_size({"width": width, "height": 900})
    other.goto(f"/instances/{instance.pk}/")

    confirm = card(other, "Recipient account").get_by_role("button", name="Confirm")
    expect(confirm).to_be_enabled(timeout=fast_confirm + 5000)
    confirm.click()
    expect(card(other, "Recipient account")).to_contain_text("Confirmed: NL91ABNA0417164300")

    first = card(page, "Recipient account")
    expect(first).to_contain_text("Confirmed: NL91ABNA0417164300")
    expect(first.get_by_role("button")).to_have_count(0)
    expect(page.locator("#instance-banner")).to_contain_text("2 answers needed")
    _shoot(page, f"live-answered-{width}")
    other.close()


def test_a_card_being_typed_in_is_kept_disabled_and_marked(
    page: Page, sign_in: SignIn, alice: User, fast_confirm: int
) -> None:
    instance = scenarios.vendor(alice)
    sign_in("alice", PASSWORD)
    page.goto(f"/instances/{instance.pk}/")
    typed = card(page, "Amount")
    expect(typed.get_by_role("button", name="Confirm")).to_be_enabled(timeout=fast_confirm + 5000)
    typed.get_by_label("The value to use").fill("1300")

    other = page.context.new_page()
    other.goto(f"/instances/{instance.pk}/")
    there = card(other, "Amount")
    expect(there.get_by_role("button", name="Confirm")).to_be_enabled(timeout=fast_confirm + 5000)
    there.get_by_role("button", name="Confirm").click()
    expect(card(other, "Amount")).to_contain_text("Confirmed: 1250")
    # An unrelated assumption's veto reason typed in the first tab is kept as well.
    due = assumption(page, "Due date")
    due.get_by_label("Reason for a veto (optional)").fill("still typing")

    # The banner and the other cards follow; the card being typed in keeps what was typed,
    # says it changed, and can send nothing.
    expect(page.locator("#instance-banner")).to_contain_text("2 answers needed")
    stale = page.locator("article.card[data-live-stale]")
    expect(stale).to_contain_text("This question changed or was answered elsewhere")
    expect(stale.get_by_label("The value to use")).to_have_value("1300")
    for name in ("Confirm", "Use this value instead"):
        expect(stale.get_by_role("button", name=re.compile(f"^{name}"))).to_be_disabled()
    expect(due.get_by_label("Reason for a veto (optional)")).to_have_value("still typing")
    _shoot(page, "live-stale-1280")

    stale.get_by_role("button", name="Show the fresh version").click()
    expect(card(page, "Amount")).to_contain_text("Confirmed: 1250")
    expect(page.locator("[data-live-stale]")).to_have_count(0)
    other.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_the_inbox_drops_an_instance_another_tab_finished(
    page: Page,
    sign_in: SignIn,
    alice: User,
    live_server: Any,
    width: int,  # noqa: ANN401
) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    instance = scenarios.vendor(alice)
    sign_in("alice", PASSWORD)
    expect(page.locator(f"#inbox-link-{instance.pk}")).to_be_visible()

    other = page.context.new_page()
    other.goto(f"/instances/{instance.pk}/")
    reject = card(other, "Amount").locator("details.reject")
    reject.locator("summary").click()
    reject.get_by_role("button", name=re.compile("^Reject")).click()
    expect(other.locator("#instance-banner")).to_contain_text("Cancelled")

    expect(page.locator(f"#inbox-link-{instance.pk}")).to_have_count(0)
    expect(page.locator(f"#recent-link-{instance.pk}")).to_contain_text("Vendor payment")
    expect(page.locator("#inbox-rows")).to_contain_text("cancelled")
    other.close()
