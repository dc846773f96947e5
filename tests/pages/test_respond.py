"""The card endpoint: answers through services.prompt_respond, with htmx and without."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from beliefs.models import (
    AuditEvent,
    Belief,
    InstanceStatus,
    Prompt,
    PromptResponse,
    PromptState,
    TaskInstance,
)
from tests.browser import scenarios
from tests.builders import set_world
from tests.conftest import notify_queries
from tests.support.pages import HTMX, marked

pytestmark = pytest.mark.django_db


def url(prompt: Prompt) -> str:
    return f"/instances/{prompt.instance_id}/prompts/{prompt.pk}/respond/"


def post(client: Client, prompt: Prompt, htmx: bool = True, **data: object):  # noqa: ANN201
    data.setdefault("version", prompt.version)
    return client.post(url(prompt), data, **(HTMX if htmx else {}))


# --- htmx ----------------------------------------------------------------------------------


def test_it_confirms_and_swaps_the_card_with_the_banner_out_of_band(
    vendor: TaskInstance, alice_client: Client
) -> None:
    prompt = scenarios.open_prompt(vendor, "amount")
    response = post(alice_client, prompt, action="confirm", value="1250")
    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith(
        f'<article class="card card-confirm card-done" id="prompt-{prompt.pk}"'
    )
    assert '<strong>Confirmed</strong>: <span class="value">1250</span>' in html
    assert 'id="instance-banner"' in html and 'hx-swap-oob="true"' in html
    assert "2 answers needed" in html
    assert 'id="restatement"' in html
    belief = Belief.objects.get(instance=vendor, slot__key="amount", status="active")
    assert belief.value == 1250 and belief.source == "user"


def test_it_saves_an_edit_as_a_new_user_belief(vendor: TaskInstance, alice_client: Client) -> None:
    prompt = scenarios.open_prompt(vendor, "amount")
    response = post(alice_client, prompt, action="edit", value="1300", value_confirmation="1300")
    assert response.status_code == 200
    assert "Edited and confirmed" in response.content.decode()
    assert Belief.objects.get(instance=vendor, slot__key="amount", status="active").value == 1300


def test_it_refuses_a_confirm_whose_input_was_changed(
    vendor: TaskInstance, alice_client: Client
) -> None:
    prompt = scenarios.open_prompt(vendor, "amount")
    response = post(alice_client, prompt, action="confirm", value="999")
    html = response.content.decode()
    assert response.status_code == 400
    assert "press “Use this value instead” to keep your change" in html
    assert 'value="999"' in html  # what was typed is kept
    assert not PromptResponse.objects.filter(prompt=prompt).exists()


def test_it_shows_an_invalid_answer_in_place_with_what_was_typed(
    vendor: TaskInstance, alice_client: Client
) -> None:
    prompt = scenarios.open_prompt(vendor, "amount")
    response = post(alice_client, prompt, action="edit", value="lots")
    html = response.content.decode()
    assert response.status_code == 400
    assert html.lstrip().startswith(f'<article class="card card-confirm" id="prompt-{prompt.pk}"')
    assert 'role="alert"' in html and "Enter a number" in html
    assert "value:" not in html  # the problem in words, not the name of a field
    assert 'value="lots"' in html and 'aria-invalid="true"' in html
    assert "data-focus" in html


def test_it_asks_for_an_escalated_scope_twice(vendor: TaskInstance, alice_client: Client) -> None:
    prompt = scenarios.open_prompt(vendor, "approval_scope")
    first = post(alice_client, prompt, action="answer", value="unlimited")
    assert first.status_code == 400
    html = first.content.decode()
    assert "grants more than the earlier" in html and "type it a second time" in html
    # (The scope shows an earlier grant, so its second field is there from the start: a change
    # of an irreversible value is typed twice, and an escalation is one.)
    assert f'<label for="prompt-{prompt.pk}-again">Type the new value again<span' in html
    assert 'name="value_confirmation"' in html and 'value="unlimited"' in html
    # The normal next step, said as a step: not a red "Please correct this" before it.
    assert '<p class="message message-step"' in html and "<strong>One more step.</strong>" in html
    assert "Please correct this" not in html and "message-400" not in html

    mismatch = post(
        alice_client, prompt, action="answer", value="unlimited", value_confirmation="recurring"
    )
    assert mismatch.status_code == 400
    wrong = mismatch.content.decode()
    assert "The two values do not match." in wrong
    assert "<strong>Please correct this.</strong>" in wrong and "message-step" not in wrong
    assert not Belief.objects.filter(instance=vendor, slot__key="approval_scope").exists()

    ok = post(
        alice_client, prompt, action="answer", value="unlimited", value_confirmation="unlimited"
    )
    assert ok.status_code == 200
    assert Belief.objects.get(instance=vendor, slot__key="approval_scope").value == "unlimited"


def test_it_takes_a_scope_at_or_below_the_earlier_grant_once(
    vendor: TaskInstance, alice_client: Client
) -> None:
    prompt = scenarios.open_prompt(vendor, "approval_scope")
    assert post(alice_client, prompt, action="answer", value="single").status_code == 200


def test_it_shows_the_fresh_card_when_the_world_changed_since_it_was_shown(
    vendor: TaskInstance, alice_client: Client
) -> None:
    prompt = scenarios.open_prompt(vendor, "recipient_account")
    world = {**scenarios.VENDOR_WORLD_RUN_2}
    world["recipient_account"] = {**world["recipient_account"], "holder": "Evil Ltd"}
    set_world(instance=vendor, world=world, actor=scenarios.RUNTIME)
    response = post(alice_client, prompt, action="confirm", value="NL91ABNA0417164300")
    html = response.content.decode()
    assert response.status_code == 409
    assert "<strong>Not recorded.</strong> What you answered has changed since you saw it" in html
    assert f'name="version" value="{prompt.version + 1}"' in html
    assert "Evil Ltd" in html
    assert not PromptResponse.objects.filter(prompt=prompt).exists()


def test_it_shows_an_answered_card_when_answered_twice(
    vendor: TaskInstance, alice_client: Client
) -> None:
    prompt = scenarios.open_prompt(vendor, "amount")
    first = post(alice_client, prompt, action="edit", value="1300", value_confirmation="1300")
    assert first.status_code == 200
    again = post(alice_client, prompt, action="edit", value="1400")
    assert again.status_code == 409
    assert "already answered" in again.content.decode()
    assert "Edited and confirmed" in again.content.decode()


def test_it_vetoes_an_assumption_and_swaps_in_the_question(
    vendor: TaskInstance, alice_client: Client
) -> None:
    prompt = scenarios.open_prompt(vendor, "due_date")
    response = post(alice_client, prompt, action="veto", reason="we moved it")
    html = response.content.decode()
    assert response.status_code == 200
    ask = scenarios.open_prompt(vendor, "due_date")
    assert ask.route == "ASK"
    assert html.lstrip().startswith(
        f'<div class="assumption assumption-done" id="prompt-{prompt.pk}"'
    )
    assert "<strong>Vetoed</strong>. Reason: we moved it" in html
    assert f'id="prompt-{ask.pk}"' in html and "Answer: Due date" in html
    # A date is picked with the browser's date input (it sends YYYY-MM-DD), not typed as text.
    field = html[html.index(f'id="prompt-{ask.pk}-value"') :].split(">", 1)[0]
    assert 'type="date"' in field and "placeholder" not in field
    assert "4 answers needed" in html  # the banner, out of band
    # The question sits under the vetoed line on a full render too.
    full = alice_client.get(f"/instances/{vendor.pk}/").content.decode()
    assert full.index(f'id="prompt-{prompt.pk}"') < full.index(f'id="prompt-{ask.pk}"')
    assert full.index(f'id="prompt-{ask.pk}"') < full.index("Needs your answer")

    answered = post(alice_client, ask, action="answer", value="2025-07-15")
    assert answered.status_code == 200
    assert (
        Belief.objects.get(instance=vendor, slot__key="due_date", status="active").value
        == "2025-07-15"
    )


def test_it_rejects_with_a_reason_and_closes_every_card(
    vendor: TaskInstance, alice_client: Client
) -> None:
    prompt = scenarios.open_prompt(vendor, "recipient_account")
    others = list(Prompt.objects.filter(instance=vendor, state="open").exclude(pk=prompt.pk))
    response = post(alice_client, prompt, action="reject", reason="wrong bank")
    html = response.content.decode()
    assert response.status_code == 200
    vendor.refresh_from_db()
    assert vendor.status == InstanceStatus.CANCELLED and vendor.status_reason == "wrong bank"
    assert "<strong>Rejected</strong>. Reason: wrong bank" in html
    assert "✕ Cancelled" in html
    # The whole view is swapped: the outcome, the headings, and every card closed.
    assert response["HX-Retarget"] == "#instance-view"
    for other in others:
        assert f'id="prompt-{other.pk}"' in html
    assert 'value="confirm"' not in html and 'value="veto"' not in html


def test_it_reveals_a_hidden_character_in_a_reason(
    vendor: TaskInstance, alice_client: Client
) -> None:
    prompt = scenarios.open_prompt(vendor, "reference")
    html = post(alice_client, prompt, action="veto", reason="see\u202eattached").content.decode()
    assert f"see{marked('U+202E')}attached" in html and "\u202e" not in html


def test_it_records_the_response_time(vendor: TaskInstance, alice_client: Client) -> None:
    alice_client.get(f"/instances/{vendor.pk}/")
    prompt = scenarios.open_prompt(vendor, "amount")
    post(alice_client, prompt, action="confirm")
    prompt.refresh_from_db()
    assert prompt.shown_at is not None and prompt.responded_at is not None
    assert prompt.dwell_seconds is not None and prompt.dwell_seconds >= 0


def test_it_refuses_an_unknown_action(vendor: TaskInstance, alice_client: Client) -> None:
    prompt = scenarios.open_prompt(vendor, "amount")
    response = post(alice_client, prompt, action="approve_all")
    assert response.status_code == 400
    assert "Choose one of: confirm, edit, answer, reject, veto" in response.content.decode()


def test_it_refuses_a_missing_version(vendor: TaskInstance, alice_client: Client) -> None:
    prompt = scenarios.open_prompt(vendor, "amount")
    response = alice_client.post(url(prompt), {"action": "confirm"}, **HTMX)
    assert response.status_code == 400
    assert "must be the prompt version you saw" in response.content.decode()


def test_it_refuses_get(vendor: TaskInstance, alice_client: Client) -> None:
    assert alice_client.get(url(scenarios.open_prompt(vendor, "amount"))).status_code == 405


# --- without JavaScript --------------------------------------------------------------------


def test_it_redirects_a_plain_form_post_back_to_the_page(
    vendor: TaskInstance, alice_client: Client
) -> None:
    prompt = scenarios.open_prompt(vendor, "amount")
    response = post(alice_client, prompt, htmx=False, action="confirm", value="1250")
    assert response.status_code == 302
    assert response["Location"] == f"/instances/{vendor.pk}/#prompt-{prompt.pk}"
    page = alice_client.get(response["Location"]).content.decode()
    assert "Amount: confirmed." in page
    assert "2 answers needed" in page


def test_it_re_shows_the_page_with_the_message_on_a_plain_400(
    vendor: TaskInstance, alice_client: Client
) -> None:
    prompt = scenarios.open_prompt(vendor, "amount")
    response = post(alice_client, prompt, htmx=False, action="edit", value="lots")
    html = response.content.decode()
    assert response.status_code == 400
    assert "<html" in html and "What the agent wants to do" in html
    assert "Enter a number" in html and 'value="lots"' in html


def test_it_re_shows_the_page_with_the_fresh_card_on_a_plain_409(
    vendor: TaskInstance, alice_client: Client
) -> None:
    prompt = scenarios.open_prompt(vendor, "recipient_account")
    world = {"recipient_account": {"holder": "Acme B.V.", "bank": "Bunq", "verified": True}}
    set_world(instance=vendor, world=world, actor=scenarios.RUNTIME)
    response = post(alice_client, prompt, htmx=False, action="confirm")
    html = response.content.decode()
    assert response.status_code == 409
    assert "<html" in html and "has changed since you saw it" in html and "Bunq" in html


def test_it_completes_an_instance_with_plain_form_posts(
    vendor: TaskInstance, alice_client: Client
) -> None:
    for slot, data in [
        ("amount", {"action": "edit", "value": "1300", "value_confirmation": "1300"}),
        (
            "recipient_account",
            {"action": "confirm", "value": "NL91ABNA0417164300", "acknowledged": ["bank"]},
        ),
        ("approval_scope", {"action": "answer", "value": "single"}),
    ]:
        response = post(alice_client, scenarios.open_prompt(vendor, slot), htmx=False, **data)
        assert response.status_code == 302
    page = alice_client.get(f"/instances/{vendor.pk}/").content.decode()
    vendor.refresh_from_db()
    assert "This action may proceed" in page and vendor.bindings_digest in page
    assert vendor.bindings["amount"] == 1300
    assert AuditEvent.objects.filter(instance_id=vendor.pk, kind="prompt.edit").count() == 1


# --- who may answer ------------------------------------------------------------------------


def test_it_answers_404_to_another_user_on_every_card_of_the_instance(
    vendor: TaskInstance, alice: User, mallory_client: Client
) -> None:
    scenarios.hostile(alice)
    prompts = list(Prompt.objects.filter(instance__principal=alice))
    assert len(prompts) >= 5
    for prompt in prompts:
        for action in ("confirm", "edit", "answer", "veto", "reject"):
            response = post(mallory_client, prompt, action=action, value="x", reason="mine")
            assert response.status_code == 404
    assert mallory_client.get(f"/instances/{vendor.pk}/").status_code == 404
    assert not PromptResponse.objects.exists()
    assert Prompt.objects.filter(instance=vendor, state=PromptState.OPEN).count() == 5


def test_it_answers_404_when_the_prompt_belongs_to_another_instance(
    vendor: TaskInstance, alice: User, mallory: User, alice_client: Client
) -> None:
    scenarios.vendor_run_1(mallory)
    theirs = scenarios.vendor_run_2(mallory)
    their_prompt = scenarios.open_prompt(theirs, "amount")
    # alice's own instance id with mallory's prompt id: still nothing of mallory's.
    response = alice_client.post(
        f"/instances/{vendor.pk}/prompts/{their_prompt.pk}/respond/",
        {"action": "confirm", "version": their_prompt.version},
    )
    assert response.status_code == 404
    assert not PromptResponse.objects.exists()


def test_it_sends_anonymous_users_to_sign_in(vendor: TaskInstance) -> None:
    client = Client()
    prompt = scenarios.open_prompt(vendor, "amount")
    for response in (
        client.get("/"),
        client.get("/inbox/rows/"),
        client.get(f"/instances/{vendor.pk}/"),
        client.post(url(prompt), {"action": "confirm", "version": prompt.version}),
    ):
        assert response.status_code == 302
        assert response["Location"].startswith("/accounts/login/?next=")
    assert not PromptResponse.objects.exists()


@pytest.mark.parametrize("prompts", [2, 50])
def test_it_runs_the_same_queries_for_2_and_50_prompts(
    prompts: int,
    alice: User,
    alice_client: Client,
    django_assert_num_queries,  # noqa: ANN001
) -> None:
    instance = scenarios.many(alice, prompts)
    alice_client.get(f"/instances/{instance.pk}/")  # shown once already: no shown_at UPDATE
    surfaced = Prompt.objects.filter(instance=instance, route="SURFACED").first()
    # The view: 1 session, 2 user, 3 the prompt with its slot (and its instance's status);
    # the service: 4 savepoint, 5 the instance locked (with its task class, principal, runtime
    #   and last belief turn), 6 its open and answered prompts with slots and beliefs, 7 the
    #   response row, 8 the vetoed belief, 9 the class's history pool (whose older beliefs the
    #   veto may retire), 10 older beliefs retired, 11 the prompt, 12 the audit event, and the
    #   belief.vetoed event: 13 its sequence number, 14 its row (the scenario's instance has no
    #   runtime, so no endpoint is looked up); the re-plan: 15 the slots with their decisions
    #   and beliefs, 16 the new ASK prompt, 17 the instance, 18 the audit event; 19 release;
    # the render, in one snapshot (console.live; the test's transaction here): 20 the instance
    #   (task class, principal, receipt, latest belief), 21 its prompts with slots and beliefs,
    #   22 the decisions with their slots' keys, 23 the person's latest irreversible
    #   confirmations (an irreversible one is open: is friction raised?) (the fragment has no
    #   header, so no permissions are read for its roles); after it 24 shown_at of the new
    #   question; and on PostgreSQL the change notification.
    with django_assert_num_queries(24 + notify_queries()):
        response = post(alice_client, surfaced, action="veto")
    assert response.status_code == 200


def test_it_shows_every_card_expired_once_the_ttl_has_passed(
    vendor: TaskInstance, alice_client: Client
) -> None:
    prompt = scenarios.open_prompt(vendor, "amount")
    others = list(Prompt.objects.filter(instance=vendor, state="open").exclude(pk=prompt.pk))
    Prompt.objects.filter(instance=vendor).update(expires_at=timezone.now() - timedelta(minutes=1))
    response = post(alice_client, prompt, action="confirm")
    html = response.content.decode()
    assert response.status_code == 409
    assert "no longer open: it waited too long and the action expired" in html
    assert "✕ Expired" in html
    assert response["HX-Retarget"] == "#instance-view"
    for other in others:
        assert f'id="prompt-{other.pk}"' in html
    assert html.count(f'id="prompt-{prompt.pk}"') == 1
    assert 'value="confirm"' not in html and 'value="veto"' not in html


def test_it_swaps_each_closed_card_once_after_a_reject_from_a_vetos_question(
    vendor: TaskInstance, alice_client: Client
) -> None:
    vetoed = scenarios.open_prompt(vendor, "due_date")
    post(alice_client, vetoed, action="veto")
    post(alice_client, scenarios.open_prompt(vendor, "reference"), action="veto")
    question = scenarios.open_prompt(vendor, "due_date")
    response = post(alice_client, question, action="reject", reason="stop")
    html = response.content.decode()
    assert response.status_code == 200
    ids = re.findall(r'<(?:article|div) class="[^"]*" id="(prompt-\d+)"', html)
    assert len(ids) == len(set(ids))
    assert f"prompt-{question.pk}" in ids
    # The whole view comes along: every card of the instance once, closed.
    every = Prompt.objects.filter(instance=vendor).exclude(state=PromptState.SUPERSEDED)
    assert set(ids) == {f"prompt-{p.pk}" for p in every}
