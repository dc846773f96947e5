"""Attention in Chromium, at 1280 and 390 px, DEBUG on and off: a
changed detail needs an act that names it, friction rises with habituation and /insights/
shows it, Enter follows the changed value, a no-op edit is a confirm, and a veto after the
action was cleared asks for a correction.

Screenshots: artifacts/screenshots/attention-*.png.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Page, expect

from beliefs.models import AuditEvent, Prompt, TaskInstance
from beliefs.services.audit import Actor, digest_of
from beliefs.services.planning import instance_plan
from tests.browser import scenarios
from tests.browser.test_enduser import assumption, card
from tests.builders import classify, confirm_or_answer, open_instance, register_task_class
from tests.conftest import PASSWORD

SignIn = Callable[[str, str], None]
Shot = Callable[[str], Any]
WIDTHS = {1280: {"width": 1280, "height": 900}, 390: {"width": 390, "height": 844}}
RUNTIME = Actor()
PRIMARY = re.compile(r"\bprimary\b")

# The case attention exists for: the account holder became a look-alike of the one on record.
WORLD_THEN = {
    "account": {"holder": "Bob Example", "bank": "ABN AMRO"},
    "amount": {"currency": "EUR"},
    "invoice": {"status": "open"},
}
WORLD_NOW = {
    "account": {"holder": "B. Exampel Holdings", "bank": "ABN AMRO"},
    "amount": {"currency": "EUR"},
    "invoice": {"status": "open"},
}


@pytest.fixture(params=[True, False], ids=["debug", "production"])
def debug(request: pytest.FixtureRequest, settings: Any) -> Iterator[bool]:  # noqa: ANN401
    settings.DEBUG = request.param
    yield request.param


@pytest.fixture(params=list(WIDTHS), ids=lambda w: f"{w}px")
def width(request: pytest.FixtureRequest, page: Page) -> int:
    page.set_viewport_size(WIDTHS[request.param])
    return int(request.param)


@pytest.fixture
def fast(settings: Any) -> int:  # noqa: ANN401
    settings.CONSOLE_CONFIRM_DELAY_MS = 300
    settings.CONSOLE_HABIT_WINDOW = 3
    return 300


def _refund_class() -> None:
    task_class = register_task_class(
        key="payments.refund",
        name="Refund a customer",
        slots=[
            {"key": "account", "label": "Account"},
            {"key": "amount", "label": "Amount", "value_type": "number"},
            {"key": "invoice", "label": "Invoice"},
        ],
        decisions=[
            {"key": "refund", "label": "Send the refund", "slots": ["account", "amount"]},
            {"key": "close", "label": "Close the invoice", "slots": ["invoice"]},
        ],
        actor=RUNTIME,
    )
    classify(
        task_class,
        slots={"account": "irreversible", "amount": "irreversible", "invoice": "irreversible"},
        decisions={"refund": "irreversible", "close": "irreversible"},
    )


def _refund(user: User, world: dict) -> TaskInstance:
    """A refund whose three values are carried from the person's earlier run: each is an
    irreversible confirmation, against `world`."""
    if not TaskInstance.objects.filter(task_class__key="payments.refund").exists():
        _refund_class()
        first = open_instance(
            task_class_key="payments.refund",
            principal=user.username,
            world=WORLD_THEN,
            beliefs=[
                {"slot": k, "value": v, "source": "user", "turn": 1, "world_ref": WORLD_THEN[k]}
                for k, v in {"account": "Bob Example", "amount": 80, "invoice": "INV-7"}.items()
            ],
            actor=RUNTIME,
        )
        instance_plan(instance=first, actor=RUNTIME)
    instance = open_instance(
        task_class_key="payments.refund", principal=user.username, world=world, actor=RUNTIME
    )
    return instance_plan(instance=instance, actor=RUNTIME)


def _name(width: int, debug: bool) -> str:
    return f"{width}-{'debug' if debug else 'production'}"


def _fits(page: Page, width: int) -> None:
    assert page.evaluate("document.documentElement.scrollWidth") <= width


def test_a_changed_world_is_confirmed_only_after_each_detail_is_acknowledged(
    page: Page,
    sign_in: SignIn,
    alice: User,
    width: int,
    debug: bool,
    fast: int,
    screenshot: Shot,
) -> None:
    instance = _refund(alice, WORLD_NOW)
    sign_in("alice", PASSWORD)
    page.goto(f"/instances/{instance.pk}/")

    # The unchanged card: enabled once its delay is over (one click, below).
    amount = card(page, "Amount")
    expect(amount.locator(".attention")).to_have_count(0)
    amount_confirm = amount.get_by_role("button", name="Confirm")
    expect(amount_confirm).to_be_enabled()

    # The changed one looks different and names the change; its delay is as long over, yet
    # Confirm stays disabled until the change is ticked.
    account = card(page, "Account")
    box = account.locator(".attention")
    expect(box).to_be_visible()
    tick = account.get_by_label("The holder is now ‘B. Exampel Holdings’ (was ‘Bob Example’)")
    expect(tick).not_to_be_checked()
    confirm = account.get_by_role("button", name="Confirm")
    expect(confirm).to_be_disabled()
    assert account.evaluate("e => getComputedStyle(e).borderLeftWidth") == "10px"
    _fits(page, width)
    screenshot(f"attention-acknowledge-{_name(width, debug)}")

    # One click, the button forced on as an old page or a script could: the server refuses.
    confirm.evaluate("b => { b.disabled = false; b.click(); }")
    account = card(page, "Account")
    expect(account.get_by_role("alert")).to_contain_text(
        "Tick each changed detail below to say that you read it (1 not ticked yet)"
    )
    assert Prompt.objects.get(instance=instance, slot__key="account").state == "open"
    _fits(page, width)
    screenshot(f"attention-acknowledge-refused-{_name(width, debug)}")

    # Ticked, it is taken, and the acknowledgement is recorded with the answer.
    account.get_by_label("The holder is now ‘B. Exampel Holdings’ (was ‘Bob Example’)").check()
    confirm = account.get_by_role("button", name="Confirm")
    expect(confirm).to_be_enabled()
    confirm.click()
    expect(card(page, "Account")).to_contain_text("Confirmed: Bob Example")
    amount_confirm.click()  # the unchanged card: one click
    expect(card(page, "Amount")).to_contain_text("Confirmed: 80")
    event = AuditEvent.objects.get(kind="prompt.confirm", subject="account")
    # The world's old and new values as digests: the audit never holds the values.
    assert event.data["acknowledged"] == [
        {
            "key": "holder",
            "change": "changed",
            "old_digest": digest_of("Bob Example"),
            "new_digest": digest_of("B. Exampel Holdings"),
        }
    ]


def test_habitual_confirmations_raise_friction_and_insights_show_it(
    page: Page,
    sign_in: SignIn,
    sign_out: Callable[[], None],
    alice: User,
    carol: User,
    width: int,
    debug: bool,
    fast: int,
    screenshot: Shot,
) -> None:
    sign_in("alice", PASSWORD)
    # Three quick confirmations of unchanged values: a habit (the window is 3 here).
    for _ in range(3):
        instance = _refund(alice, WORLD_THEN)
        page.goto(f"/instances/{instance.pk}/")
        invoice = card(page, "Invoice")
        expect(invoice.locator(".attention")).to_have_count(0)
        invoice.get_by_role("button", name="Confirm").click()  # (waits for it to enable)
        expect(card(page, "Invoice")).to_contain_text("Confirmed: INV-7")

    instance = _refund(alice, WORLD_THEN)
    page.goto(f"/instances/{instance.pk}/")
    invoice = card(page, "Invoice")
    expect(invoice.locator(".attention-friction")).to_be_visible()
    expect(invoice).to_contain_text("Your latest 3 confirmations of values that cannot be undone")
    tail = invoice.get_by_label("Last 4 characters of the value on record")
    confirm = invoice.get_by_role("button", name="Confirm")
    expect(confirm).to_be_disabled()
    _fits(page, width)
    screenshot(f"attention-friction-{_name(width, debug)}")

    tail.fill("INV7")  # four characters, but not the value's last four
    expect(confirm).to_be_enabled()
    confirm.click()
    invoice = card(page, "Invoice")
    expect(invoice.get_by_role("alert")).to_contain_text("Type the last 4 characters")
    invoice.get_by_label("Last 4 characters of the value on record").fill("nv-7")
    invoice.get_by_role("button", name="Confirm").click()
    expect(card(page, "Invoice")).to_contain_text("Confirmed: INV-7")

    sign_out()
    sign_in("carol", PASSWORD)
    page.goto("/insights/")
    section = page.locator("section", has=page.get_by_role("heading", name="Friction raised"))
    expect(section.locator("#friction-raised-now")).to_have_text("1")
    row = section.locator("table.friction-people tbody tr").filter(has_text="alice")
    expect(row).to_contain_text("raised")
    expect(row).to_contain_text("3 of the latest 3 kept unchanged, median dwell")
    expect(section.locator("table.friction-changes")).to_contain_text("rose")
    _fits(page, width)
    screenshot(f"attention-insights-{_name(width, debug)}")


def test_enter_never_sends_a_changed_value_and_a_no_op_edit_is_a_confirm(
    page: Page, sign_in: SignIn, alice: User, width: int, debug: bool, fast: int
) -> None:
    """A change of an irreversible value is typed twice, and Enter never sends it by itself:
    in the value it moves to the second field (which appears only once the value differs),
    there to the button that sends both; the button sends it."""
    instance = _refund(alice, WORLD_THEN)
    sign_in("alice", PASSWORD)
    page.goto(f"/instances/{instance.pk}/")

    amount = card(page, "Amount")
    use_mine = amount.get_by_role("button", name="Use this value instead")
    expect(use_mine).to_be_enabled()
    value = amount.get_by_label("The value to use")
    again = amount.get_by_label("Type the new value again")
    expect(amount.get_by_role("button", name="Confirm")).to_have_class(PRIMARY)
    expect(again).to_be_hidden()  # the value on record, unchanged: one field
    value.fill("95")
    expect(again).to_be_visible()
    expect(use_mine).to_have_class(PRIMARY)  # the changed value is what the card now offers
    value.press("Enter")
    expect(again).to_be_focused()
    again.fill("95")
    again.press("Enter")
    expect(use_mine).to_be_focused()
    # Nothing was sent: the card is still open, its value as typed, nothing recorded.
    expect(value).to_have_value("95")
    assert Prompt.objects.get(instance=instance, slot__key="amount").state == "open"
    value.fill("80")  # back to the value on record: what the second field holds stays in view
    expect(again).to_be_visible()
    value.fill("95")
    use_mine.focus()
    page.keyboard.press("Enter")  # the button sends it
    expect(card(page, "Amount")).to_contain_text("Edited and confirmed: 95")
    assert Prompt.objects.get(instance=instance, slot__key="amount").response_value == 95

    invoice = card(page, "Invoice")
    same = invoice.get_by_role("button", name="Use this value instead")
    expect(same).to_be_enabled()
    same.click()  # nothing changed: this is a confirm
    invoice = card(page, "Invoice")
    expect(invoice).to_contain_text("Confirmed: INV-7")
    expect(invoice).not_to_contain_text("instead of")
    assert Prompt.objects.get(instance=instance, slot__key="invoice").action == "confirm"


def test_a_veto_after_the_action_was_cleared_asks_for_a_correction(
    page: Page, sign_in: SignIn, alice: User, width: int, debug: bool, screenshot: Shot
) -> None:
    instance = scenarios.vendor(alice)
    confirm_or_answer(instance, alice, "single")
    sign_in("alice", PASSWORD)
    page.goto(f"/instances/{instance.pk}/")
    expect(page.locator("#instance-banner")).to_contain_text("This action may proceed")
    reference = assumption(page, "Payment reference")
    reference.get_by_role("button", name="Veto").click()
    banner = page.locator("#instance-banner")
    expect(banner).to_contain_text("A correction is needed")
    expect(banner).to_contain_text("the agent may already have acted with it")
    expect(banner).to_contain_text("1 answer needed")
    expect(banner).not_to_contain_text("Nothing is done until then")
    page.reload()  # the same when the page is read afresh
    expect(page.locator("#instance-banner")).to_contain_text("A correction is needed")
    _fits(page, width)
    screenshot(f"attention-late-veto-{_name(width, debug)}")
