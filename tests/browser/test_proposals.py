"""The proposal review pages in Chromium: rita finds a rejected proposal and annotates it."""

from __future__ import annotations

import re
from collections.abc import Callable

from axe_playwright_python.sync_playwright import Axe
from django.contrib.auth.models import User
from playwright.sync_api import Page, expect

from beliefs.models import AuditEvent, ProposalAnnotation, ProposalValidation
from demo.proposals import seed_demo_proposals
from tests.conftest import PASSWORD


def assert_accessible(page: Page) -> None:
    """No serious or critical axe-core violation on the page as it stands."""
    results = Axe().run(page)
    serious = [
        (v["id"], [n["target"] for n in v["nodes"]])
        for v in results.response["violations"]
        if v["impact"] in ("serious", "critical")
    ]
    assert serious == []


def test_it_lets_rita_filter_to_reject_open_one_and_annotate_it(
    page: Page,
    sign_in: Callable[[str, str], None],
    screenshot: Callable[[str], object],
    rita: User,
) -> None:
    seed_demo_proposals()
    rejected = ProposalValidation.objects.filter(verdict="REJECT").count()

    sign_in("rita", PASSWORD)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Proposals").click()
    page.get_by_label("Verdict", exact=True).select_option("REJECT")
    page.get_by_role("button", name="Filter").click()

    expect(page).to_have_url(re.compile(r"/proposals/\?.*verdict=REJECT"))
    expect(page.get_by_text(f"{rejected} validations match.")).to_be_visible()
    verdicts = page.locator("table.proposal-table tbody .verdict")
    expect(verdicts.first).to_have_text("REJECT")
    assert set(verdicts.all_text_contents()) == {"REJECT"}
    screenshot("proposals-list-reject")
    assert_accessible(page)

    row = page.get_by_role("row").filter(has_text="walkthrough-57J.63-case-B-declared-true")
    row.get_by_role("link").click()

    expect(page.get_by_role("heading", level=1)).to_contain_text("REJECT")
    expect(page.locator(".decided")).to_contain_text("V1: declared true but no meaningful change")
    findings = page.locator("table.findings-table")
    expect(findings).to_contain_text("contract.V1_declared_true_no_change")
    expect(findings).to_contain_text("/update/answerMeaning/structuralActionRequired")
    expect(page.locator("tr.mismatch")).to_contain_text("differs from the declaration")
    detail_url = page.url

    annotation = page.locator("#annotation")
    annotation.get_by_label("Agree", exact=True).check()
    annotation.get_by_label("Note").fill("Right call: the equivalent unknown u1 already exists.")
    annotation.get_by_role("button", name="Save review").click()

    saved = page.locator("#annotation").get_by_role("status")
    expect(saved).to_contain_text("Saved: you agree with the verdict REJECT.")
    expect(saved.get_by_role("link", name=re.compile("^Next unreviewed"))).to_be_visible()
    assert page.url == detail_url  # swapped in place by htmx, no navigation
    expect(page.locator("#annotation").get_by_label("Agree", exact=True)).to_be_checked()
    screenshot("proposals-detail-annotated")
    assert_accessible(page)

    annotation = ProposalAnnotation.objects.get()
    assert annotation.reviewer == rita
    assert annotation.agreement == "agree"
    assert annotation.validation.run == "walkthrough-57J.63-case-B-declared-true"
    assert AuditEvent.objects.filter(kind="proposal.annotated", actor="rita").count() == 1

    # A second save changes the same annotation, still in place.
    page.locator("#annotation").get_by_label("Disagree").check()
    page.locator("#annotation").get_by_role("button", name="Save review").click()
    expect(page.locator("#annotation").get_by_role("status")).to_contain_text(
        "Saved: you disagree with the verdict REJECT."
    )
    assert ProposalAnnotation.objects.get().agreement == "disagree"


def test_it_shows_the_statistics_charts(
    page: Page,
    sign_in: Callable[[str, str], None],
    screenshot: Callable[[str], object],
    rita: User,
) -> None:
    seed_demo_proposals()
    sign_in("rita", PASSWORD)
    page.goto("/proposals/stats/")
    expect(page.get_by_role("img", name=re.compile("Verdicts per day"))).to_be_visible()
    expect(page.get_by_role("img", name="Most frequent finding codes")).to_be_visible()
    assert page.locator("rect.bar-reject").count() > 0
    screenshot("proposals-stats")
    assert_accessible(page)
