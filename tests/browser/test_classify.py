"""The classifier console in Chromium: classify an unclassified slot, and a four-eyes downgrade."""

from __future__ import annotations

import re
from collections.abc import Callable

from axe_playwright_python.sync_playwright import Axe
from django.contrib.auth.models import User
from playwright.sync_api import Page, expect

from beliefs.models import AuditEvent, RiskChangeRequest, Slot
from demo.data import seed_demo
from tests.builders import answered_run, classify, run, shop
from tests.conftest import PASSWORD

ADDRESS = {
    "item_sku": "SKU-1",
    "shipping_address": "12 Old Street, Leeds",
    "delivery_speed": "standard",
    "gift_wrap": False,
}


def slot_row(page: Page, key: str):  # noqa: ANN201 - a Playwright locator
    return page.locator(f'tr[data-slot="{key}"]')


def test_it_lets_carol_classify_the_unclassified_shipping_address(
    page: Page,
    sign_in: Callable[[str, str], None],
    screenshot: Callable[[str], object],
    carol: User,
    alice: User,
) -> None:
    task_class = shop()
    answered_run(task_class, alice, ADDRESS)
    run(task_class, alice)  # run 2: the carried address is asked again (unclassified)

    sign_in("carol", PASSWORD)
    page.goto("/classify/")
    queue = page.locator("table.queue-table")
    expect(queue).to_contain_text("shipping_address")
    expect(queue).to_contain_text("treated as irreversible until classified")
    expect(queue).to_contain_text("policy")  # the runtime's suggestion
    screenshot("classify-index")

    queue.get_by_role("link", name=re.compile("Classify shipping_address")).click()
    row = slot_row(page, "shipping_address")
    expect(row.locator(".risk-reason")).to_have_text("unclassified: treated as irreversible")

    row.get_by_label("Own risk class of shipping_address").select_option("irreversible")
    expect(row.locator(".impact-box")).to_contain_text("Takes effect at once")
    row.get_by_label("Reason for changing shipping_address").fill("A3: a stale address ships")
    screenshot("classify-preview")
    row.get_by_role("button", name="Save shipping_address").click()

    expect(page.locator(".classify-message-success")).to_contain_text(
        "slot shipping_address is now irreversible"
    )
    row = slot_row(page, "shipping_address")
    expect(row.locator(".risk-reason")).to_have_text("own classification")
    expect(row.locator(".badge.risk-irreversible")).to_be_visible()
    expect(row.locator(".unclassified-note")).to_have_count(0)
    screenshot("classify-saved")
    assert Slot.objects.get(key="shipping_address").risk_class == "irreversible"
    assert AuditEvent.objects.filter(kind="classification.slot_risk", actor="carol").count() == 1


def test_it_lets_cathy_approve_a_downgrade_that_carol_requested(
    page: Page,
    sign_in: Callable[[str, str], None],
    sign_out: Callable[[], None],
    screenshot: Callable[[str], object],
    carol: User,
    cathy: User,
    alice: User,
) -> None:
    task_class = shop()
    classify(task_class, slots={"shipping_address": "irreversible"})
    answered_run(task_class, alice, ADDRESS)
    run(task_class, alice)

    sign_in("carol", PASSWORD)
    page.goto(f"/classify/{task_class.key}/")
    row = slot_row(page, "shipping_address")
    row.get_by_label("Own risk class of shipping_address").select_option("reversible")
    expect(row.locator(".impact-box")).to_contain_text("Needs a second classifier")
    expect(row.locator(".impact-box")).to_contain_text("1 blocking prompt stays blocking")
    row.get_by_label("Reason for changing shipping_address").fill("addresses are editable")
    row.get_by_role("button", name="Save shipping_address").click()
    expect(page.locator(".classify-message-warning")).to_contain_text("Not applied yet")
    pending = page.locator(".pending-item")
    expect(pending).to_contain_text("Requested by carol")
    expect(pending.get_by_role("button", name=re.compile("^Approve"))).to_have_count(0)
    expect(slot_row(page, "shipping_address").locator(".risk-reason")).to_have_text(
        "own classification"
    )
    screenshot("classify-requested")

    sign_out()
    sign_in("cathy", PASSWORD)
    page.goto(f"/classify/{task_class.key}/")
    pending = page.locator(".pending-item")
    expect(pending).to_contain_text("addresses are editable")
    pending.get_by_label("Reason for your decision").fill("checked with the shipping team")
    screenshot("classify-pending")
    pending.get_by_role("button", name=re.compile("^Approve")).click()

    expect(page.locator(".classify-message-success")).to_contain_text("Approved carol's request")
    expect(page.locator(".pending-item")).to_have_count(0)
    row = slot_row(page, "shipping_address")
    expect(row.locator(".badge.risk-reversible")).to_be_visible()
    expect(row.locator(".risk-reason")).to_have_text("own classification")
    screenshot("classify-approved")
    change_request = RiskChangeRequest.objects.get()
    assert (change_request.state, change_request.decided_by) == ("approved", cathy)


def assert_accessible(page: Page) -> None:
    """No serious or critical axe-core violation on the page as it stands."""
    results = Axe().run(page)
    serious = [
        (v["id"], [n["target"] for n in v["nodes"]])
        for v in results.response["violations"]
        if v["impact"] in ("serious", "critical")
    ]
    assert serious == []


def test_it_shows_a_missing_reason_in_place_and_the_pages_are_accessible(
    page: Page,
    sign_in: Callable[[str, str], None],
    screenshot: Callable[[str], object],
) -> None:
    seed_demo()
    sign_in("carol", "carol-demo-pass")
    for url in ("/classify/", "/classify/matrix/", "/activity/", "/classify/iam.grant_access/"):
        page.goto(url)
        assert_accessible(page)

    page.goto("/classify/legal.sign_contract/")
    row = page.locator('tr[data-decision="sign_contract"]')
    row.get_by_label("Risk class of decision sign_contract").select_option("policy")
    expect(row.locator(".impact-box")).to_contain_text("3 blocking prompts stay blocking")
    row.get_by_role("button", name="Save sign_contract").click()
    row = page.locator('tr[data-decision="sign_contract"]')
    expect(row.locator(".field-error")).to_contain_text("Give a reason for this change")
    expect(row.locator(".impact-box")).to_contain_text("3 blocking prompts stay blocking")  # kept
    expect(row).to_be_focused()
    assert_accessible(page)
    screenshot("classify-missing-reason")
    assert not RiskChangeRequest.objects.filter(state="pending").exists()
