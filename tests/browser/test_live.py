"""Live pages in real Chromium: an open instance page and the inbox follow changes made
elsewhere (the runtime through the API, another tab of the same person) without a reload."""

from __future__ import annotations

import json
import re
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Page, expect

from beliefs.models import InstanceStatus, TaskInstance
from tests.browser import scenarios
from tests.browser.conftest import EXPECT_TIMEOUT_MS, shoot
from tests.browser.test_enduser import acknowledge_changes, assumption, card
from tests.conftest import PASSWORD, runtime_key_of

SignIn = Callable[[str, str], None]
WIDTHS = [1280, 390]


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
    shoot(page, Path("/tmp") / f"{name}.png")


# Within a second of the change (the live pages' goal), measured in the page itself: the check runs
# at every animation frame, so the time is not rounded up to Playwright's retry intervals.
GOAL_SECONDS = 1.0


def _seconds_until(page: Page, selector: str, text: str, present: bool = True) -> float:
    started = time.monotonic()
    page.wait_for_function(
        """([selector, text, present]) => {
            const found = document.querySelector(selector);
            return present ? found !== null && found.textContent.includes(text) : found === null;
        }""",
        arg=[selector, text, present],
    )
    return time.monotonic() - started


def _confirm_the_amount_in_another_tab(page: Page, instance: TaskInstance, wait_ms: int) -> Page:
    """A second tab of the same person confirms the vendor scenario's Amount; the tab, open."""
    other = page.context.new_page()
    other.goto(f"/instances/{instance.pk}/")
    confirm = card(other, "Amount").get_by_role("button", name="Confirm")
    expect(confirm).to_be_enabled(timeout=wait_ms + EXPECT_TIMEOUT_MS)
    confirm.click()
    expect(card(other, "Amount")).to_contain_text("Confirmed: 1250")
    return other


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
    assert _seconds_until(page, "#instance-banner", "Cancelled") < GOAL_SECONDS

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

    acknowledge_changes(card(other, "Recipient account"))
    confirm = card(other, "Recipient account").get_by_role("button", name="Confirm")
    expect(confirm).to_be_enabled()
    confirm.click()
    expect(card(other, "Recipient account")).to_contain_text("Confirmed: NL91ABNA0417164300")
    assert _seconds_until(page, "#instance-banner", "2 answers needed") < GOAL_SECONDS

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
    expect(typed.get_by_role("button", name="Confirm")).to_be_enabled()
    typed.get_by_label("The value to use").fill("1300")

    other = _confirm_the_amount_in_another_tab(page, instance, fast_confirm)
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


def test_a_live_update_leaves_a_card_it_did_not_change_as_it_is(
    page: Page, sign_in: SignIn, alice: User, fast_confirm: int
) -> None:
    # Rebuilt, a card's buttons would go back to disabled for the reading delay and a click on
    # its way would land on nothing: a person's click lost to a change elsewhere on the page.
    instance = scenarios.vendor(alice)
    sign_in("alice", PASSWORD)
    page.goto(f"/instances/{instance.pk}/")
    untouched = card(page, "Recipient account")
    instead = untouched.get_by_role("button", name="Use this value instead")
    expect(instead).to_be_enabled()
    untouched.evaluate(
        """card => {
            card.dataset.probe = "the element the person sees";
            window.disabledAgain = 0;
            new MutationObserver(changes => changes.forEach(change => {
                const waiting = change.target.getAttribute("aria-disabled") === "true";
                if (change.target.disabled || waiting) { window.disabledAgain++; }
            })).observe(card, {
                subtree: true, attributes: true, attributeFilter: ["disabled", "aria-disabled"]
            });
        }"""
    )

    other = _confirm_the_amount_in_another_tab(page, instance, fast_confirm)

    # The changed card and the banner are fresh; the other card is the same element, never
    # disabled again, and answers at once.
    expect(card(page, "Amount")).to_contain_text("Confirmed: 1250")
    expect(page.locator("#instance-banner")).to_contain_text("2 answers needed")
    expect(untouched).to_have_attribute("data-probe", "the element the person sees")
    assert page.evaluate("window.disabledAgain") == 0
    expect(instead).to_be_enabled(timeout=0)
    acknowledge_changes(untouched)
    untouched.get_by_role("button", name="Confirm").click()
    expect(card(page, "Recipient account")).to_contain_text("Confirmed: NL91ABNA0417164300")
    other.close()


