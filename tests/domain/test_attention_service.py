"""The server enforces attention (DESIGN.md §16): a confirm of an irreversible value whose world
changed names each changed detail, and under raised friction types the value's last characters;
an edit to the value on record is a confirm. Tested over every combination of the inputs, through
the service, the card's form post and the API, and the changes of friction the audit records."""

from __future__ import annotations

import itertools
from datetime import timedelta
from typing import Any

import pytest
import time_machine
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from beliefs import services
from beliefs.domain.vocabulary import AuditKind
from beliefs.errors import InvalidInput
from beliefs.models import AuditEvent, InstanceStatus, Prompt, PromptState, RuntimeAPIKey
from beliefs.selectors import attention
from beliefs.services import Actor
from tests.builders import answer_all, open_instance, open_prompt, transfer

pytestmark = pytest.mark.django_db

ON_RECORD = "DE89 3704"
WORLD_SAME = {"recipient_account": {"iban": "DE89 3704", "holder": "Bob"}}
WORLD_CHANGED = {"recipient_account": {"iban": "DE02 1203", "holder": "Eve"}}
WINDOW = 2
FAST_S, SLOW_S = 0.3, 8.0


@pytest.fixture
def alice_client(alice: User, signed_in: Any) -> Client:  # noqa: ANN401
    return signed_in(alice)


@pytest.fixture
def rt(runtime_key: tuple[RuntimeAPIKey, str], settings: Any) -> Actor:  # noqa: ANN401
    settings.CONSOLE_HABIT_WINDOW = WINDOW
    settings.CONSOLE_HABIT_KEPT_SHARE = 0.9
    settings.CONSOLE_HABIT_MEDIAN_DWELL_S = 2.0
    transfer(Actor(key=runtime_key[0]))
    return Actor(key=runtime_key[0])


def _run(rt: Actor, user: User, world: dict) -> Any:  # noqa: ANN401
    instance = open_instance(
        task_class_key="payments.transfer", principal=user.username, world=world, actor=rt
    )
    return services.instance_plan(instance=instance, actor=rt)


def _shown(prompt: Prompt, user: User, seconds_ago: float) -> Prompt:
    services.prompts_mark_shown(prompts=[prompt], user=user)
    Prompt.objects.filter(pk=prompt.pk).update(
        shown_at=timezone.now() - timedelta(seconds=seconds_ago)
    )
    prompt.refresh_from_db()
    return prompt


def _history(rt: Actor, user: User, *, fast: bool, runs: int = WINDOW) -> None:
    """Run 1 answered, then `runs` irreversible confirmations kept, each fast or slow."""
    answer_all(
        _run(rt, user, WORLD_SAME),
        user,
        {"recipient_account": ON_RECORD, "reference": "rent", "memo": "March"},
    )
    for _ in range(runs):
        _confirm_kept(rt, user, fast=fast)


def _confirm_kept(rt: Actor, user: User, *, fast: bool) -> None:
    tail = ON_RECORD[-4:] if attention.habit(user.pk).habitual else None
    prompt = _shown(
        open_prompt(_run(rt, user, WORLD_SAME), "recipient_account"),
        user,
        FAST_S if fast else SLOW_S,
    )
    services.prompt_respond(
        prompt_id=prompt.pk, user=user, action="confirm", version=prompt.version, typed_tail=tail
    )


def _target(rt: Actor, user: User, *, changed: bool, risk: str) -> Prompt:
    prompt = open_prompt(
        _run(rt, user, WORLD_CHANGED if changed else WORLD_SAME), "recipient_account"
    )
    assert prompt.route == "CONFIRM" and prompt.effective_risk == "irreversible"
    if risk != "irreversible":
        # A CONFIRM whose effective risk is below irreversible: the rule reads the prompt's risk.
        Prompt.objects.filter(pk=prompt.pk).update(effective_risk=risk)
    return _shown(Prompt.objects.select_related("slot").get(pk=prompt.pk), user, SLOW_S)


ACTIONS = {
    "confirm": {"action": "confirm"},
    "edit": {"action": "edit", "value": "NL00 NEW"},
    "edit to the value on record": {"action": "edit", "value": f"  {ON_RECORD} "},
}
ACKS = {"none": [], "some": ["iban"], "all": ["iban", "holder"]}
TAILS = {"right": "3704", "wrong": "3740", "missing": None}


