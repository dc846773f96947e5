"""The console as a person meets it, in Chromium: refusals in place (DEBUG on and off), the
finished state, a veto after the action was cleared, phones, Back and Forward, plain words.

Screenshots of every page at 1280 and 390 px go to artifacts/screenshots/ for a person to look
at; every page passes axe without a serious or critical violation.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from playwright.sync_api import Page, expect

from beliefs.models import Prompt, ProposalValidation, TaskInstance
from beliefs.services.approvals import instance_approve
from beliefs.services.planning import instance_plan
from demo.data import seed_demo
from demo.proposals import seed_demo_proposals
from tests.browser import scenarios
from tests.browser.conftest import SCREENSHOTS, enabled_after, shoot
from tests.browser.test_enduser import acknowledge_changes, assert_accessible, assumption, card
from tests.builders import confirm_or_answer, open_instance, ticks
from tests.conftest import PASSWORD

SignIn = Callable[[str, str], None]
Shot = Callable[[str], Any]
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
PANEL = "rgb(246, 248, 250)"  # the header's background: proof that the stylesheet still applies


@pytest.fixture(params=[True, False], ids=["debug", "production"])
def debug(request: pytest.FixtureRequest, settings: Any) -> Iterator[bool]:  # noqa: ANN401
    """DEBUG on (as `make run` serves the pages) and off (as production does)."""
    settings.DEBUG = request.param
    yield request.param


def assert_still_the_page(page: Page, url: str, debug: bool) -> None:
    """The refusal was swapped into its place: same document, same address, styles intact."""
    assert page.url == url
    if debug:
        expect(page.locator("html")).to_have_attribute("data-debug", "")
    else:
        expect(page.locator("html")).not_to_have_attribute("data-debug", "")
    assert page.evaluate("window.__sameDocument") is True
    header = page.locator(".site-header")
    expect(header).to_be_visible()
    assert header.evaluate("e => getComputedStyle(e).backgroundColor") == PANEL


def test_refusals_swap_into_their_card_and_the_buttons_work_again(
    page: Page, sign_in: SignIn, alice: User, debug: bool, fast_confirm: int, screenshot: Shot
) -> None:
    instance = scenarios.vendor(alice)
    sign_in("alice", PASSWORD)
    page.goto(f"/instances/{instance.pk}/")
    url = page.url
    page.evaluate("window.__sameDocument = true")

    # A value that does not fit.
    amount = card(page, "Amount")
    amount.get_by_label("The value to use").fill("lots")
    use_mine = amount.get_by_role("button", name="Use this value instead")
    expect(use_mine).to_be_enabled()
    use_mine.click()
    expect(amount.get_by_role("alert")).to_contain_text("Enter a number")
    expect(amount.get_by_role("alert")).not_to_contain_text("value:")
    assert_still_the_page(page, url, debug)
    expect(amount.get_by_label("The value to use")).to_have_value("lots")
    expect(amount.get_by_label("The value to use")).to_have_attribute("aria-invalid", "true")
    expect(use_mine).to_be_enabled()  # the card works again
    screenshot(f"refusal-in-place-{'debug' if debug else 'production'}")

    # Confirm after changing the value.
    recipient = card(page, "Recipient account")
    recipient.get_by_label("The value to use").fill("NL00BANK0000000000")
    acknowledge_changes(recipient)
    confirm = recipient.get_by_role("button", name="Confirm")
    expect(confirm).to_be_enabled()
    confirm.click()
    expect(recipient.get_by_role("alert")).to_contain_text("You changed the value")
    assert_still_the_page(page, url, debug)
    expect(recipient.get_by_role("button", name="Confirm")).to_be_enabled()

    # An over-long reason (the input's limit removed, as a script or an old page could).
    reference = assumption(page, "Payment reference")
    reason = reference.get_by_label("Reason for a veto (optional)")
    expect(reason).to_have_attribute("maxlength", "2000")
    reason.evaluate("(e) => { e.removeAttribute('maxlength'); e.value = 'x'.repeat(2001); }")
    reference.get_by_role("button", name="Veto").click()
    expect(reference.get_by_role("alert")).to_contain_text("Use at most 2,000 characters")
    assert_still_the_page(page, url, debug)

    # The normal second step of raising a permission level.
    scope = card(page, "Approval scope")
    scope.get_by_label("Your answer").fill("unlimited")
    scope.get_by_role("button", name="Answer").click()
    # Said as the next step (a status, not a red alert).
    step = scope.locator(".message-step")
    expect(step).to_contain_text("One more step.")
    expect(step).to_contain_text("type it a second time")
    expect(scope.get_by_role("alert")).to_have_count(0)
    assert_still_the_page(page, url, debug)
    scope.get_by_label("Type the new value again").fill("unlimited")
    scope.get_by_role("button", name="Answer").click()
    expect(scope).to_contain_text("Answered: unlimited")
    assert_still_the_page(page, url, debug)


def test_a_classifiers_refusal_swaps_into_its_row(
    page: Page, sign_in: SignIn, carol: User, alice: User, debug: bool
) -> None:
    scenarios.vendor(alice)
    sign_in("carol", PASSWORD)
    page.goto("/classify/payments.vendor/")
    url = page.url
    page.evaluate("window.__sameDocument = true")
    row = page.locator('tr[data-slot="memo"]')
    row.get_by_label("Own risk class of memo").select_option("reversible")
    expect(row).to_contain_text("If you save this")
    row.get_by_role("button", name="Save memo").click()
    row = page.locator('tr[data-slot="memo"]')
    expect(row).to_contain_text("Give a reason for this change")
    assert_still_the_page(page, url, debug)
    row.get_by_label("Reason for changing memo").fill("a memo can be corrected")
    row.get_by_role("button", name="Save memo").click()
    expect(page.locator(".classify-message-success")).to_contain_text("memo")


def test_the_last_answer_brings_the_outcome_into_view_and_focus(
    page: Page, sign_in: SignIn, alice: User, fast_confirm: int, screenshot: Shot
) -> None:
    instance = scenarios.vendor(alice)
    page.set_viewport_size(PHONE)
    sign_in("alice", PASSWORD)
    page.goto(f"/instances/{instance.pk}/")
    for label in ("Amount", "Recipient account"):
        acknowledge_changes(card(page, label))
        confirm = card(page, label).get_by_role("button", name="Confirm")
        expect(confirm).to_be_enabled()
        confirm.click()
        expect(card(page, label)).to_contain_text("Confirmed")
    scope = card(page, "Approval scope")
    scope.get_by_label("Your answer").fill("single")
    scope.get_by_role("button", name="Answer").click()

    banner = page.locator("#instance-banner")
    expect(banner).to_contain_text("This action may proceed")
    expect(banner).to_be_focused()
    expect(banner).to_be_in_viewport()
    shoot(page, SCREENSHOTS / "finished-390-first-screen.png", full_page=False)
    screenshot("finished-390")

    # A ready page has no form that cannot apply: only the vetoes of what was used unasked.
    expect(page.get_by_role("heading", name="Needs your answer")).to_have_count(0)
    expect(page.get_by_role("heading", name="Your answers")).to_be_visible()
    actions = page.locator("main form button[name=action]").evaluate_all(
        "buttons => buttons.map(b => b.value)"
    )
    assert actions and set(actions) == {"veto"}
    expect(card(page, "Amount")).to_contain_text("By alice on")
    page.reload()
    actions = page.locator("main form button[name=action]").evaluate_all(
        "buttons => buttons.map(b => b.value)"
    )
    assert set(actions) == {"veto"}


def test_a_veto_after_the_action_was_cleared_says_what_it_does(
    page: Page, sign_in: SignIn, alice: User, screenshot: Shot
) -> None:
    instance = scenarios.vendor(alice)
    confirm_or_answer(instance, alice, "single")
    sign_in("alice", PASSWORD)
    page.goto(f"/instances/{instance.pk}/")
    reference = assumption(page, "Payment reference")
    expect(reference).to_contain_text("may already have been carried out with this value")
    expect(reference).to_contain_text("tells the agent that this value was wrong")
    expect(reference).to_contain_text("asks you for the right value")
    screenshot("ready-before-veto")

    reference.get_by_label("Reason for a veto (optional)").fill("wrong invoice")
    reference.get_by_role("button", name="Veto").click()
    reference = assumption(page, "Payment reference")
    expect(reference).to_contain_text("You vetoed this after the action was cleared")
    expect(reference).to_contain_text("will not be used again")
    question = card(page, "Payment reference")
    expect(question).to_be_focused()
    expect(question).to_contain_text("You vetoed the earlier value")
    expect(page.locator("#instance-banner")).to_contain_text("1 answer needed")
    screenshot("ready-after-veto")
    instance.refresh_from_db()
    assert instance.status == "awaiting_user"


def test_the_world_diff_fits_a_phone_with_the_new_value_in_view(
    page: Page, sign_in: SignIn, alice: User, screenshot: Shot
) -> None:
    instance = scenarios.vendor(alice)
    page.set_viewport_size(PHONE)
    sign_in("alice", PASSWORD)
    page.goto(f"/instances/{instance.pk}/")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    changed = card(page, "Recipient account").locator("tr.changed").first
    expect(changed).to_contain_text("bank")  # changes first
    now = changed.locator("td[data-label='Now']")
    expect(now).to_contain_text("Revolut")
    box = now.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
    screenshot("diff-390")


def test_back_and_forward_show_the_current_state(
    page: Page, sign_in: SignIn, alice: User, fast_confirm: int
) -> None:
    instance = scenarios.vendor(alice)
    sign_in("alice", PASSWORD)
    page.locator(f"#inbox-link-{instance.pk}").click()
    confirm = card(page, "Amount").get_by_role("button", name="Confirm")
    expect(confirm).to_be_enabled()
    confirm.click()
    expect(card(page, "Amount")).to_contain_text("Confirmed: 1250")

    page.go_back()
    expect(page.locator(f"#inbox-link-{instance.pk}")).to_be_visible()
    page.go_forward()
    expect(card(page, "Amount")).to_contain_text("Confirmed: 1250")
    expect(card(page, "Amount").get_by_role("button", name="Confirm")).to_have_count(0)
    expect(page.locator("#instance-banner")).to_contain_text("2 answers needed")

    page.get_by_role("link", name="← Inbox").click()
    page.go_back()
    expect(card(page, "Amount")).to_contain_text("Confirmed: 1250")


def test_inputs_fit_the_value(
    page: Page, sign_in: SignIn, alice: User, fast_confirm: int, screenshot: Shot
) -> None:
    instance = scenarios.vendor(alice)
    sign_in("alice", PASSWORD)
    page.goto(f"/instances/{instance.pk}/")
    due = assumption(page, "Due date")
    due.get_by_role("button", name="Veto").click()
    question = card(page, "Due date")
    field = question.get_by_label("Your answer")
    expect(field).to_have_attribute("type", "date")  # picked, not typed in a format to guess
    field.fill("2026-02-02")
    question.get_by_role("button", name="Answer").click()
    expect(question).to_contain_text("Answered: 2026-02-02")

    scope = card(page, "Approval scope")
    scope.get_by_label("Your answer").fill("  Single ")
    scope.get_by_role("button", name="Answer").click()
    expect(scope).to_contain_text("Answered: single")  # taken as the listed choice

    # "Use this value instead" waits like Confirm on an irreversible card.
    page.goto(f"/instances/{instance.pk}/")
    use_mine = card(page, "Amount").get_by_role("button", name="Use this value instead")
    expect(use_mine).to_be_enabled(timeout=fast_confirm + 10_000)
    # Disabled when served, and for the whole delay (however long the test took to look).
    assert enabled_after(page, "Use this value instead for Amount") >= fast_confirm


def test_a_long_value_is_clamped_and_can_be_read_in_full(
    page: Page, sign_in: SignIn, alice: User, screenshot: Shot
) -> None:
    scenarios.vendor_payment()
    long_reference = ("INV " + " ".join(["reference"] * 180))[:1742]
    assert len(long_reference) == 1742
    instance = open_instance(
        task_class_key="payments.vendor",
        principal="alice",
        beliefs=[{"slot": "reference", "value": long_reference, "source": "tool", "turn": 1}],
        actor=scenarios.RUNTIME,
    )
    instance_plan(instance=instance, actor=scenarios.RUNTIME)
    sign_in("alice", PASSWORD)
    page.goto(f"/instances/{instance.pk}/")
    line = assumption(page, "Payment reference")
    box = line.bounding_box()
    assert box is not None and box["height"] < 400, box
    show_all = line.get_by_text("Show all 1,742 characters")
    expect(show_all).to_be_visible()
    screenshot("long-value-clamped")
    show_all.click()
    expect(line.locator(".long-full .value")).to_be_visible()
    expect(line.locator(".long-preview")).to_be_hidden()


def test_sign_in_lands_on_work_and_a_wrong_password_focuses_the_password(
    page: Page, sign_out: Callable[[], None], carol: User, rita: User
) -> None:
    page.goto("/")
    page.get_by_label("Username").fill("carol")
    page.get_by_label("Password").fill("wrong")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_contain_text("correct username and password")
    expect(page.get_by_label("Password")).to_be_focused()
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(re.compile(r"/classify/$"))
    sign_out()
    page.get_by_label("Username").fill("rita")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(re.compile(r"/proposals/$"))


# --- every page: plain words for end users, screenshots at both widths, axe ------------------

FORBIDDEN = [
    (re.compile(r"DESIGN|§"), "a design-document reference"),
    (re.compile(r"\bbeliefs?\b", re.I), "'belief'"),
    (re.compile(r"\bslots?\b", re.I), "'slot'"),
    (re.compile(r"\b[a-z]+(?:_[a-z0-9]+)+\b"), "a Python name"),
    (re.compile(r"\w+\.\w+\(|\(\)"), "a function call"),
    (re.compile(r"\b[RTSV]\d\b"), "a rule code"),
    (re.compile(r"inherited from decision|monotonic|unclassified", re.I), "classifier jargon"),
    (re.compile(r"\bvalue:"), "a field name"),
]

# Everything a person reads, values excepted (a value is data, shown as it is).
VISIBLE_WORDS = """() => {
  const copy = document.body.cloneNode(true);
  copy.querySelectorAll('.value, .long-value, script, noscript, style').forEach(e => e.remove());
  return copy.textContent.replace(/\\s+/g, ' ');
}"""


def check_plain_words(page: Page, name: str) -> None:
    text = page.evaluate(VISIBLE_WORDS)
    found = [(what, m.group(0)) for pattern, what in FORBIDDEN for m in pattern.finditer(text)]
    assert found == [], f"{name}: {found}"


def capture(page: Page, screenshot: Shot, name: str, *, axe_at_both: bool = False) -> None:
    """A screenshot at 1280 and at 390 px; axe at 1280 (and at 390 when asked); the page must
    not scroll sideways on a phone."""
    page.set_viewport_size(DESKTOP)
    screenshot(f"page-{name}-1280")
    assert_accessible(page)
    page.set_viewport_size(PHONE)
    width = page.evaluate("document.documentElement.scrollWidth")
    wide = page.evaluate(
        "w => Array.from(document.querySelectorAll('main *')).filter(e => "
        "e.getBoundingClientRect().right > w + 1 && !e.closest('.table-scroll'))"
        ".slice(0, 5).map(e => e.tagName + '.' + e.className)",
        PHONE["width"],
    )
    assert width <= PHONE["width"], f"{name} scrolls sideways at 390 px: {width}px {wide}"
    screenshot(f"page-{name}-390")
    # What a phone shows first, without scrolling: easier to look at than a long full page.
    shoot(page, SCREENSHOTS / f"page-{name}-390-first-screen.png", full_page=False)
    if axe_at_both:
        assert_accessible(page)
    page.set_viewport_size(DESKTOP)


def end_user_page(page: Page, screenshot: Shot, name: str, path: str | None = None) -> None:
    if path is not None:
        page.goto(path)
    check_plain_words(page, name)
    capture(page, screenshot, name, axe_at_both=True)


def _speak_plainly(page: Page, screenshot: Shot, *pages: tuple[str, str]) -> None:
    """Each staff page (name, path) names no design document, section or function call, and
    passes `capture` at both widths."""
    for name, path in pages:
        page.goto(path)
        text = page.evaluate(VISIBLE_WORDS)
        assert "DESIGN" not in text and "§" not in text and "()" not in text, name
        capture(page, screenshot, name)


def test_every_end_user_page_of_the_demo_speaks_plainly(
    page: Page, screenshot: Shot, fast_confirm: int
) -> None:
    seed_demo()
    alice = User.objects.get(username="alice")
    waiting = {
        i.task_class.key: i
        for i in TaskInstance.objects.filter(principal=alice, status="awaiting_user")
    }
    page.goto("/accounts/login/")
    end_user_page(page, screenshot, "sign-in")
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill("wrong")
    page.get_by_role("button", name="Sign in").click()
    # The refusal is a new page: read it once it has arrived, not the one being left.
    expect(page.locator("#sign-in-error")).to_be_visible()
    end_user_page(page, screenshot, "sign-in-refused")
    page.get_by_label("Password").fill("alice-demo-pass")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Inbox")).to_be_visible()
    end_user_page(page, screenshot, "inbox")
    for key, instance in waiting.items():
        end_user_page(page, screenshot, f"instance-{key}", f"/instances/{instance.pk}/")

    # The transfer: a veto, a refused answer, then everything answered: ready.
    transfer = waiting["payments.transfer"]
    page.goto(f"/instances/{transfer.pk}/")
    assumption(page, "Execution date").get_by_role("button", name="Veto").click()
    question = card(page, "Execution date")
    expect(question).to_be_focused()
    question.get_by_role("button", name="Answer").click()  # no date picked
    expect(question.get_by_role("alert")).to_contain_text("Enter a value.")
    end_user_page(page, screenshot, "instance-vetoed-and-refused")
    question.get_by_label("Your answer").fill("2026-12-01")
    question.get_by_role("button", name="Answer").click()
    expect(question).to_contain_text("Answered: 2026-12-01")
    for prompt in Prompt.objects.filter(instance=transfer, state="open", route="CONFIRM"):
        box = page.locator(f"#prompt-{prompt.pk}")
        acknowledge_changes(box)
        confirm = box.get_by_role("button", name="Confirm")
        expect(confirm).to_be_enabled()
        confirm.click()
        # One answer at a time: the test database (SQLite in memory, shared cache) cannot
        # queue two writers the way the file database of `make run` does.
        expect(box).to_contain_text("Confirmed")
        # ... and the page settled: the live read after an answer brings the whole view, and
        # a card it rebuilds waits again for its reading delay (a click before then is lost).
        expect(page.locator("#instance-live")).not_to_have_attribute("data-live-digest", "")
    # The demo's transfer needs two of the treasury approvers: it waits for them, and is
    # ready once bob and dave have approved.
    expect(page.locator("#instance-banner")).to_contain_text("waiting for the approvers")
    end_user_page(page, screenshot, "instance-awaiting-approval")
    transfer.refresh_from_db()
    for approver in ("bob", "dave"):
        instance_approve(
            instance_id=transfer.pk,
            user=User.objects.get(username=approver),
            bindings_digest=transfer.bindings_digest,
            worlds_digest=transfer.worlds_digest,
            acknowledged=ticks(transfer),
        )
    page.goto(f"/instances/{transfer.pk}/")
    expect(page.locator("#instance-banner")).to_contain_text("This action may proceed")
    end_user_page(page, screenshot, "instance-ready")

    # The shipping: rejected, so cancelled.
    shipping = waiting["commerce.ship_order"]
    page.goto(f"/instances/{shipping.pk}/")
    rejectable = page.locator("article.card").first
    rejectable.locator("summary").click()
    rejectable.get_by_label(re.compile("^Reason")).fill("not now")
    rejectable.get_by_role("button", name=re.compile("^Reject")).click()
    expect(page.locator("#instance-banner")).to_contain_text("Cancelled")
    expect(page.locator("#instance-banner")).to_be_focused()
    end_user_page(page, screenshot, "instance-cancelled")

    # The contract: it waited too long, so expired.
    contract = waiting["legal.sign_contract"]
    Prompt.objects.filter(instance=contract).update(
        expires_at=timezone.now() - timedelta(minutes=1)
    )
    end_user_page(page, screenshot, "instance-expired", f"/instances/{contract.pk}/")
    expect(page.locator("#instance-banner")).to_contain_text("Expired")
    assert page.locator("main form").count() == 0

    end_user_page(page, screenshot, "inbox-with-finished", "/")
    end_user_page(page, screenshot, "not-found", "/instances/00000000-0000-0000-0000-000000000000/")


def test_every_classifier_and_reviewer_page_fits_both_widths(
    page: Page, sign_in: SignIn, sign_out: Callable[[], None], screenshot: Shot
) -> None:
    seed_demo()
    seed_demo_proposals()
    sign_in("carol", "carol-demo-pass")
    _speak_plainly(
        page,
        screenshot,
        ("classify", "/classify/"),
        ("classify-task-class", "/classify/payments.transfer/"),
        ("routing-matrix", "/classify/matrix/"),
        ("activity", "/activity/"),
        ("insights", "/insights/"),
        ("glossary", "/glossary/"),
    )
    # Activity at 1280 px: timestamps on one line, no word broken in the middle.
    page.goto("/activity/")
    heights = page.locator(".activity-table time").evaluate_all(
        "ts => ts.map(t => t.getClientRects().length)"
    )
    assert heights and max(heights) == 1, heights
    broken = page.evaluate(
        """() => {
      const out = [];
      const walker = document.createTreeWalker(
        document.querySelector('.activity-table tbody'), NodeFilter.SHOW_TEXT);
      while (walker.nextNode()) {
        const node = walker.currentNode;
        if (!node.parentElement.checkVisibility()) continue;  // e.g. inside a closed <details>
        const re = /[^\\s-]+/g; let m;  // a break after a hyphen is a fair one
        while ((m = re.exec(node.data)) !== null) {
          const range = document.createRange();
          range.setStart(node, m.index); range.setEnd(node, m.index + m[0].length);
          const tops = new Set(Array.from(range.getClientRects()).map(r => Math.round(r.top)));
          if (tops.size > 1 && m[0].length < 30) out.push(m[0]);
        }
      }
      return out;
    }"""
    )
    assert broken == [], broken

    sign_out()
    sign_in("rita", "rita-demo-pass")
    detail = ProposalValidation.objects.order_by("pk").first()
    _speak_plainly(
        page,
        screenshot,
        ("proposals", "/proposals/"),
        ("proposal-detail", f"/proposals/{detail.pk}/"),
        ("proposal-stats", "/proposals/stats/"),
    )
    # On a phone the list keeps its verdict (and every other column) in view.
    page.goto("/proposals/")
    page.set_viewport_size(PHONE)
    verdict = page.locator(".proposal-table td[data-label='Verdict']").first
    box = verdict.bounding_box()
    assert box is not None and box["x"] + box["width"] <= PHONE["width"]