def test_a_click_pressed_as_a_live_update_arrives_still_answers(
    page: Page, sign_in: SignIn, alice: User, fast_confirm: int
) -> None:
    # A live swap moves the cards it keeps: a button moved between the press and the release
    # loses its click (Chromium sends it to what stayed in the page), and the person's answer
    # goes nowhere. The update waits for the release instead.
    instance = scenarios.vendor(alice)
    sign_in("alice", PASSWORD)
    page.goto(f"/instances/{instance.pk}/")
    pressed = card(page, "Recipient account")
    acknowledge_changes(pressed)
    confirm = pressed.get_by_role("button", name="Confirm")
    expect(confirm).to_be_enabled()
    confirm.scroll_into_view_if_needed()
    box = confirm.bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()

    other = _confirm_the_amount_in_another_tab(page, instance, fast_confirm)
    marker = page.locator("#instance-live")
    expect(marker).to_have_attribute("data-live-held", "")
    expect(page.locator("#instance-banner")).not_to_contain_text("2 answers needed")

    page.mouse.up()
    expect(card(page, "Recipient account")).to_contain_text("Confirmed: NL91ABNA0417164300")
    expect(card(page, "Amount")).to_contain_text("Confirmed: 1250")
    expect(page.locator("#instance-banner")).to_contain_text("1 answer needed")
    expect(marker).not_to_have_attribute("data-live-held", "")
    other.close()


def test_a_right_button_held_down_does_not_hold_the_updates(
    page: Page, sign_in: SignIn, alice: User, fast_confirm: int
) -> None:
    # Only the button that clicks holds a live update: a context menu's release may never
    # reach the page, and the page must not stop following changes until the next click.
    instance = scenarios.vendor(alice)
    sign_in("alice", PASSWORD)
    page.goto(f"/instances/{instance.pk}/")
    box = page.locator("#instance-banner").bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + 10, box["y"] + 10)
    page.mouse.down(button="right")

    other = _confirm_the_amount_in_another_tab(page, instance, fast_confirm)
    expect(page.locator("#instance-banner")).to_contain_text("2 answers needed")
    expect(page.locator("#instance-live")).not_to_have_attribute("data-live-held", "")
    page.mouse.up(button="right")
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
    assert _seconds_until(page, f"#inbox-link-{instance.pk}", "", present=False) < GOAL_SECONDS

    expect(page.locator(f"#inbox-link-{instance.pk}")).to_have_count(0)
    expect(page.locator(f"#recent-link-{instance.pk}")).to_contain_text("Vendor payment")
    expect(page.locator("#inbox-rows")).to_contain_text("cancelled")
    other.close()


def test_signing_out_of_a_live_page_lands_on_the_sign_in_form(
    page: Page,
    sign_in: SignIn,
    alice: User,
    live_server: Any,  # noqa: ANN401
) -> None:
    # Signing out ends the session on the server before its answer reaches the page. A live
    # page that asks in between is sent to the sign-in form, and must not go there itself: that
    # would cut the sign-out short (the page would land on a sign-in form that comes back here).
    instance = scenarios.vendor(alice)
    sign_in("alice", PASSWORD)
    page.goto(f"/instances/{instance.pk}/")
    expect(page.locator("#instance-live")).to_have_attribute("data-live-version", re.compile("."))

    held: list[Any] = []

    def hold_the_sign_outs_answer(route: Any) -> None:  # noqa: ANN401
        answer = route.fetch(max_redirects=0)  # the server has ended the session
        # ... and the runtime changes the instance, so the page's open live ask returns and the
        # page asks again, signed out.
        assert _cancel_through_the_api(live_server.url, instance, "Changed plans") == 200
        held.append((route, answer))

    def sent_to_sign_in(response: Any) -> bool:  # noqa: ANN401
        # (the sign-in form, fetched by following the live ask's redirect)
        first = response.request.redirected_from
        return first is not None and "/live/?" in first.url and "/accounts/login/" in response.url

    page.route(re.compile(r"/accounts/logout/$"), hold_the_sign_outs_answer)
    with page.expect_response(sent_to_sign_in):
        # (not waiting for the sign-out's page, which is held until the live ask is answered)
        page.get_by_role("button", name="Sign out").click(no_wait_after=True)
    assert len(held) == 1
    route, answer = held[0]
    route.fulfill(response=answer)

    expect(page).to_have_url(re.compile(r"/accounts/login/$"))
    expect(page.get_by_label("Username")).to_be_visible()
    assert TaskInstance.objects.get(pk=instance.pk).status == InstanceStatus.CANCELLED


# --- the race: a live fragment read before the person's answer, arriving after it -----------