@pytest.mark.parametrize(
    ("changed", "acked", "friction", "tail", "risk", "action"),
    list(
        itertools.product(
            [True, False], ACKS, [True, False], TAILS, ["irreversible", "policy"], ACTIONS
        )
    ),
)
def test_a_confirm_is_taken_only_with_every_act_it_needs(
    rt: Actor,
    alice: User,
    changed: bool,
    acked: str,
    friction: bool,
    tail: str,
    risk: str,
    action: str,
) -> None:
    _history(rt, alice, fast=friction)
    assert attention.habit(alice.pk).habitual is friction
    prompt = _target(rt, alice, changed=changed, risk=risk)
    guarded = risk == "irreversible" and action != "edit"  # an edit is typed: no acts
    needs_acks = guarded and changed and acked != "all"
    needs_tail = guarded and friction and tail != "right"
    responses_before = AuditEvent.objects.filter(kind__startswith="prompt.").count()

    def respond() -> None:
        services.prompt_respond(
            prompt_id=prompt.pk,
            user=alice,
            version=prompt.version,
            acknowledged=ACKS[acked],
            typed_tail=TAILS[tail],
            **ACTIONS[action],
        )

    if needs_acks or needs_tail:
        with pytest.raises(InvalidInput) as refused:
            respond()
        fields = {"acknowledged"} if needs_acks else set()
        fields |= {"typed_tail"} if needs_tail else set()
        assert set(refused.value.fields) == fields
        assert refused.value.code == ("not_acknowledged" if needs_acks else "tail_not_typed")
        prompt.refresh_from_db()
        assert prompt.state == PromptState.OPEN and not prompt.responses.exists()
        assert AuditEvent.objects.filter(kind__startswith="prompt.").count() == responses_before
        return

    respond()
    prompt.refresh_from_db()
    recorded_as = "edit" if action == "edit" else "confirm"
    assert (prompt.state, prompt.action) == (PromptState.ANSWERED, recorded_as)
    assert prompt.response_value == ("NL00 NEW" if action == "edit" else ON_RECORD)
    event = AuditEvent.objects.get(kind=f"prompt.{recorded_as}", prompt_id=prompt.pk)
    if guarded and changed:
        assert [d["key"] for d in event.data["acknowledged"]] == ["holder", "iban"]
        assert event.data["acknowledged"][1] == {
            "key": "iban",
            "change": "changed",
            "old": "DE89 3704",
            "new": "DE02 1203",
        }
    else:
        assert "acknowledged" not in event.data
    if guarded and friction:
        assert event.data["friction"]["typed_tail"] is True
        assert event.data["friction"]["looked_at"] == WINDOW
    else:
        assert "friction" not in event.data
    assert event.data.get("edited_to_the_value_on_record", False) is (
        action == "edit to the value on record"
    )


def test_friction_rises_once_at_the_habit_and_falls_when_the_pattern_breaks(
    rt: Actor, alice: User
) -> None:
    _history(rt, alice, fast=True, runs=1)
    assert not AuditEvent.objects.filter(kind__startswith="attention.").exists()
    _confirm_kept(rt, alice, fast=True)  # the window is full: habitual
    (raised,) = AuditEvent.objects.filter(kind__startswith="attention.")
    assert (raised.kind, raised.actor, raised.subject) == (
        AuditKind.ATTENTION_FRICTION_RAISED,
        "alice",
        "recipient_account",
    )
    assert raised.data["kept"] == 2 and raised.data["median_dwell_s"] < 2
    assert attention.friction_raised(alice.pk)

    _confirm_kept(rt, alice, fast=True)  # still habitual (the tail typed): nothing new
    assert AuditEvent.objects.filter(kind__startswith="attention.").count() == 1
    _confirm_kept(rt, alice, fast=False)  # median now above 2 s: the pattern breaks
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
            services.audit(kinds[n % 2], actor=Actor(user=person), data={"n": n})
        written.append((n, kinds[n % 2] == AuditKind.ATTENTION_FRICTION_RAISED, person.username))
    newest_first = written[::-1]
    report = attention.friction_report(limit=4)
    assert [(c.figures["n"], c.raised, c.person) for c in report.changes] == newest_first[:4]
    report = attention.friction_report()
    assert [(c.figures["n"], c.raised, c.person) for c in report.changes] == newest_first
    by_person = {p.person: (p.raised_now, p.times_raised) for p in report.people}
    assert by_person == {"alice": (False, 2), "mallory": (True, 2)}


def test_another_persons_habit_is_not_mine(rt: Actor, alice: User, mallory: User) -> None:
    _history(rt, alice, fast=True)
    assert attention.habit(alice.pk).habitual
    assert not attention.habit(mallory.pk).habitual


def test_confirmations_never_shown_on_a_page_raise_no_friction(rt: Actor, alice: User) -> None:
    answer_all(
        _run(rt, alice, WORLD_SAME),
        alice,
        {"recipient_account": ON_RECORD, "reference": "rent", "memo": "March"},
    )
    for _ in range(WINDOW + 1):
        prompt = open_prompt(_run(rt, alice, WORLD_SAME), "recipient_account")
        services.prompt_respond(
            prompt_id=prompt.pk, user=alice, action="confirm", version=prompt.version
        )
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
    _history(rt, alice, fast=False)
    prompt = _target(rt, alice, changed=True, risk="irreversible")
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
    _history(rt, alice, fast=True)
    prompt = _target(rt, alice, changed=False, risk="irreversible")
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
    _history(rt, alice, fast=False)
    prompt = _target(rt, alice, changed=False, risk="irreversible")
    page = alice_client.get(f"/instances/{prompt.instance_id}/").content.decode()
    assert "data-needs-acts" not in page and 'class="attention' not in page
    assert _post(alice_client, prompt, action="confirm", value=ON_RECORD).status_code == 200


def test_a_no_op_edit_on_the_card_is_recorded_as_a_confirm(
    rt: Actor, alice: User, alice_client: Client
) -> None:
    _history(rt, alice, fast=False)
    prompt = _target(rt, alice, changed=False, risk="irreversible")
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
    _history(rt, alice, fast=True)
    prompt = _target(rt, alice, changed=True, risk="irreversible")
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
    _history(rt, alice, fast=False)
    hostile = "<img src=x onerror=alert(1)>\u202eEve"
    world = {"recipient_account": {"iban": "DE89 3704", "holder": "Bob", "no\u200bte": hostile}}
    prompt = open_prompt(_run(rt, alice, world), "recipient_account")
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
    assert event.data["acknowledged"] == [
        {"key": "no\u200bte", "change": "added", "old": None, "new": hostile}
    ]
