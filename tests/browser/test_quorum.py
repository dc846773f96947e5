"""M-of-N approval in real Chromium: an approver finds the action in the inbox, sees
the same restatement with the principal's edit marked, and approves; a second approver makes
it ready; another rejects with a reason. At 1280 and 390 px, with screenshots of both."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from playwright.sync_api import Page, expect

from beliefs.models import Decision, Prompt, PromptState, TaskInstance
from beliefs.services.audit import Actor
from beliefs.services.planning import instance_plan
from beliefs.services.responses import prompt_respond
from tests.browser.test_enduser import assert_accessible
from tests.builders import classify, open_instance, register_task_class
from tests.conftest import PASSWORD

SignIn = Callable[[str, str], None]
RUNTIME = Actor()


def _approver(username: str, group: Group) -> User:
    user = User.objects.create_user(username=username, password=PASSWORD)
    user.groups.add(group)
    return user


def _waiting_for_approval(alice: User, group: Group, required: int) -> TaskInstance:
    """A payout alice answered (she confirmed the account and edited the amount): it waits
    for `required` approvals from the group."""
    task_class = register_task_class(
        key="treasury.payout",
        name="Treasury payout",
        slots=[
            {"key": "iban", "label": "Account"},
            {"key": "amount", "label": "Amount (EUR)", "value_type": "number"},
        ],
        decisions=[{"key": "pay", "label": "Pay out", "slots": ["iban", "amount"]}],
        actor=RUNTIME,
    )
    classify(task_class, slots={"iban": "irreversible", "amount": "irreversible"})
    Decision.objects.filter(key="pay").update(approvals_required=required, approvers=group)
    instance = open_instance(
        task_class_key="treasury.payout",
        principal="alice",
        actor=RUNTIME,
        beliefs=[
            {"slot": "iban", "value": "DE89370400440532013000", "source": "tool"},
            {"slot": "amount", "value": 200000, "source": "tool"},
        ],
    )
    instance_plan(instance=instance, actor=RUNTIME)
    for prompt in Prompt.objects.filter(instance=instance, state=PromptState.OPEN, blocking=True):
        edit = prompt.slot.key == "amount"
        prompt_respond(
            prompt_id=prompt.pk,
            user=alice,
            action="edit" if edit else "confirm",
            version=prompt.version,
            value=250000 if edit else None,
            value_confirmation=250000 if edit else None,
        )
    instance.refresh_from_db()
    assert instance.status == "awaiting_approval"
    return instance


@pytest.mark.parametrize("width", [1280, 390])
def test_an_approver_walks_through_the_inbox_and_two_approvals_make_it_ready(
    page: Page,
    sign_in: SignIn,
    sign_out: Callable[[], None],
    screenshot: Callable[[str], Any],
    alice: User,
    width: int,
) -> None:
    group = Group.objects.create(name="treasury")
    _approver("bob", group)
    _approver("dave", group)
    _approver("erin", group)
    instance = _waiting_for_approval(alice, group, required=2)
    page.set_viewport_size({"width": width, "height": 900})

    sign_in("bob", PASSWORD)
    page.goto("/")
    link = page.locator(f"#approval-link-{instance.pk}")
    expect(page.get_by_role("heading", name="Waiting for your approval")).to_be_visible()
    expect(link).to_contain_text("Treasury payout")
    screenshot(f"quorum-inbox-{width}")
    link.click()
    expect(page.get_by_role("heading", name="What the agent wants to do")).to_be_visible()
    expect(page.locator("#restatement")).to_contain_text("250000")
    amount = page.locator("#value-amount")
    expect(amount).to_have_class(re.compile(r"\bedited\b"))  # a value block, marked edited
    expect(amount).to_contain_text("edited by alice")
    expect(page.locator("#value-iban")).to_contain_text("confirmed by alice")
    expect(page.locator("#approval-missing")).to_have_text("2 approvals missing")
    width_now = page.evaluate("document.documentElement.scrollWidth")
    assert width_now <= width, f"the approval page scrolls sideways: {width_now}px"
    assert_accessible(page)
    screenshot(f"quorum-approve-{width}")
    page.get_by_role("button", name="Approve these values").click()
    expect(page.locator(".messages")).to_contain_text("Approved")
    expect(page.locator("#approval-missing")).to_have_text("1 approval missing")
    expect(page.locator("#approvers")).to_contain_text("bob (you): ✓ approved")
    expect(page.get_by_role("button", name="Approve these values")).to_have_count(0)
    screenshot(f"quorum-approved-once-{width}")

    sign_out()
    sign_in("dave", PASSWORD)
    page.goto(f"/approvals/{instance.pk}/")
    page.get_by_role("button", name="Approve these values").click()
    expect(page.locator("#approval-status")).to_contain_text("Approved: every approval")
    instance.refresh_from_db()
    assert instance.status == "ready"
    screenshot(f"quorum-ready-{width}")


def test_a_rejection_needs_its_reason_and_cancels_the_action(
    page: Page, sign_in: SignIn, alice: User
) -> None:
    group = Group.objects.create(name="treasury")
    _approver("bob", group)
    instance = _waiting_for_approval(alice, group, required=1)
    sign_in("bob", PASSWORD)
    page.goto(f"/approvals/{instance.pk}/")
    page.get_by_label("Reason for rejecting").fill("not in this quarter's budget")
    page.get_by_role("button", name="Reject and cancel the action").click()
    expect(page.locator("#approval-status")).to_contain_text("Cancelled")
    expect(page.locator("#approval-status")).to_contain_text("not in this quarter's budget")
    instance.refresh_from_db()
    assert instance.status == "cancelled"
