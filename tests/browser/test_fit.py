"""Every console page fits a phone: at 390 px wide nothing makes the page wider than the screen
(`document.documentElement.scrollWidth`), with long data in its tables: a wide table scrolls in
its own box or stacks. With DEBUG on (as `make run` serves it) and off."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from django.contrib.auth.models import User
from django.test import override_settings
from playwright.sync_api import Page, expect

from beliefs.models import ProposalValidation, Runtime, TaskClass, WebhookEndpoint
from beliefs.roles import CLASSIFIERS_GROUP, REVIEWERS_GROUP, grant_role
from beliefs.services import classification
from beliefs.services.audit import Actor
from beliefs.services.planning import instance_plan
from demo.proposals import seed_demo_proposals
from tests.browser import scenarios
from tests.builders import classify, open_instance, register_task_class
from tests.conftest import PASSWORD

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}
LONG_WORD = "Überweisungsempfängerkontonummernbestätigungsverfahren" * 3  # no place to break
LONG_RUNTIME = "billing-agent-" + "x" * 36  # the longest name a runtime may have (50)


def _long_data(root: User) -> dict[str, str]:
    """Long labels, values, keys and URLs everywhere a table shows them; the URLs to visit."""
    runtime, _ = Runtime.objects.get_or_create(name=LONG_RUNTIME)
    WebhookEndpoint.objects.create(
        runtime=runtime,
        url="https://hooks.example.org/" + "very-long-path-segment/" * 8 + LONG_WORD,
        secret="whsec_" + "A" * 44,
    )
    task_class = register_task_class(
        key="payments.long." + "k" * 60,
        name="Pay " + LONG_WORD,
        slots=[
            {"key": "beneficiary_" + "b" * 50, "label": "Beneficiary " + LONG_WORD},
            {"key": "amount", "label": "Amount", "value_type": "number"},
            {"key": "unrated", "label": "Unrated " + LONG_WORD},
        ],
        decisions=[
            {
                "key": "send_" + "s" * 50,
                "label": "Send " + LONG_WORD,
                "slots": ["beneficiary_" + "b" * 50, "amount"],
            }
        ],
        actor=scenarios.RUNTIME,
    )
    classify(
        task_class, slots={"amount": "irreversible"}, decisions={"send_" + "s" * 50: "irreversible"}
    )
    slot = task_class.slots.get(key="amount")
    classification.slot_set_risk(
        slot=slot,
        risk_class="policy",
        reason="Reason " + LONG_WORD,
        actor=Actor(user=root),
    )
    instance = open_instance(
        task_class_key=task_class.key,
        principal=root.username,
        world={"beneficiary_" + "b" * 50: {"holder_" + LONG_WORD: LONG_WORD}},
        beliefs=[
            {
                "slot": "beneficiary_" + "b" * 50,
                "value": LONG_WORD,
                "source": "tool",
                "world_ref": {"holder_" + LONG_WORD: "then " + LONG_WORD},
            },
            {"slot": "amount", "value": 10**15, "source": "tool"},
            {"slot": "unrated", "value": LONG_WORD, "source": "tool"},
        ],
        actor=scenarios.RUNTIME,
    )
    instance = instance_plan(instance=instance, actor=scenarios.RUNTIME)
    vendor = scenarios.vendor(root)
    hostile = scenarios.hostile(root)
    scenarios.refunds(root)
    seed_demo_proposals()
    proposal = ProposalValidation.objects.order_by("-id").first()
    assert proposal is not None
    return {
        "inbox": "/",
        "long instance": f"/instances/{instance.pk}/",
        "vendor instance": f"/instances/{vendor.pk}/",
        "hostile instance": f"/instances/{hostile.pk}/",
        "classify": "/classify/",
        "task class": f"/classify/{TaskClass.objects.get(pk=task_class.pk).key}/",
        "matrix": "/classify/matrix/",
        "activity": "/activity/",
        "proposals": "/proposals/",
        "proposal": f"/proposals/{proposal.pk}/",
        "proposal stats": "/proposals/stats/",
        "insights": "/insights/",
        "runtimes": "/runtimes/",
        "account": "/account/",
        "glossary": "/glossary/",
        "not found": "/instances/00000000-0000-0000-0000-000000000000/",
    }


@pytest.fixture(params=[False, True], ids=["debug-off", "debug-on"])
def debug(request: pytest.FixtureRequest) -> Iterator[bool]:
    with override_settings(DEBUG=request.param):
        yield request.param


def _fits(page: Page) -> None:
    width, screen = _width(page)
    assert width <= screen, f"{width} px wide: {page.evaluate(OVERFLOWING)}"


def _width(page: Page) -> tuple[int, int]:
    return page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")


# The innermost elements that reach past the screen's right edge, for the failure message.
OVERFLOWING = """() => Array.from(document.querySelectorAll("main *")).filter((e) => {
  const right = e.getBoundingClientRect().right;
  return right > window.innerWidth + 1 && !Array.from(e.children).some(
    (c) => c.getBoundingClientRect().right > window.innerWidth + 1);
}).slice(0, 3).map((e) => e.tagName.toLowerCase() + "." + e.className + " " +
  Math.round(e.getBoundingClientRect().right))"""


def test_no_console_page_is_wider_than_a_phone(
    page: Page,
    sign_in: Callable[[str, str], None],
    screenshot: Callable[[str], object],
    debug: bool,
) -> None:
    root = User.objects.create_superuser("root", "root@example.org", PASSWORD)
    grant_role(root, CLASSIFIERS_GROUP)
    grant_role(root, REVIEWERS_GROUP)
    urls = _long_data(root)
    sign_in("root", PASSWORD)
    page.set_viewport_size(PHONE)
    too_wide = {}
    for name, url in urls.items():
        page.goto(url)
        expect(page.locator("main h1").first).to_be_visible()
        width, screen = _width(page)
        if width > screen:
            too_wide[name] = (width, page.evaluate(OVERFLOWING))
    assert too_wide == {}, f"wider than {PHONE['width']} px: {too_wide}"
    # A proposal's review form is within reach: near the top, and a link at the top leads to it.
    page.goto(urls["proposal"])
    top = page.evaluate("document.getElementById('annotation').getBoundingClientRect().top")
    assert top < 3_000, f"the review form starts {top} px down"
    page.get_by_role("link", name="Your review").click()
    expect(page.get_by_role("heading", name="Your review")).to_be_in_viewport()
    mode = "debug" if debug else "nodebug"
    for name in ("inbox", "activity", "classify", "matrix"):
        for size, viewport in (("390", PHONE), ("1280", DESKTOP)):
            page.set_viewport_size(viewport)
            page.goto(urls[name])
            expect(page.locator("main h1").first).to_be_visible()
            screenshot(f"fit-{name}-{size}-{mode}")


def test_the_matrix_is_short_enough_to_use_on_a_phone(
    page: Page, sign_in: Callable[[str, str], None], carol: User
) -> None:
    """It was 21,000 px tall at 390 px: each combination now takes about two lines, and the
    filters narrow it to what a classifier asks about."""
    sign_in("carol", PASSWORD)
    page.set_viewport_size(PHONE)
    page.goto("/classify/matrix/")
    whole = page.evaluate("document.documentElement.scrollHeight")
    page.get_by_label("Effective risk").select_option("irreversible")
    page.get_by_label("Source").select_option("tool")
    page.get_by_role("button", name="Filter").click()
    expect(page.get_by_role("status")).to_contain_text("combinations match")
    filtered = page.evaluate("document.documentElement.scrollHeight")
    print(f"matrix at 390 px: {whole} px, filtered {filtered} px")
    # (The rules of an expired meaning, a past date and the person's own confirmation added 30
    # rows to 85, and a line naming the condition to each of those: 12,759 px when measured.)
    assert whole < 14_000 and filtered < 2_500
    sources = page.locator("td.m-source").all_text_contents()
    # A row for any belief (an expired meaning, a past date) applies to a tool's value too.
    assert sources and all(text.strip() in ("tool", "any") for text in sources)
    _fits(page)
