"""The server enforces attention: how friction rises and falls with a person's
habit, what the card's form post and the API refuse and take, and untrusted details shown as
text. Every combination of the inputs through the service is in test_attention_acts.py."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
import time_machine
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from beliefs.domain.vocabulary import AuditKind
from beliefs.models import AuditEvent, InstanceStatus, Prompt, RuntimeAPIKey
from beliefs.selectors import attention
from beliefs.services.audit import Actor, audit, digest_of
from beliefs.services.responses import prompt_respond
from tests.builders import answer_all, open_prompt, transfer
from tests.support.attention import (
    HABIT_SETTINGS,
    ON_RECORD,
    WINDOW,
    WORLD_SAME,
    confirm_kept,
    history,
    run,
    target,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice_client(alice: User, signed_in: Any) -> Client:  # noqa: ANN401
    return signed_in(alice)


@pytest.fixture
def rt(runtime_key: tuple[RuntimeAPIKey, str], settings: Any) -> Actor:  # noqa: ANN401
    for name, value in HABIT_SETTINGS.items():
        setattr(settings, name, value)
    transfer(Actor(key=runtime_key[0]))
    return Actor(key=runtime_key[0])


def test_friction_rises_once_at_the_habit_and_falls_when_the_pattern_breaks(
    rt: Actor, alice: User
) -> None:
    history(rt, alice, fast=True, runs=1)
    assert not AuditEvent.objects.filter(kind__startswith="attention.").exists()
    confirm_kept(rt, alice, fast=True)  # the window is full: habitual
    (raised,) = AuditEvent.objects.filter(kind__startswith="attention.")
    assert (raised.kind, raised.actor, raised.subject) == (
        AuditKind.ATTENTION_FRICTION_RAISED,
        "alice",
        "recipient_account",
    )
    assert raised.data["kept"] == 2 and raised.data["median_dwell_s"] < 2
    assert attention.friction_raised(alice.pk)

    confirm_kept(rt, alice, fast=True)  # still habitual (the tail typed): nothing new
    assert AuditEvent.objects.filter(kind__startswith="attention.").count() == 1
    confirm_kept(rt, alice, fast=False)  # median now above 2 s: the pattern breaks
    latest = AuditEvent.objects.filter(kind__startswith="attention.").first()
    assert latest is not None and latest.kind == AuditKind.ATTENTION_FRICTION_LOWERED
    assert not attention.friction_raised(alice.pk)
    assert not attention.habit(alice.pk).habitual

    report = attention.friction_report()
    assert (report.raised_now, report.times_raised) == (0, 1)
    (person,) = report.people
    assert (person.person, person.raised_now, person.times_raised) == ("alice", False, 1)


def test_the_friction_report_lists_both_kinds_newest_first_up_to_its_limit(
    alice: User, mallory: User
) -> None:
    # Raised and lowered are read one kind at a time (each off its index) and merged: the
    # report is still one list, newest first, cut at the limit.
    now = timezone.now()
    kinds = [AuditKind.ATTENTION_FRICTION_RAISED, AuditKind.ATTENTION_FRICTION_LOWERED]
    written = []
    for n in range(7):
        person = alice if n % 3 else mallory
        with time_machine.travel(now - timedelta(minutes=10 - n), tick=False):
            audit(kinds[n % 2], actor=Actor(user=person), data={"n": n})
        written.append((n, kinds[n % 2] == AuditKind.ATTENTION_FRICTION_RAISED, person.username))
    newest_first = written[::-1]
    report = attention.friction_report(limit=4)
    assert [(c.figures["n"], c.raised, c.person) for c in report.changes] == newest_first[:4]
    report = attention.friction_report()
    assert [(c.figures["n"], c.raised, c.person) for c in report.changes] == newest_first
    by_person = {p.person: (p.raised_now, p.times_raised) for p in report.people}
    assert by_person == {"alice": (False, 2), "mallory": (True, 2)}


def test_another_persons_habit_is_not_mine(rt: Actor, alice: User, mallory: User) -> None:
    history(rt, alice, fast=True)
    assert attention.habit(alice.pk).habitual
    assert not attention.habit(mallory.pk).habitual


def test_confirmations_never_shown_on_a_page_raise_no_friction(rt: Actor, alice: User) -> None:
    answer_all(
        run(rt, alice, WORLD_SAME),
        alice,
        {"recipient_account": ON_RECORD, "reference": "rent", "memo": "March"},
    )
    for _ in range(WINDOW + 1):
        prompt = open_prompt(run(rt, alice, WORLD_SAME), "recipient_account")
        prompt_respond(prompt_id=prompt.pk, user=alice, action="confirm", version=prompt.version)
    assert not attention.habit(alice.pk).habitual


# --- the card's form post ------------------------------------------------------------------


def _post(client: Client, prompt: Prompt, **data: Any) -> Any:  # noqa: ANN401
    return client.post(
        f"/instances/{prompt.instance_id}/prompts/{prompt.pk}/respond/",
        {"version": prompt.version, **data},
        HTTP_HX_REQUEST="true",
    )


def test_the_card_refuses_a_one_click_confirm_of_a_changed_world_and_says_why(
    rt: Actor, alice: User, alice_client: Client
) -> None:
    history(rt, alice, fast=False)
    prompt = target(rt, alice, changed=True, risk="irreversible")
    page = alice_client.get(f"/instances/{prompt.instance_id}/").content.decode()
    assert 'name="acknowledged" value="iban"' in page
    assert "The <strong>iban</strong> is now ‘DE02 1203’ (was ‘DE89 3704’)" in page
    assert "data-needs-acts" in page and 'name="typed_tail"' not in page

    refused = _post(alice_client, prompt, action="confirm", value=ON_RECORD, acknowledged="iban")
    html = refused.content.decode()
    assert refused.status_code == 400
    assert "Tick each changed detail below to say that you read it (1 not ticked yet)" in html
    assert 'value="iban" checked' in html  # what was ticked stays ticked
    assert 'value="holder" aria-invalid="true"' in html

    taken = _post(
        alice_client, prompt, action="confirm", value=ON_RECORD, acknowledged=["iban", "holder"]
    )
    assert taken.status_code == 200
    prompt.refresh_from_db()
    assert prompt.action == "confirm"


def test_the_card_asks_for_the_tail_under_friction_and_an_unchanged_card_for_nothing(
    rt: Actor, alice: User, alice_client: Client
) -> None:
    history(rt, alice, fast=True)
    prompt = target(rt, alice, changed=False, risk="irreversible")
    page = alice_client.get(f"/instances/{prompt.instance_id}/").content.decode()
    assert 'name="typed_tail"' in page and 'data-tail-length="4"' in page
    assert "Your latest 2 confirmations of values that cannot be undone kept 2" in page
    assert 'name="acknowledged"' not in page
    assert ON_RECORD[-4:] not in page.split('name="typed_tail"')[1].split(">")[0]  # not given away

    refused = _post(alice_client, prompt, action="confirm", value=ON_RECORD, typed_tail="0000")
    assert refused.status_code == 400
    assert "Type the last 4 characters of the value on record" in refused.content.decode()
    taken = _post(alice_client, prompt, action="confirm", value=ON_RECORD, typed_tail="3704")
    assert taken.status_code == 200


def test_an_unchanged_card_without_friction_is_one_click(
    rt: Actor, alice: User, alice_client: Client
) -> None:
    history(rt, alice, fast=False)
    prompt = target(rt, alice, changed=False, risk="irreversible")
    page = alice_client.get(f"/instances/{prompt.instance_id}/").content.decode()
    assert "data-needs-acts" not in page and 'class="attention' not in page
    assert _post(alice_client, prompt, action="confirm", value=ON_RECORD).status_code == 200


def test_a_no_op_edit_on_the_card_is_recorded_as_a_confirm(
    rt: Actor, alice: User, alice_client: Client
) -> None:
    history(rt, alice, fast=False)
    prompt = target(rt, alice, changed=False, risk="irreversible")
    response = _post(alice_client, prompt, action="edit", value=ON_RECORD)
    html = response.content.decode()
    assert response.status_code == 200
    assert "<strong>Confirmed</strong>" in html and "instead of" not in html
    prompt.refresh_from_db()
    assert prompt.action == "confirm"
    assert not AuditEvent.objects.filter(kind="prompt.edit", prompt_id=prompt.pk).exists()


# --- the API ---------------------------------------------------------------------------------


def test_the_api_refuses_a_confirm_without_the_acts_in_json(
    rt: Actor,
    alice: User,
    person_client: Any,  # noqa: ANN401
) -> None:
    history(rt, alice, fast=True)
    prompt = target(rt, alice, changed=True, risk="irreversible")
    api = person_client(alice)
    url = f"/api/v1/prompts/{prompt.pk}/respond/"

    refused = api.post_json(url, {"action": "confirm", "version": prompt.version})
    body = refused.json()
    assert refused.status_code == 400
    assert body["error"] == "not_acknowledged"
    assert body["fields"]["acknowledged"] == [
        "must name every changed detail of the world before a confirm; missing: holder, iban"
    ]
    assert body["fields"]["typed_tail"] == ["must be the last 4 characters of the value on record"]
    bad = api.post_json(
        url, {"action": "confirm", "version": prompt.version, "acknowledged": "iban"}
    )
    assert bad.status_code == 400 and "acknowledged" in bad.json()["fields"]

    taken = api.post_json(
        url,
        {
            "action": "confirm",
            "version": prompt.version,
            "acknowledged": ["iban", "holder"],
            "typed_tail": "3704",
        },
    )
    assert taken.status_code == 200, taken.json()
    assert taken.json()["prompt"]["action"] == "confirm"
    prompt.instance.refresh_from_db()
    assert prompt.instance.status == InstanceStatus.READY


def test_an_acknowledgement_shows_untrusted_details_as_text_with_hidden_characters_marked(
    rt: Actor, alice: User, alice_client: Client
) -> None:
    history(rt, alice, fast=False)
    hostile = "<img src=x onerror=alert(1)>\u202eEve"
    world = {"recipient_account": {"iban": "DE89 3704", "holder": "Bob", "no\u200bte": hostile}}
    prompt = open_prompt(run(rt, alice, world), "recipient_account")
    page = alice_client.get(f"/instances/{prompt.instance_id}/").content.decode()
    label = page.split('name="acknowledged"')[1].split("</label>")[0]
    assert "<img" not in label and "&lt;img src=x onerror=alert(1)&gt;" in label
    assert '<span class="hidden-char" title="hidden character U+202E">' in label
    assert '<span class="hidden-char" title="hidden character U+200B">' in label  # the key
    assert "There is now a <strong>no" in label

    # The key as the checkbox posts it back, hidden character and all, acknowledges it.
    refused = _post(alice_client, prompt, action="confirm", value=ON_RECORD, acknowledged="note")
    assert refused.status_code == 400
    taken = _post(
        alice_client, prompt, action="confirm", value=ON_RECORD, acknowledged="no\u200bte"
    )
    assert taken.status_code == 200
    event = AuditEvent.objects.get(kind="prompt.confirm", prompt_id=prompt.pk)
    # The audit keeps the key and digests of the world's values, never the values.
    assert event.data["acknowledged"] == [
        {
            "key": "no\u200bte",
            "change": "added",
            "old_digest": digest_of(None),
            "new_digest": digest_of(hostile),
        }
    ]


def test_only_the_principal_showing_their_own_instances_prompts_starts_the_dwell(
    rt: Actor, alice: User, mallory: User
) -> None:
    from beliefs.services.responses import prompts_mark_shown

    mine = run(rt, alice, WORLD_SAME)
    theirs = run(rt, mallory, WORLD_SAME)
    prompt = Prompt.objects.filter(instance=mine, state="open", blocking=True).first()
    other = Prompt.objects.filter(instance=theirs, state="open", blocking=True).first()
    assert prompt is not None and other is not None
    # Another person's page, or another instance's prompt named with this one: nothing.
    assert prompts_mark_shown(instance=mine, prompts=[prompt], user=mallory) == 0
    assert prompts_mark_shown(instance=theirs, prompts=[prompt], user=mallory) == 0
    assert prompts_mark_shown(instance=mine, prompts=[other], user=alice) == 0
    assert not Prompt.objects.filter(shown_at__isnull=False).exists()
    # The principal's own: once, and never moved later.
    assert prompts_mark_shown(instance=mine, prompts=[prompt], user=alice) == 1
    first = Prompt.objects.get(pk=prompt.pk).shown_at
    assert first is not None
    fresh = Prompt.objects.get(pk=prompt.pk)
    fresh.shown_at = None  # a stale read of it
    assert prompts_mark_shown(instance=mine, prompts=[fresh], user=alice) == 0
    assert Prompt.objects.get(pk=prompt.pk).shown_at == first
    assert Prompt.objects.get(pk=other.pk).shown_at is None
