"""The instance page: restatement, assumptions, CONFIRM and ASK cards, the ready banner."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from beliefs.models import AuditEvent, InstanceStatus, Prompt, PromptState, TaskInstance
from beliefs.services.instances import instance_cancel
from tests.browser import scenarios
from tests.builders import confirm_or_answer

pytestmark = pytest.mark.django_db


def card_html(html: str, prompt: Prompt) -> str:
    """The markup of one card or assumption line (up to the next one)."""
    start = html.index(f'id="prompt-{prompt.pk}"')
    nxt = re.search(r'id="prompt-\d+"', html[start + 10 :])
    return html[start : start + 10 + nxt.start()] if nxt else html[start:]


def page(client: Client, instance: TaskInstance) -> str:
    response = client.get(f"/instances/{instance.pk}/")
    assert response.status_code == 200
    return response.content.decode()


def test_it_restates_the_action_in_plain_words(vendor: TaskInstance, alice_client: Client) -> None:
    html = page(alice_client, vendor)
    sentence = re.sub(r"<[^>]+>", "", re.search(r'<p class="sentence">.*?</p>', html).group(0))
    assert sentence == "Send payment: Amount 1250, Recipient account NL91ABNA0417164300."
    assert 'Approval scope <span class="value pending">(to be answered)</span>' in html
    assert "Also</strong>: Memo" in html  # a slot that feeds no decision


def test_it_lists_assumptions_with_source_acquisition_and_a_changed_since_mark(
    vendor: TaskInstance, alice_client: Client
) -> None:
    html = page(alice_client, vendor)
    reference = card_html(html, scenarios.open_prompt(vendor, "reference"))
    assert 'Payment reference</span>: <span class="value">INV-2024-001</span>' in reference
    assert "the agent reports you gave it" in reference  # a runtime's report, not an answer here
    assert re.search(r"from an earlier attempt \(attempt 1\),\s*<time", reference)
    assert "⚠ changed since: status" in reference
    assert 'name="action" value="veto"' in reference
    assert '<label for="prompt-' in reference and "Reason for a veto (optional)" in reference
    due = card_html(html, scenarios.open_prompt(vendor, "due_date"))
    assert "changed since" not in due  # no world reference, nothing to compare


def test_it_shows_a_confirm_card_prefilled_with_its_source_and_world_diff(
    vendor: TaskInstance, alice_client: Client
) -> None:
    prompt = scenarios.open_prompt(vendor, "recipient_account")
    card = card_html(page(alice_client, vendor), prompt)
    assert "Confirm: Recipient account" in card
    assert 'name="value" type="text"' in card and 'value="NL91ABNA0417164300"' in card
    assert f'name="version" value="{prompt.version}"' in card
    assert "the agent reports you gave it" in card
    assert re.search(r"from an earlier attempt \(attempt 1\),\s*<time", card)
    # The diff: the changed key is highlighted and says so in words; the others are plain.
    bank = re.search(r'<tr class="changed">.*?</tr>', card, re.S).group(0)
    assert "bank" in bank and "ABN AMRO" in bank and "Revolut" in bank and "changed" in bank
    holder = re.search(r'<tr class="same">.*?</tr>', card, re.S).group(0)
    assert "holder" in holder and "changed" not in holder
    assert "1 detail changed" in card
    # The changed key comes first, whatever its order in the world.
    assert card.index('<tr class="changed">') < card.index('<tr class="same">')
    for button in ('value="confirm"', 'value="edit"', 'value="reject"'):
        assert button in card


def test_it_shows_where_a_tool_value_comes_from(vendor: TaskInstance, alice_client: Client) -> None:
    card = card_html(page(alice_client, vendor), scenarios.open_prompt(vendor, "amount"))
    assert "from a tool" in card
    assert re.search(r"from this attempt,", card)
    assert 'inputmode="decimal"' in card and 'value="1250"' in card


def test_it_disables_an_irreversible_confirm_until_the_delay_has_passed(
    vendor: TaskInstance,
    alice_client: Client,
    settings,  # noqa: ANN001
) -> None:
    settings.CONSOLE_CONFIRM_DELAY_MS = 1500
    card = card_html(page(alice_client, vendor), scenarios.open_prompt(vendor, "amount"))
    confirm = re.search(r'<button type="submit" name="action" value="confirm"[^>]*>', card).group(0)
    # Waiting, but in the tab order: aria-disabled with a note that says why, not `disabled`.
    assert " disabled" not in confirm and 'aria-disabled="true"' in confirm
    assert f'aria-describedby="prompt-{scenarios.open_prompt(vendor, "amount").pk}-wait"' in confirm
    assert "Not available yet: read the value first" in card
    assert 'data-enable-after-ms="1500"' in confirm
    # Without JavaScript a plain Confirm is offered instead (the server accepts it either way).
    assert '<noscript><button type="submit" name="action" value="confirm"' in card


def test_it_shows_an_ask_card_blank_with_the_earlier_grant_as_context_only(
    vendor: TaskInstance, alice_client: Client
) -> None:
    prompt = scenarios.open_prompt(vendor, "approval_scope")
    card = card_html(page(alice_client, vendor), prompt)
    assert "Answer: Approval scope" in card
    field = re.search(r'<input id="prompt-\d+-value"[^>]*>', card).group(0)
    assert 'value=""' in field and 'autocomplete="off"' in field
    assert "Earlier permission level, for reference only" in card and ">single</span>" in card
    assert "Type the level in full" in card
    # The second field is there (the script shows it once the answer differs from the earlier
    # grant), blank, and says what it holds the value against; no escalation is asked yet.
    again = re.search(r'<div class="field repeat"[^>]*>', card).group(0)
    assert 'data-repeat="single"' in again
    assert re.search(r'<input id="prompt-\d+-again" name="value_confirmation"[^>]* value=""', card)
    assert "Type it again" not in card
    assert 'value="answer"' in card and 'value="confirm"' not in card


def test_it_labels_every_input(vendor: TaskInstance, alice_client: Client) -> None:
    html = page(alice_client, vendor)
    ids = re.findall(r'<(?:input|textarea) id="([^"]+)"', html)
    assert ids
    for input_id in ids:
        assert f'<label for="{input_id}">' in html
    assert not re.search(r"<(input|textarea)(?![^>]*\bid=)(?![^>]*type=\"hidden\")[^>]*>", html)


def test_it_says_when_the_action_may_proceed_with_bindings_and_digest(
    vendor: TaskInstance, alice: User, alice_client: Client
) -> None:
    confirm_or_answer(vendor, alice, "recurring")
    vendor.refresh_from_db()
    assert vendor.status == "ready"
    html = page(alice_client, vendor)
    assert "This action may proceed" in html
    assert vendor.bindings_digest in html
    assert ">recurring</span>" in html and ">NL91ABNA0417164300</span>" in html
    # Answered cards stay as a read-only record, under a heading that no longer asks for them.
    assert "Your answers" in html and "Needs your answer" not in html and "Confirmed" in html
    assert 'value="confirm"' not in html and 'value="answer"' not in html


def test_it_records_when_prompts_were_first_shown(
    vendor: TaskInstance, alice_client: Client
) -> None:
    assert not Prompt.objects.filter(instance=vendor, shown_at__isnull=False).exists()
    page(alice_client, vendor)
    shown = Prompt.objects.filter(instance=vendor, state=PromptState.OPEN)
    first = {p.pk: p.shown_at for p in shown}
    assert all(first.values())
    page(alice_client, vendor)
    assert {p.pk: p.shown_at for p in shown.all()} == first  # first shown, not last


def test_it_shows_a_cancelled_instance_closed(vendor: TaskInstance, alice_client: Client) -> None:
    instance_cancel(instance=vendor, actor=scenarios.RUNTIME, reason="user went away")
    html = page(alice_client, vendor)
    assert "✕ Cancelled" in html and "user went away" in html
    assert 'value="confirm"' not in html and 'value="veto"' not in html


@pytest.mark.parametrize("prompts", [2, 50])
def test_it_runs_the_same_queries_for_2_and_50_prompts(
    prompts: int,
    alice: User,
    alice_client: Client,
    django_assert_num_queries,  # noqa: ANN001
) -> None:
    instance = scenarios.many(alice, prompts)
    # 1 the session, 2 the user; then in one snapshot (console.live; the test's transaction
    # here): 3 the instance with its task class, principal, receipt and latest belief, 4 the
    # prompts with their slots, beliefs and the beliefs' instances (the live version, and
    # whether a blocking prompt is past its TTL, are read off these two), 5 the decisions with
    # their slots' keys, for the restatement, 6 the person's latest irreversible confirmations
    # (an irreversible one is open: is friction raised?), 7 the person's permissions, their
    # own and their groups' (the header's roles); after it, 8 shown_at for the prompts shown
    # for the first time.
    with django_assert_num_queries(8):
        response = alice_client.get(f"/instances/{instance.pk}/")
    assert response.status_code == 200
    assert response.content.decode().count('class="card card-confirm"') == prompts // 2


@pytest.mark.parametrize("late", [True, False], ids=["past it", "before it"])
@pytest.mark.parametrize("waits_for", ["an answer", "a signature"])
def test_opening_it_past_its_time_expires_it_first_and_shows_it_expired(
    vendor: TaskInstance, alice_client: Client, waits_for: str, late: bool
) -> None:
    """The page's own read says whether what the instance waits for ran out of time: then it
    expires (nothing binds) before the page shows it; before its time it waits, as it was."""
    now = timezone.now()
    when = now - timedelta(seconds=1) if late else now + timedelta(minutes=5)
    if waits_for == "an answer":
        Prompt.objects.filter(instance=vendor, state="open", blocking=True).update(expires_at=when)
    else:
        Prompt.objects.filter(instance=vendor, state="open").update(state="answered")
        TaskInstance.objects.filter(pk=vendor.pk).update(
            status=InstanceStatus.AWAITING_SIGNATURE, signature_due_at=when
        )
    html = page(alice_client, vendor)
    vendor.refresh_from_db()
    if late:
        assert vendor.status == InstanceStatus.EXPIRED
        assert "✕ Expired" in html
        assert (
            AuditEvent.objects.filter(instance_id=vendor.pk, kind="instance.expired").count() == 1
        )
    else:
        assert vendor.status != InstanceStatus.EXPIRED
        assert "✕ Expired" not in html
        assert not AuditEvent.objects.filter(
            instance_id=vendor.pk, kind="instance.expired"
        ).exists()
