"""Where each action stands, in real Chromium at 1280 and 390 px (axe at both): the demo's
alice finds every action of hers in the inbox by its state (waiting for her answer, her
signature, her approvers, recently finished); an approver finds what waits for them and sees
on the approvers' page exactly what they approve, and who did what once it is decided; the
sign page shows the value signed once, on one line."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Page, expect

from beliefs.models import Prompt, PromptState, TaskInstance
from beliefs.services.approvals import instance_approve
from beliefs.services.responses import prompt_respond
from demo.data import seed_demo
from tests.browser.test_person_experience import capture
from tests.builders import confirm_or_answer, ticks

SignIn = Callable[[str, str], None]
Shot = Callable[[str], Any]


def _demo_in_every_state() -> dict[str, TaskInstance]:
    """The demo, with alice's transfer answered and approved by bob (one approval missing),
    her contract answered (her signature missing), her shipping rejected (finished); the
    consent and the access grant still wait for her answers."""
    seed_demo()
    alice = User.objects.get(username="alice")
    mine = {
        i.task_class.key: i
        for i in TaskInstance.objects.filter(principal=alice, run_number=2).select_related(
            "task_class"
        )
    }
    for key in ("payments.transfer", "legal.sign_contract"):
        confirm_or_answer(mine[key], alice, "typed in the test")
        mine[key].refresh_from_db()
    transfer = mine["payments.transfer"]
    assert transfer.status == "awaiting_approval"
    assert mine["legal.sign_contract"].status == "awaiting_signature"
    instance_approve(
        instance_id=transfer.pk,
        user=User.objects.get(username="bob"),
        bindings_digest=transfer.bindings_digest,
        worlds_digest=transfer.worlds_digest,
        acknowledged=ticks(transfer),
    )
    shipping = mine["commerce.ship_order"]
    prompt = Prompt.objects.filter(instance=shipping, state=PromptState.OPEN, blocking=True)[0]
    prompt_respond(
        prompt_id=prompt.pk, user=alice, action="reject", version=prompt.version, reason="not now"
    )
    return mine


def test_the_principal_finds_every_action_by_its_state(
    page: Page, sign_in: SignIn, screenshot: Shot
) -> None:
    mine = _demo_in_every_state()
    sign_in("alice", "alice-demo-pass")
    page.goto("/")
    groups = {
        "Waiting for your answer": ("privacy.data_consent", "iam.grant_access"),
        "Waiting for your signature": ("legal.sign_contract",),
        "Waiting for approvers": ("payments.transfer",),
        "Recently finished": ("commerce.ship_order",),
    }
    for title, keys in groups.items():
        section = page.locator("section.inbox-group").filter(
            has=page.get_by_role("heading", name=title)
        )
        expect(section).to_have_count(1)
        for key in keys:
            expect(section.locator(f"a[href='/instances/{mine[key].pk}/']")).to_be_visible()
        expect(section.locator(".runtime").first).to_contain_text("demo-runtime")
    approvers = page.locator("li.inbox-approvers")
    expect(approvers).to_contain_text("1 approval missing")
    expect(approvers).to_contain_text("approved so far by bob")
    expect(approvers).to_contain_text("the approvers’ time runs out in ")
    expect(approvers).to_contain_text("Recipient account (IBAN)")  # what is at stake
    capture(page, screenshot, "journeys-inbox-every-state", axe_at_both=True)

    # Its page says it waits for the approvers, and never that it will not be done.
    page.goto(f"/instances/{mine['payments.transfer'].pk}/")
    expect(page.locator("#instance-banner")).to_contain_text("waiting for the approvers")
    expect(page.locator("main")).not_to_contain_text("will not be done")
    capture(page, screenshot, "journeys-instance-awaiting-approval", axe_at_both=True)


def test_the_sign_page_shows_the_value_signed_once_on_one_line(
    page: Page, sign_in: SignIn, screenshot: Shot
) -> None:
    mine = _demo_in_every_state()
    sign_in("alice", "alice-demo-pass")
    page.goto(f"/instances/{mine['legal.sign_contract'].pk}/sign/")
    row = page.locator("tr[data-slot='counterparty_entity_id']")
    expect(row.locator("del")).to_have_count(0)
    lei = row.locator("td .value").first
    expect(lei).to_have_text("724500VKKSH9QOLTFR81")
    assert lei.evaluate("e => e.getClientRects().length") == 1  # not wrapped mid-identifier
    warning = page.locator("#world-counterparty_entity_id")
    expect(warning).to_contain_text("894500WOTA5040KHGX73")
    expect(page.locator(".lead")).to_contain_text("Sign the contract")
    expect(page.locator("main")).not_to_contain_text("sign_contract")
    capture(page, screenshot, "journeys-sign", axe_at_both=True)
    # "Use the current value" asks again with the registry's value filled in.
    warning.get_by_role("button", name="Use the current value").click()
    expect(page.locator(".messages")).to_contain_text("Asked again with the current value")
    asked = Prompt.objects.get(
        instance=mine["legal.sign_contract"], slot__key="counterparty_entity_id", state="open"
    )
    assert asked.route == "CONFIRM" and asked.prefill == "894500WOTA5040KHGX73"
    expect(page.locator(f"#prompt-{asked.pk}")).to_contain_text("Counterparty entity id (LEI)")


@pytest.mark.parametrize("width", [1280, 390])
def test_an_approver_sees_what_they_approve_and_who_did_what(
    page: Page, sign_in: SignIn, sign_out: Callable[[], None], screenshot: Shot, width: int
) -> None:
    mine = _demo_in_every_state()
    transfer = mine["payments.transfer"]
    page.set_viewport_size({"width": width, "height": 900})
    sign_in("dave", "dave-demo-pass")
    page.goto("/")
    asked = page.locator(f"#approval-link-{transfer.pk}")
    expect(asked).to_be_visible()
    expect(page.locator("li.inbox-approve")).to_contain_text("For alice")
    asked.click()
    block = page.locator("#value-recipient_account")
    expect(block).to_contain_text("NL91ABNA0417164300")
    expect(block).to_contain_text("confirmed by alice")
    chip = block.locator(".value").first
    box = chip.bounding_box()
    assert box is not None and box["height"] < 40, box  # a chip, not a tall empty box
    expect(page.locator("#approvers")).to_contain_text("bob: ✓ approved")
    expect(page.locator("#approvers")).to_contain_text("dave (you): not yet")
    expect(page.locator("main")).to_contain_text("An approval is for exactly these values")
    capture(page, screenshot, f"journeys-approve-{width}", axe_at_both=True)
    page.set_viewport_size({"width": width, "height": 900})
    reject = page.get_by_role("button", name="Reject and cancel the action")
    page.get_by_label("Reason for rejecting").fill("not this month")
    reject.click()
    expect(page.locator("#approval-status")).to_contain_text("Cancelled")
    approvers = page.locator("#approvers")
    expect(approvers).to_contain_text("dave (you): ✕ rejected")
    expect(approvers).to_contain_text("“not this month”")
    expect(approvers).not_to_contain_text("not yet")
    expect(page.locator("main")).not_to_contain_text("for exactly these values")
    capture(page, screenshot, f"journeys-rejected-{width}", axe_at_both=True)


NO_WORD_BROKEN = """sel => {
  const out = [];
  document.querySelectorAll(sel).forEach(e => {
    const range = document.createRange();
    range.selectNodeContents(e);
    const tops = new Set(Array.from(range.getClientRects()).map(r => Math.round(r.top)));
    if (tops.size > 1 && !/\\s/.test(e.textContent.trim())) out.push(e.textContent.trim());
  });
  return out;
}"""


def test_every_role_at_390_px_keeps_its_actions_in_view_and_its_tables_usable(
    page: Page, sign_in: SignIn, sign_out: Callable[[], None], screenshot: Shot
) -> None:
    from beliefs.models import ProposalValidation
    from demo.proposals import seed_demo_proposals

    seed_demo()
    seed_demo_proposals()
    page.set_viewport_size({"width": 390, "height": 844})
    sign_in("carol", "carol-demo-pass")
    page.goto("/classify/")
    classify_link = page.locator(".queue-table a", has_text="Classify").first
    box = classify_link.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, box
    capture(page, screenshot, "journeys-classify", axe_at_both=True)
    page.goto("/classify/matrix/")
    assert page.evaluate(NO_WORD_BROKEN, ".badge") == []  # "irreversible" stays whole
    page.set_viewport_size({"width": 1280, "height": 900})
    assert page.evaluate(NO_WORD_BROKEN, ".badge") == []
    page.goto("/classify/payments.transfer/")
    page.get_by_text("What each risk class means").click()
    expect(page.locator(".risk-legend").first).to_contain_text("Set by a rule of the organisation")
    save = page.get_by_role("button", name="Save approvals of send_transfer")
    expect(save).to_have_class("primary")
    capture(page, screenshot, "journeys-classify-task-class", axe_at_both=True)
    sign_out()

    sign_in("rita", "rita-demo-pass")
    detail = (
        ProposalValidation.objects.filter(findings__isnull=False).order_by("pk").first()
        or ProposalValidation.objects.order_by("pk").first()
    )
    assert detail is not None
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"/proposals/{detail.pk}/")
    # Every table that scrolls sideways is a named region that takes the focus, with a cue.
    regions = page.locator(".table-scroll")
    scrolling = 0
    for index in range(regions.count()):
        region = regions.nth(index)
        scrolls = region.evaluate("e => e.scrollWidth > e.clientWidth + 1")
        hint = region.locator("xpath=preceding-sibling::p[1][@class='scroll-hint']")
        if scrolls:
            scrolling += 1
            assert region.get_attribute("role") == "region"
            assert region.get_attribute("tabindex") == "0"
            assert region.get_attribute("aria-label")
            expect(hint).to_be_visible()
        elif hint.count():
            expect(hint).to_be_hidden()  # a table that fits says nothing
    assert scrolling  # the graph's tables do scroll at 390 px
    messages = page.locator(".findings-table .finding-message")
    if messages.count():
        width = messages.first.bounding_box()
        assert width is not None and width["width"] > 200, width  # readable, not a letter wide
    capture(page, screenshot, "journeys-proposal-detail", axe_at_both=True)
