"""The end user's console in real Chromium: sign in, inbox, every kind of card, 409, escaping.

The `page` fixture fails a test on any JavaScript dialog, CSP violation or page error, so every
test here also proves that nothing injected ran and that the CSP held.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, timedelta
from typing import Any

from axe_playwright_python.sync_playwright import Axe
from django.contrib.auth.models import User
from playwright.sync_api import Page, expect

from beliefs.models import Prompt, TaskInstance
from demo.data import SCENARIOS, seed_demo
from tests.browser import scenarios
from tests.browser.conftest import enabled_after
from tests.builders import set_world
from tests.conftest import PASSWORD

SignIn = Callable[[str, str], None]


def card(page: Page, slot_label: str) -> Any:  # noqa: ANN401
    """The open card (article) whose heading names the slot."""
    return page.locator("article.card").filter(
        has=page.get_by_role("heading", name=re.compile(rf": {re.escape(slot_label)}$"))
    )


def acknowledge_changes(box: Any) -> None:  # noqa: ANN401
    """Tick every changed detail of a card, as a person who read them does:
    an irreversible confirm of a changed world takes nothing less."""
    ticks = box.locator("input[name=acknowledged]")
    for index in range(ticks.count()):
        ticks.nth(index).check()


def assumption(page: Page, slot_label: str) -> Any:  # noqa: ANN401
    return page.locator("div.assumption").filter(
        has=page.locator(".assumption-label", has_text=slot_label)
    )


def assert_accessible(page: Page) -> None:
    results = Axe().run(page)
    serious = [
        (v["id"], v["impact"], [n["target"] for n in v["nodes"]])
        for v in results.response["violations"]
        if v["impact"] in ("serious", "critical")
    ]
    assert serious == []


def test_it_completes_a_run_2_instance_in_the_browser(
    page: Page,
    sign_in: SignIn,
    screenshot: Callable[[str], Any],
    alice: User,
    fast_confirm: int,
) -> None:
    instance = scenarios.vendor(alice)
    sign_in("alice", PASSWORD)

    # The inbox.
    expect(page).to_have_url(re.compile(r"/$"))
    expect(page.get_by_text("Signed in as")).to_contain_text("alice")
    row = page.locator(".inbox-item").filter(has_text="Vendor payment")
    expect(row).to_contain_text("3 answers needed")
    expect(row).to_contain_text("Amount 1250")  # what is at stake: the decisive values
    expect(row.locator(".runtime")).to_be_visible()  # who asks
    screenshot("inbox")
    assert_accessible(page)

    # The instance page.
    row.get_by_role("link", name=re.compile("Vendor payment")).click()
    expect(page).to_have_url(re.compile(rf"/instances/{instance.pk}/$"))
    expect(page.locator("#restatement")).to_contain_text(
        "Send payment: Amount 1250, Recipient account NL91ABNA0417164300."
    )
    expect(page.locator("#instance-banner")).to_contain_text("3 answers needed")
    screenshot("instance")
    assert_accessible(page)

    # Veto an assumption: the question appears in its place; answer it.
    due = assumption(page, "Due date")
    due.get_by_label("Reason for a veto (optional)").fill("the invoice moved")
    due.get_by_role("button", name="Veto").click()
    expect(due).to_contain_text("Vetoed. Reason: the invoice moved")
    expect(page.locator("#instance-banner")).to_contain_text("4 answers needed")
    question = card(page, "Due date")
    expect(question).to_be_focused()
    question.get_by_label("Your answer").fill("2025-07-15")
    question.get_by_role("button", name="Answer").click()
    expect(question).to_contain_text("Answered: 2025-07-15")

    # Edit a CONFIRM card.
    amount = card(page, "Amount")
    amount.get_by_label("The value to use").fill("1300")
    amount.get_by_label("Type the new value again").fill("1300")  # a change is typed twice
    use_mine = amount.get_by_role("button", name="Use this value instead")
    expect(use_mine).to_be_enabled()  # the same wait as Confirm
    use_mine.click()
    expect(amount).to_contain_text("Edited and confirmed: 1300")
    expect(page.locator("#restatement")).to_contain_text("Amount 1300")

    # Confirm a CONFIRM card: the button waits out the anti-fatigue delay first.
    recipient = card(page, "Recipient account")
    expect(recipient.locator("tr.changed")).to_contain_text("changed")
    confirm = recipient.get_by_role("button", name="Confirm")
    expect(confirm).to_be_disabled()  # until the changed bank is acknowledged
    acknowledge_changes(recipient)
    expect(confirm).to_be_enabled()
    confirm.click()
    expect(recipient).to_contain_text("Confirmed: NL91ABNA0417164300")

    # Retype a monotonic scope: an escalation must be typed twice, and a mismatch is refused.
    scope = card(page, "Approval scope")
    expect(scope).to_contain_text("Earlier permission level, for reference only")
    expect(scope.get_by_label("Your answer")).to_have_value("")
    scope.get_by_label("Your answer").fill("unlimited")
    scope.get_by_role("button", name="Answer").click()
    expect(scope.locator(".message-step")).to_contain_text("type it a second time")
    scope.get_by_label("Type the new value again").fill("recurring")
    scope.get_by_role("button", name="Answer").click()
    expect(scope.get_by_role("alert")).to_contain_text("The two values do not match")
    scope.get_by_label("Type the new value again").fill("unlimited")
    scope.get_by_role("button", name="Answer").click()
    expect(scope).to_contain_text("Answered: unlimited")

    # Nothing blocks any more: the action may proceed, with its digest.
    banner = page.locator("#instance-banner")
    expect(banner).to_contain_text("This action may proceed")
    instance.refresh_from_db()
    assert instance.status == "ready"
    expect(banner.locator(".digest")).to_have_text(instance.bindings_digest)
    expect(banner).to_contain_text("unlimited")
    screenshot("instance-ready")
    assert_accessible(page)


def test_it_starts_an_irreversible_confirm_disabled(
    page: Page, sign_in: SignIn, alice: User, settings: Any
) -> None:
    settings.CONSOLE_CONFIRM_DELAY_MS = 1500
    instance = scenarios.vendor(alice)
    sign_in("alice", PASSWORD)
    page.goto(f"/instances/{instance.pk}/")
    confirm = card(page, "Amount").get_by_role("button", name="Confirm")
    expect(confirm).to_have_attribute("data-enable-after-ms", "1500")
    expect(confirm).to_be_enabled(timeout=10_000)
    # Disabled when served, and for the whole delay (however long the test took to look).
    assert enabled_after(page, "Confirm Amount") >= 1500


def test_it_shows_the_409_message_with_the_fresh_card_after_a_world_change(
    page: Page, sign_in: SignIn, alice: User, fast_confirm: int
) -> None:
    instance = scenarios.vendor(alice)
    sign_in("alice", PASSWORD)
    # The page would show the change live (tests/browser/test_live.py): hold its live answers
    # back, as when the click crosses the change, to see the server refuse the stale answer.
    page.route(re.compile(r"/live/"), lambda route: route.abort())
    page.goto(f"/instances/{instance.pk}/")
    recipient = card(page, "Recipient account")
    acknowledge_changes(recipient)
    confirm = recipient.get_by_role("button", name="Confirm")
    expect(confirm).to_be_enabled()

    # The runtime changes the world while the page is open.
    world = {**scenarios.VENDOR_WORLD_RUN_2}
    world["recipient_account"] = {**world["recipient_account"], "holder": "Evil Ltd"}
    set_world(instance=instance, world=world, actor=scenarios.RUNTIME)

    confirm.click()
    expect(recipient.get_by_role("alert")).to_contain_text(
        "Not recorded. What you answered has changed since you saw it"
    )
    expect(recipient.locator("tr.changed").filter(has_text="holder")).to_contain_text("Evil Ltd")
    # The fresh card can be answered; its confirm waits out the delay again, and the new
    # change is acknowledged as well.
    acknowledge_changes(recipient)
    fresh = recipient.get_by_role("button", name="Confirm")
    expect(fresh).to_be_enabled()
    fresh.click()
    expect(recipient).to_contain_text("Confirmed: NL91ABNA0417164300")


def test_it_shows_hostile_values_as_text_and_runs_none_of_them(
    page: Page,
    sign_in: SignIn,
    screenshot: Callable[[str], Any],
    alice: User,
    fast_confirm: int,
) -> None:
    instance = scenarios.hostile(alice)
    sign_in("alice", PASSWORD)
    expect(page.locator("#inbox-rows")).to_contain_text(f"Hostile {scenarios.HOSTILE_SCRIPT}")
    page.goto(f"/instances/{instance.pk}/")

    payee = card(page, f"Payee {scenarios.HOSTILE_IMG}")
    expect(payee.locator(".facts .value")).to_have_text(scenarios.HOSTILE_SCRIPT)
    link = card(page, "Link")
    expect(link.locator(".facts .value")).to_have_text(scenarios.HOSTILE_JS_URL)
    assert page.locator("a[href^='javascript:']").count() == 0
    assert page.locator("main img, main script").count() == 0
    attachment = card(page, "Attachment")
    expect(attachment.locator(".facts .value")).to_have_text("invoice⟨U+202E⟩fdp.exe")
    expect(attachment.locator(".flag")).to_contain_text("Warning: hidden characters")
    expect(page.locator("#restatement")).to_contain_text(f"Send {scenarios.HOSTILE_JS_URL}")
    screenshot("instance-hostile")

    # Answers swapped in by htmx stay inert too.
    link.get_by_label("The value to use").fill("<img src=x onerror=alert('typed')>")
    link.get_by_label("Type the new value again").fill("<img src=x onerror=alert('typed')>")
    use_mine = link.get_by_role("button", name="Use this value instead")
    expect(use_mine).to_be_enabled()
    use_mine.click()
    expect(link).to_contain_text("Edited and confirmed: <img src=x onerror=alert('typed')>")
    assert page.locator("main img").count() == 0
    page.wait_for_timeout(200)  # give an injected handler every chance to fire


def test_it_is_readable_at_phone_width(
    page: Page, sign_in: SignIn, screenshot: Callable[[str], Any], alice: User
) -> None:
    instance = scenarios.vendor(alice)
    page.set_viewport_size({"width": 375, "height": 800})
    sign_in("alice", PASSWORD)
    for path, name in (("/", "inbox-375"), (f"/instances/{instance.pk}/", "instance-375")):
        page.goto(path)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 375, f"{path} scrolls sideways: {width}px"
        screenshot(name)


def test_a_waiting_confirm_keeps_its_place_in_the_tab_order_and_ignores_a_press(
    page: Page, sign_in: SignIn, alice: User, settings: Any
) -> None:
    """The reading delay does not take Confirm out of the tab order (a fast Tab would pass it
    by): it is focusable, announced as not yet available, and a press before the delay is over
    does nothing; once it is over, the same press confirms."""
    settings.CONSOLE_CONFIRM_DELAY_MS = 4000
    instance = scenarios.vendor(alice)
    sent: list[str] = []
    page.on("request", lambda r: sent.append(r.url) if r.method == "POST" else None)
    sign_in("alice", PASSWORD)
    page.goto(f"/instances/{instance.pk}/")
    sent.clear()
    amount = card(page, "Amount")
    confirm = amount.get_by_role("button", name="Confirm")
    amount.get_by_label("The value to use").focus()
    page.keyboard.press("Tab")
    expect(confirm).to_be_focused()
    expect(confirm).to_have_attribute("aria-disabled", "true")
    expect(confirm).to_have_accessible_description(re.compile("Not available yet"))
    page.keyboard.press("Enter")
    page.keyboard.press("Space")
    # Both presses came while it still waited.
    assert confirm.get_attribute("aria-disabled") == "true"

    expect(confirm).to_be_enabled(timeout=10_000)
    expect(confirm).not_to_have_attribute("aria-disabled", "true")
    expect(confirm).to_have_accessible_description("")
    expect(confirm).to_be_focused()  # it kept the focus all along
    assert sent == []  # (any request of those presses would have gone by now)
    assert Prompt.objects.get(pk=scenarios.open_prompt(instance, "amount").pk).state == "open"
    page.keyboard.press("Enter")
    expect(card(page, "Amount")).to_contain_text("Confirmed: 1250")


def test_it_is_operable_with_the_keyboard(
    page: Page, sign_in: SignIn, alice: User, fast_confirm: int
) -> None:
    instance = scenarios.vendor(alice)
    sign_in("alice", PASSWORD)
    page.goto(f"/instances/{instance.pk}/")
    reference = assumption(page, "Payment reference")
    reference.get_by_label("Reason for a veto (optional)").focus()
    page.keyboard.type("wrong invoice")
    page.keyboard.press("Tab")
    expect(reference.get_by_role("button", name="Veto")).to_be_focused()
    page.keyboard.press("Enter")
    question = card(page, "Payment reference")
    expect(question).to_be_focused()
    page.keyboard.press("Tab")
    expect(question.get_by_label("Your answer")).to_be_focused()
    page.keyboard.type("INV-2024-002")
    page.keyboard.press("Enter")
    expect(question).to_contain_text("Answered: INV-2024-002")


def test_the_question_a_veto_opened_keeps_the_focus_when_a_live_swap_lands_first(
    page: Page, sign_in: SignIn, alice: User, fast_confirm: int
) -> None:
    """htmx gives the focus an answer asks for when its swap settles, after its request has
    ended, and the live page asks for what changed at that end. Here the settling waits 1.5 s,
    so the live swap (the question shown, now on record) always lands first: the question
    still takes the focus, with its mark."""
    instance = scenarios.vendor(alice)
    sign_in("alice", PASSWORD)
    page.goto(f"/instances/{instance.pk}/")
    page.evaluate("htmx.config.defaultSettleDelay = 1500")
    live = page.locator("[data-live-url]")
    shown = live.get_attribute("data-live-version")
    reference = assumption(page, "Payment reference")
    reference.get_by_role("button", name="Veto").click()
    question = card(page, "Payment reference")
    # The live swap came before the answer's settled: the page shows a newer version.
    expect(live).not_to_have_attribute("data-live-version", shown or "")
    expect(question).to_be_focused()
    expect(question).to_have_attribute("data-focus", "")
    expect(question).to_have_attribute("tabindex", "-1")


def test_it_signs_in_and_out_through_an_accessible_login_page(
    page: Page, sign_in: SignIn, alice: User
) -> None:
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next=/$"))
    assert_accessible(page)
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill("wrong password")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_contain_text("correct username and password")
    sign_in("alice", PASSWORD)
    expect(page.get_by_role("heading", name="Inbox")).to_be_visible()
    expect(page.get_by_text("Nothing is waiting for you")).to_be_visible()
    page.get_by_role("button", name="Sign out").click()
    expect(page).to_have_url(re.compile(r"/accounts/login/$"))


def test_it_refreshes_the_inbox_without_a_reload(page: Page, sign_in: SignIn, alice: User) -> None:
    sign_in("alice", PASSWORD)
    expect(page.get_by_text("Nothing is waiting for you")).to_be_visible()
    page.evaluate("window.__sameDocument = true")
    scenarios.vendor(alice)
    expect(page.locator(".inbox-item")).to_contain_text("Vendor payment", timeout=15000)
    assert page.evaluate("window.__sameDocument") is True  # swapped in, not reloaded


def _typed_answer(prompt: Prompt) -> str:
    """A valid answer for an ASK card of any slot type (the lowest scope: no escalation)."""
    slot = prompt.slot
    if slot.scope_order or slot.choices:
        return str((slot.scope_order or slot.choices)[0])
    return {
        "number": "1",
        "date": (date.today() + timedelta(days=30)).isoformat(),  # some slots take no past date
        "boolean": "yes",
    }.get(slot.value_type, "typed in the demo")


def _choice_label(prompt: Prompt) -> str:
    """The radio button to pick for a question with choices: the first choice, or Yes."""
    slot = prompt.slot
    if slot.value_type == "boolean":
        return "Yes"
    return str((slot.choices or slot.scope_order)[0])


AFTER_ANSWERS = {
    "payments.transfer": ("waiting for the approvers", "awaiting_approval"),
    "legal.sign_contract": ("Waiting for your signature", "awaiting_signature"),
}


def test_it_completes_every_demo_run_2_instance(
    page: Page, sign_in: SignIn, screenshot: Callable[[str], Any], fast_confirm: int
) -> None:
    seed_demo()
    alice = User.objects.get(username="alice")
    waiting = list(
        TaskInstance.objects.filter(principal=alice, status="awaiting_user").order_by("created_at")
    )
    assert len(waiting) == len(SCENARIOS)
    sign_in("alice", "alice-demo-pass")
    for instance in waiting:
        page.goto("/")
        page.locator(f"#inbox-link-{instance.pk}").click()
        screenshot(f"demo-{instance.task_class.key}")
        assert_accessible(page)
        for prompt in Prompt.objects.filter(
            instance=instance, state="open", blocking=True
        ).select_related("slot"):
            box = page.locator(f"#prompt-{prompt.pk}")
            if prompt.route == "CONFIRM":
                acknowledge_changes(box)
                confirm = box.get_by_role("button", name="Confirm")
                expect(confirm).to_be_enabled()
                confirm.click()
                expect(box).to_contain_text("Confirmed")
            elif box.locator("input[type=radio]").count():
                box.get_by_label(_choice_label(prompt)).check()
                box.get_by_role("button", name="Answer").click()
                expect(box).to_contain_text("Answered")
            else:
                box.get_by_label("Your answer").fill(_typed_answer(prompt))
                again = box.get_by_label("Type the new value again")
                if again.count() and again.is_visible():  # it changes an earlier value
                    again.fill(_typed_answer(prompt))
                box.get_by_role("button", name="Answer").click()
                expect(box).to_contain_text("Answered")
        # The demo's guards: the transfer waits for two approvers, the contract for alice's
        # passkey signature; every other action may proceed.
        banner, status = AFTER_ANSWERS.get(
            instance.task_class.key, ("This action may proceed", "ready")
        )
        expect(page.locator("#instance-banner")).to_contain_text(banner)
        instance.refresh_from_db()
        assert instance.status == status
    page.goto("/")
    # Nothing waits for her answer; the inbox says where the rest stands.
    expect(page.get_by_role("heading", name="Waiting for your answer")).to_have_count(0)
    expect(page.get_by_role("heading", name="Waiting for your signature")).to_be_visible()
    expect(page.get_by_role("heading", name="Waiting for approvers")).to_be_visible()
    expect(page.get_by_role("heading", name="Recently finished")).to_be_visible()


def test_it_works_without_javascript(
    browser: Any,  # noqa: ANN401
    live_server: Any,  # noqa: ANN401
    transactional_db: None,
    alice: User,
) -> None:
    instance = scenarios.vendor(alice)
    context = browser.new_context(base_url=live_server.url, java_script_enabled=False)
    page = context.new_page()
    try:
        page.goto("/accounts/login/")
        page.get_by_label("Username").fill("alice")
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(lambda url: "/accounts/login/" not in url)  # signed in
        page.goto(f"/instances/{instance.pk}/")
        amount = card(page, "Amount")
        # The delayed button needs the script; without it a plain Confirm stands in.
        confirm = amount.get_by_role("button", name="Confirm")
        expect(confirm).to_have_count(1)
        expect(confirm).to_be_enabled()
        confirm.click()
        expect(page).to_have_url(re.compile(rf"/instances/{instance.pk}/#prompt-\d+$"))
        expect(page.get_by_role("status")).to_contain_text("Amount: confirmed.")
        expect(card(page, "Amount")).to_contain_text("Confirmed: 1250")
        scope = card(page, "Approval scope")
        scope.get_by_label("Your answer").fill("banana")
        scope.get_by_role("button", name="Answer").click()
        expect(card(page, "Approval scope").get_by_role("alert")).to_contain_text(
            "Choose one of: single, recurring, unlimited"
        )
    finally:
        context.close()