@pytest.mark.parametrize("width", WIDTHS)
def test_an_old_live_fragment_arriving_after_the_answer_changes_nothing(
    page: Page, sign_in: SignIn, alice: User, fast_confirm: int, width: int
) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    instance = scenarios.vendor(alice)
    sign_in("alice", PASSWORD)
    page.goto(f"/instances/{instance.pk}/")
    marker = page.locator("#instance-live")
    shown = int(marker.get_attribute("data-live-version") or "")

    # The fragment a live read made before the answer: the card still open, with its Confirm.
    # (Asked with another digest than the page's, it is labelled above the page's version, as
    # a live read of a change made just before the answer would be.)
    old = page.request.get(
        f"/instances/{instance.pk}/live/?since={shown}&seen=before&wait=0",
        headers={"HX-Request": "true"},
    )
    assert old.status == 200 and int(old.headers["live-version"]) > shown
    old_html = old.text()
    assert 'value="confirm"' in old_html and "3 answers needed" in old_html

    # The page's first live ask after the answer (its marker then has no digest: one card's
    # answer) gets that old fragment; the one after is held until the page has been looked at.
    delivered: list[str] = []
    held: list[Any] = []

    def after_the_answer(url: str) -> bool:
        query = parse_qs(urlsplit(url).query, keep_blank_values=True)
        return "/live/?" in url and query.get("seen") == [""]

    def answer_live(route: Any) -> None:  # noqa: ANN401
        if not delivered and not after_the_answer(route.request.url):
            route.continue_()
        elif not delivered:
            delivered.append(route.request.url)
            route.fulfill(
                status=200,
                headers={"Live-Version": old.headers["live-version"], "Cache-Control": "no-store"},
                content_type="text/html; charset=utf-8",
                body=old_html,
            )
        else:
            held.append(route)

    asks: list[str] = []

    def the_ask_after_the_old_fragment(request: Any) -> bool:  # noqa: ANN401
        if "/live/?" in request.url and (asks or after_the_answer(request.url)):
            asks.append(request.url)
        return len(asks) == 2

    page.route(re.compile(r"/live/\?"), answer_live)
    amount = card(page, "Amount")
    confirm = amount.get_by_role("button", name="Confirm")
    expect(confirm).to_be_enabled()
    respond = re.compile(r"/prompts/\d+/respond/$")
    with (
        page.expect_request(the_ask_after_the_old_fragment),
        page.expect_response(respond) as answered,
    ):
        confirm.click()
    answered_version = int(answered.value.headers["live-version"])
    assert answered_version > int(old.headers["live-version"])

    # The page got the old fragment, handled it (it asks again only then) and kept the newer.
    assert len(delivered) == 1
    expect(amount).to_contain_text("Confirmed: 1250")
    expect(amount.get_by_role("button", name="Confirm")).to_have_count(0)
    expect(page.locator("#instance-banner")).to_contain_text("2 answers needed")
    expect(page.locator("[data-live-stale]")).to_have_count(0)
    assert int(marker.get_attribute("data-live-version") or "") == answered_version
    _shoot(page, f"live-race-{width}")

    for route in held:
        route.continue_()
    # The held ask, answered by the server, brings the whole view labelled above the answer.
    expect(marker).not_to_have_attribute("data-live-digest", "")
    assert int(marker.get_attribute("data-live-version") or "") > answered_version
    expect(amount).to_contain_text("Confirmed: 1250")


def test_the_card_a_veto_focused_keeps_the_focus_when_a_live_update_replaces_it(
    page: Page, sign_in: SignIn, alice: User, fast_confirm: int
) -> None:
    # A keyboard user's place survives a live swap of the very card their own answer focused
    # (the fragment read after their veto replaces it with a fresh copy of the same card).
    instance = scenarios.vendor(alice)
    sign_in("alice", PASSWORD)
    page.goto(f"/instances/{instance.pk}/")
    assumption(page, "Payment reference").get_by_role("button", name="Veto").click()
    question = card(page, "Payment reference")
    expect(question).to_be_focused()
    question_id = question.get_attribute("id")

    other = page.context.new_page()  # another tab answers elsewhere: a live update follows
    other.goto(f"/instances/{instance.pk}/")
    acknowledge_changes(card(other, "Recipient account"))
    confirm = card(other, "Recipient account").get_by_role("button", name="Confirm")
    expect(confirm).to_be_enabled()
    confirm.click()
    expect(card(page, "Recipient account")).to_contain_text("Confirmed: NL91ABNA0417164300")
    assert page.evaluate("document.activeElement.id") == question_id
    other.close()
