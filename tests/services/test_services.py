"""Services: planning, responses, expiry, bindings."""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from io import StringIO

import pytest
import time_machine
from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import call_command
from django.utils import timezone

from beliefs import selectors
from beliefs.domain.canonical import bindings_digest, canonical_json
from beliefs.errors import Conflict, IdempotencyKeyMismatch, InvalidInput, StaleVersion
from beliefs.models import (
    AuditEvent,
    Belief,
    BeliefStatus,
    InstanceStatus,
    Prompt,
    PromptResponse,
    PromptState,
    RuntimeAPIKey,
    TaskClass,
    TaskInstance,
)
from beliefs.services.access import instance_for_principal, instance_for_runtime
from beliefs.services.audit import Actor
from beliefs.services.expiry import instances_expire
from beliefs.services.instances import instance_cancel
from beliefs.services.planning import DESIRED_FIELDS, content_digest, instance_plan
from beliefs.services.responses import prompt_respond
from tests.builders import (
    access,
    answer_all,
    classify,
    open_instance,
    open_prompt,
    record_belief,
    register,
    register_task_class,
    set_world,
    transfer,
)

WORLD_1 = {"recipient_account": {"iban": "DE89 3704", "holder": "Bob"}}
WORLD_2 = {"recipient_account": {"iban": "DE02 1203", "holder": "Bob"}}


@pytest.fixture
def rt(runtime_key: tuple[RuntimeAPIKey, str]) -> Actor:
    return Actor(key=runtime_key[0])


@pytest.fixture
def transfer_class(rt: Actor) -> TaskClass:
    return transfer(rt)


def _open(
    rt: Actor,
    user: User,
    beliefs: list[dict] | None = None,
    world: dict | None = None,
    key: str = "payments.transfer",
) -> TaskInstance:
    return open_instance(
        task_class_key=key, principal=user.username, world=world, beliefs=beliefs, actor=rt
    )


def _plan(instance: TaskInstance, rt: Actor) -> TaskInstance:
    return instance_plan(instance=instance, actor=rt)


def _items(instance: TaskInstance) -> dict[str, dict]:
    return {item["slot"]: item for item in instance.plan_items}


def _finished_run_1(rt: Actor, alice: User) -> TaskInstance:
    """Run 1 with every slot answered by alice, world stated for the recipient."""
    run1 = _plan(_open(rt, alice, world=WORLD_1), rt)
    answer_all(
        run1,
        alice,
        {"recipient_account": "DE89 3704", "reference": "rent", "memo": "March"},
    )
    run1.refresh_from_db()
    assert run1.status == InstanceStatus.READY
    return run1


# --- planning ------------------------------------------------------------------------------


def test_it_plans_idempotently(rt: Actor, alice: User, transfer_class: TaskClass) -> None:
    beliefs = [
        {"slot": "recipient_account", "value": "DE89", "source": "tool", "turn": 1},
        {"slot": "reference", "value": "rent", "source": "inference", "turn": 1},
    ]
    instance = _plan(_open(rt, alice, beliefs=beliefs), rt)
    assert instance.status == InstanceStatus.AWAITING_USER
    prompts = {p.pk: p.version for p in Prompt.objects.filter(instance=instance)}
    events = AuditEvent.objects.count()
    planned = AuditEvent.objects.filter(kind="instance.planned").count()

    again = _plan(instance, rt)

    assert {p.pk: p.version for p in Prompt.objects.filter(instance=instance)} == prompts
    assert AuditEvent.objects.count() == events
    assert AuditEvent.objects.filter(kind="instance.planned").count() == planned
    assert again.plan_items == instance.plan_items
    assert again.status == InstanceStatus.AWAITING_USER
    # Nothing changed, so nothing was written: the instance keeps when it was planned.
    again.refresh_from_db()
    assert (again.planned_at, again.updated_at) == (instance.planned_at, instance.updated_at)


def test_a_replan_after_a_change_records_when(
    rt: Actor, alice: User, transfer_class: TaskClass
) -> None:
    beliefs = [{"slot": "recipient_account", "value": "DE89", "source": "tool", "turn": 1}]
    instance = _plan(_open(rt, alice, beliefs=beliefs), rt)
    planned_at = instance.planned_at
    assert planned_at is not None
    record_belief(
        instance=instance,
        data={"slot": "reference", "value": "rent", "source": "inference", "turn": 2},
        actor=rt,
    )
    instance.refresh_from_db()
    assert instance.planned_at is not None and instance.planned_at > planned_at
    assert "reference" in {item["slot"] for item in instance.plan_items if item["prompt"]}


def test_a_replan_takes_in_an_earlier_runs_belief_recorded_since(
    rt: Actor, alice: User, transfer_class: TaskClass
) -> None:
    # Run 2 is planned while run 1 holds nothing; then run 1 (still open, never planned)
    # learns the account. Nothing re-plans run 2 on its own: planning it again must notice,
    # although the instance row itself has not changed.
    run_1 = _open(rt, alice)
    run_2 = _plan(_open(rt, alice, world=WORLD_1), rt)
    asked = Prompt.objects.get(instance=run_2, slot__key="recipient_account")
    assert (asked.route, asked.belief_id) == ("ASK", None)
    belief = record_belief(
        instance=run_1,
        data={
            "slot": "recipient_account",
            "value": "DE89",
            "source": "user",
            "world_ref": WORLD_1["recipient_account"],
        },
        actor=rt,
    )
    run_2 = _plan(run_2, rt)
    asked.refresh_from_db()
    assert (asked.belief_id, asked.version) == (belief.pk, 2)
    assert _items(run_2)["recipient_account"]["belief"]["carried"] is True
    assert _items(run_2)["recipient_account"]["prompt"]["version"] == 2


def test_a_replan_expires_an_instance_whose_prompt_is_overdue(
    rt: Actor, alice: User, transfer_class: TaskClass
) -> None:
    instance = _plan(_open(rt, alice), rt)
    assert instance.status == InstanceStatus.AWAITING_USER
    later = timezone.now() + settings.CONSOLE_PROMPT_TTL + timedelta(seconds=1)
    with time_machine.travel(later), pytest.raises(Conflict):
        _plan(instance, rt)
    instance.refresh_from_db()
    assert instance.status == InstanceStatus.EXPIRED
    assert AuditEvent.objects.filter(kind="instance.expired", instance_id=instance.pk).count() == 1


def test_it_routes_each_slot_with_its_rule(
    rt: Actor, alice: User, transfer_class: TaskClass
) -> None:
    beliefs = [
        {"slot": "recipient_account", "value": "DE89", "source": "tool", "turn": 1},
        {"slot": "reference", "value": "rent", "source": "inference", "turn": 1},
    ]
    instance = _plan(_open(rt, alice, beliefs=beliefs), rt)
    items = _items(instance)
    assert (items["recipient_account"]["route"], items["recipient_account"]["rule"]) == (
        "CONFIRM",
        "R4",
    )
    assert items["recipient_account"]["risk_reason"] == (
        "inherited from decision send_transfer (irreversible)"
    )
    assert (items["reference"]["route"], items["reference"]["rule"]) == ("SURFACED", "R7")
    assert (items["memo"]["route"], items["memo"]["rule"]) == ("ASK", "R0")


def test_it_bumps_the_version_when_the_belief_changes(
    rt: Actor, alice: User, transfer_class: TaskClass
) -> None:
    beliefs = [{"slot": "recipient_account", "value": "DE89", "source": "tool", "turn": 1}]
    instance = _plan(_open(rt, alice, beliefs=beliefs), rt)
    prompt = open_prompt(instance, "recipient_account")
    assert (prompt.version, prompt.prefill) == (1, "DE89")

    record_belief(
        instance=instance,
        data={"slot": "recipient_account", "value": "DE02", "source": "tool", "turn": 2},
        actor=rt,
    )

    prompt.refresh_from_db()
    assert (prompt.version, prompt.prefill) == (2, "DE02")
    with pytest.raises(StaleVersion) as excinfo:
        prompt_respond(prompt_id=prompt.pk, user=alice, action="confirm", version=1)
    assert excinfo.value.status == 409
    assert excinfo.value.extra["prompt"]["version"] == 2
    assert excinfo.value.extra["prompt"]["prefill"] == "DE02"
    assert not PromptResponse.objects.exists()


def test_it_bumps_the_version_when_the_world_changes_and_not_when_it_is_restated(
    rt: Actor, alice: User, transfer_class: TaskClass
) -> None:
    _finished_run_1(rt, alice)
    run2 = _plan(_open(rt, alice, world=WORLD_1), rt)
    prompt = open_prompt(run2, "recipient_account")
    assert (prompt.rule, prompt.version) == ("R6", 1)

    set_world(instance=run2, world=dict(WORLD_1), actor=rt)
    prompt.refresh_from_db()
    assert prompt.version == 1

    set_world(instance=run2, world=WORLD_2, actor=rt)
    prompt.refresh_from_db()
    assert prompt.version == 2
    assert {e["key"]: e["change"] for e in prompt.world_diff} == {
        "holder": "unchanged",
        "iban": "changed",
    }


def _digests_hold() -> None:
    """Every prompt's digest is the digest of the content it holds, as read back."""
    for prompt in Prompt.objects.all():
        content = {field: getattr(prompt, field) for field in DESIRED_FIELDS}
        assert prompt.content_digest == content_digest(content), prompt


def test_a_prompts_digest_follows_its_content_as_planning_writes_it(
    rt: Actor, alice: User, transfer_class: TaskClass
) -> None:
    _finished_run_1(rt, alice)
    run2 = _plan(_open(rt, alice, world=WORLD_1), rt)  # created
    _digests_hold()
    first = open_prompt(run2, "recipient_account")
    set_world(instance=run2, world=WORLD_2, actor=rt)  # re-versioned
    _digests_hold()
    revised = open_prompt(run2, "recipient_account")
    assert (revised.pk, revised.version) == (first.pk, 2)
    assert revised.content_digest != first.content_digest
    set_world(instance=run2, world=dict(WORLD_2), actor=rt)  # restated: unchanged
    _plan(run2, rt)
    again = open_prompt(run2, "recipient_account")
    assert (again.version, again.content_digest) == (2, revised.content_digest)
    _digests_hold()


def test_it_freezes_the_plan_of_a_ready_instance(
    rt: Actor, alice: User, transfer_class: TaskClass
) -> None:
    run1 = _finished_run_1(rt, alice)
    bindings, digest = run1.bindings, run1.bindings_digest
    events = AuditEvent.objects.count()

    assert _plan(run1, rt).bindings == bindings
    with pytest.raises(Conflict) as excinfo:
        record_belief(
            instance=run1,
            data={"slot": "recipient_account", "value": "EVIL", "source": "user"},
            actor=rt,
        )
    assert excinfo.value.code == "instance_ready"
    with pytest.raises(Conflict):
        set_world(instance=run1, world=WORLD_2, actor=rt)

    run1.refresh_from_db()
    assert (run1.status, run1.bindings, run1.bindings_digest) == ("ready", bindings, digest)
    assert AuditEvent.objects.count() == events
    assert not Belief.objects.filter(value="EVIL").exists()


def test_it_digests_the_canonical_json_of_the_bindings(
    rt: Actor, alice: User, transfer_class: TaskClass
) -> None:
    run1 = _finished_run_1(rt, alice)
    assert run1.bindings == {"recipient_account": "DE89 3704", "reference": "rent", "memo": "March"}
    canonical = canonical_json(run1.bindings)  # RFC 8785
    assert canonical == '{"memo":"March","recipient_account":"DE89 3704","reference":"rent"}'
    assert run1.bindings_digest == hashlib.sha256(canonical.encode()).hexdigest()


def test_it_digests_non_ascii_bindings_as_utf8() -> None:
    bindings = {"b": "Zoë", "a": [1, True]}
    expected = hashlib.sha256('{"a":[1,true],"b":"Zoë"}'.encode()).hexdigest()
    assert bindings_digest(bindings) == expected


# --- convergence, S5 ----------------------------------------------------------------------


def test_it_converges_run_1_asks_every_slot_then_binds_silently(
    rt: Actor, alice: User, transfer_class: TaskClass
) -> None:
    run1 = _plan(_open(rt, alice, world=WORLD_1), rt)
    assert {i["rule"] for i in run1.plan_items} == {"R0"}
    run1 = answer_all(run1, alice, {"recipient_account": "A", "reference": "B", "memo": "C"})
    assert {i["route"] for i in run1.plan_items} == {"SILENT"}
    assert run1.status == InstanceStatus.READY


def test_it_never_binds_a_vetoed_belief_again(
    rt: Actor, alice: User, transfer_class: TaskClass
) -> None:
    beliefs = [
        {"slot": "recipient_account", "value": "DE89", "source": "user", "turn": 1},
        {"slot": "memo", "value": "m", "source": "user", "turn": 1},
        {"slot": "reference", "value": "old rent", "source": "tool", "turn": 1},
    ]
    run1 = _plan(_open(rt, alice, beliefs=beliefs), rt)
    assert run1.status == InstanceStatus.READY  # the reference is only an assumption
    surfaced = open_prompt(run1, "reference")
    assert surfaced.route == "SURFACED"

    result = prompt_respond(
        prompt_id=surfaced.pk, user=alice, action="veto", version=1, reason="not rent any more"
    )

    vetoed = Belief.objects.get(value="old rent")
    assert vetoed.status == BeliefStatus.VETOED
    assert vetoed.status_reason == "not rent any more"
    assert result.instance.status == InstanceStatus.AWAITING_USER
    assert result.instance.bindings is None
    ask = open_prompt(run1, "reference")
    assert (ask.route, ask.rule, ask.prefill, ask.context_value) == ("ASK", "R0", None, None)

    # Later instances never see it either.
    run2 = _plan(_open(rt, alice), rt)
    item = _items(run2)["reference"]
    assert (item["route"], item["rule"], item["value"]) == ("ASK", "R0", None)
    assert "old rent" not in json.dumps(run2.plan_items)


def test_it_retires_older_carried_beliefs_when_a_carried_one_is_vetoed(
    rt: Actor, alice: User, transfer_class: TaskClass
) -> None:
    for value in ("oldest", "older"):
        instance = _plan(
            _open(rt, alice, beliefs=[{"slot": "reference", "value": value, "source": "user"}]),
            rt,
        )
        instance_cancel(instance=instance, actor=rt)
    run3 = _plan(_open(rt, alice), rt)
    surfaced = open_prompt(run3, "reference")
    assert (surfaced.route, surfaced.prefill) == ("SURFACED", "older")

    prompt_respond(prompt_id=surfaced.pk, user=alice, action="veto", version=1)

    run3.refresh_from_db()
    item = _items(run3)["reference"]
    assert (item["route"], item["rule"]) == ("ASK", "R0")
    assert not Belief.objects.filter(status=BeliefStatus.ACTIVE, slot__key="reference").exists()


# --- responses -----------------------------------------------------------------------------


def test_it_cancels_on_reject_with_a_reason_the_runtime_reads(
    rt: Actor, alice: User, transfer_class: TaskClass
) -> None:
    beliefs = [{"slot": "recipient_account", "value": "DE89", "source": "tool"}]
    instance = _plan(_open(rt, alice, beliefs=beliefs), rt)
    prompt = open_prompt(instance, "recipient_account")

    prompt_respond(
        prompt_id=prompt.pk, user=alice, action="reject", version=1, reason="wrong person"
    )

    instance = instance_for_runtime(instance.pk, rt.key)
    payload = selectors.instance_payload(instance)
    assert payload["status"] == "cancelled"
    assert payload["status_reason"] == "wrong person"
    assert payload["bindings"] is None
    assert {p["state"] for p in payload["prompts"]} == {"rejected", "cancelled"}
    assert next(p for p in payload["prompts"] if p["state"] == "rejected")["reason_given"] == (
        "wrong person"
    )


def test_it_replays_an_identical_repeat_and_refuses_a_different_one(
    rt: Actor, alice: User, transfer_class: TaskClass
) -> None:
    instance = _plan(_open(rt, alice), rt)
    prompt = open_prompt(instance, "memo")
    first = prompt_respond(
        prompt_id=prompt.pk, user=alice, action="answer", version=1, value="hello"
    )
    events = AuditEvent.objects.count()
    again = prompt_respond(
        prompt_id=prompt.pk, user=alice, action="answer", version=1, value=" hello "
    )
    assert (first.replayed, again.replayed) == (False, True)
    assert Belief.objects.filter(slot__key="memo").count() == 1
    assert AuditEvent.objects.count() == events
    with pytest.raises(Conflict) as excinfo:
        prompt_respond(prompt_id=prompt.pk, user=alice, action="answer", version=1, value="other")
    assert excinfo.value.code == "already_answered"


def test_it_returns_the_first_answer_for_a_retried_idempotency_key(
    rt: Actor, alice: User, transfer_class: TaskClass
) -> None:
    instance = _plan(_open(rt, alice), rt)
    prompt = open_prompt(instance, "memo")
    prompt_respond(
        prompt_id=prompt.pk,
        user=alice,
        action="answer",
        version=1,
        value="first",
        idempotency_key="k-1",
    )
    retry = prompt_respond(
        prompt_id=prompt.pk,
        user=alice,
        action="answer",
        version=1,
        value="first",
        idempotency_key="k-1",
    )
    assert retry.replayed
    # The same key with a different answer is refused: the key names one request.
    with pytest.raises(IdempotencyKeyMismatch):
        prompt_respond(
            prompt_id=prompt.pk,
            user=alice,
            action="answer",
            version=1,
            value="second",
            idempotency_key="k-1",
        )
    assert list(Belief.objects.filter(slot__key="memo").values_list("value", flat=True)) == [
        "first"
    ]
    other = open_prompt(instance, "reference")
    with pytest.raises(Conflict) as excinfo:
        prompt_respond(
            prompt_id=other.pk,
            user=alice,
            action="answer",
            version=1,
            value="x",
            idempotency_key="k-1",
        )
    assert excinfo.value.code == "idempotency_key_reused"


def test_it_writes_a_user_belief_with_the_world_seen_on_confirm(
    rt: Actor, alice: User, transfer_class: TaskClass
) -> None:
    _finished_run_1(rt, alice)
    run2 = _plan(_open(rt, alice, world=WORLD_2), rt)
    prompt = open_prompt(run2, "recipient_account")
    prompt_respond(
        prompt_id=prompt.pk, user=alice, action="confirm", version=1, acknowledged=["iban"]
    )
    belief = Belief.objects.get(instance=run2, slot__key="recipient_account")
    assert (belief.source, belief.value, belief.world_ref) == (
        "user",
        "DE89 3704",
        WORLD_2["recipient_account"],
    )
    run2.refresh_from_db()
    assert _items(run2)["recipient_account"]["rule"] == "R2"


def test_it_keeps_the_old_reference_when_the_runtime_states_no_world(
    rt: Actor, alice: User, transfer_class: TaskClass
) -> None:
    _finished_run_1(rt, alice)
    run2 = _plan(_open(rt, alice), rt)
    prompt = open_prompt(run2, "recipient_account")
    assert (prompt.rule, prompt.world_now, prompt.world_diff) == ("R6", None, [])
    prompt_respond(prompt_id=prompt.pk, user=alice, action="confirm", version=1)
    belief = Belief.objects.get(instance=run2, slot__key="recipient_account")
    assert belief.world_ref == WORLD_1["recipient_account"]


def test_it_shows_when_and_by_which_run_a_carried_confirm_was_acquired(
    rt: Actor, alice: User, transfer_class: TaskClass
) -> None:
    """S6."""
    run1 = _finished_run_1(rt, alice)
    acquired = Belief.objects.get(instance=run1, slot__key="recipient_account")
    run2 = _plan(_open(rt, alice, world=WORLD_2), rt)
    prompt = Prompt.objects.select_related("slot", "belief__instance").get(
        instance=run2, slot__key="recipient_account"
    )
    assert (prompt.route, prompt.rule) == ("CONFIRM", "R6")
    detail = selectors.prompt_detail(prompt)
    assert detail["belief"]["carried"] is True
    assert detail["belief"]["run_number"] == 1
    assert detail["belief"]["instance"] == str(run1.pk)
    assert detail["belief"]["turn"] == acquired.turn
    assert detail["belief"]["acquired_at"] == acquired.acquired_at.isoformat()
    assert detail["world_ref"] == WORLD_1["recipient_account"]
    assert detail["world_now"] == WORLD_2["recipient_account"]
    item = _items(run2)["recipient_account"]
    assert item["belief"]["run_number"] == 1
    assert item["belief"]["world_ref"] == WORLD_1["recipient_account"]


def test_it_cancels_an_instance_once(rt: Actor, alice: User, transfer_class: TaskClass) -> None:
    instance = _plan(_open(rt, alice), rt)
    instance_cancel(instance=instance, actor=rt, reason="user left")
    instance_cancel(instance=instance, actor=rt, reason="again")
    instance.refresh_from_db()
    assert (instance.status, instance.status_reason) == ("cancelled", "user left")
    assert set(instance.prompts.values_list("state", flat=True)) == {PromptState.CANCELLED}
    assert AuditEvent.objects.filter(kind="instance.cancelled").count() == 1
    with pytest.raises(Conflict) as excinfo:
        _plan(instance, rt)
    assert excinfo.value.code == "instance_cancelled"
    prompt = instance.prompts.first()
    with pytest.raises(Conflict):
        prompt_respond(prompt_id=prompt.pk, user=alice, action="answer", version=1, value="x")


# --- monotonic escalation ------------------------------------------------------------------


def _run_with_scope(rt: Actor, alice: User, scope: str) -> TaskInstance:
    instance = _plan(_open(rt, alice, key="access.grant"), rt)
    answer_all(instance, alice, {"scope": scope, "resource": "repo"})
    return instance


def test_it_asks_a_monotonic_scope_afresh_with_the_earlier_grant_as_context(
    rt: Actor, alice: User
) -> None:
    access(rt)
    _run_with_scope(rt, alice, "read")
    run2 = _plan(_open(rt, alice, key="access.grant"), rt)
    prompt = open_prompt(run2, "scope")
    assert (prompt.route, prompt.rule, prompt.prefill, prompt.context_value) == (
        "ASK",
        "R3",
        None,
        "read",
    )
    assert _items(run2)["scope"]["value"] is None

    with pytest.raises(InvalidInput) as excinfo:
        prompt_respond(prompt_id=prompt.pk, user=alice, action="answer", version=1, value="admin")
    assert "value_confirmation" in excinfo.value.fields
    with pytest.raises(InvalidInput):
        prompt_respond(
            prompt_id=prompt.pk,
            user=alice,
            action="answer",
            version=1,
            value="admin",
            value_confirmation="write",
        )
    assert not PromptResponse.objects.filter(prompt=prompt).exists()
    prompt_respond(
        prompt_id=prompt.pk,
        user=alice,
        action="answer",
        version=1,
        value="admin",
        value_confirmation="admin",
    )
    assert Belief.objects.get(instance=run2, slot__key="scope").value == "admin"


def test_it_needs_no_second_typing_for_the_same_grant_as_before(rt: Actor, alice: User) -> None:
    access(rt)
    _run_with_scope(rt, alice, "write")
    run2 = _plan(_open(rt, alice, key="access.grant"), rt)
    prompt = open_prompt(run2, "scope")
    prompt_respond(prompt_id=prompt.pk, user=alice, action="answer", version=1, value="write")
    assert Belief.objects.get(instance=run2, slot__key="scope").value == "write"


def test_it_needs_a_lower_grant_typed_twice_as_any_change_of_an_irreversible_value(
    rt: Actor, alice: User
) -> None:
    """Not an escalation, but a change of the earlier value the question shows, and a
    monotonic slot is irreversible: entered twice, like an edited IBAN."""
    access(rt)
    _run_with_scope(rt, alice, "write")
    run2 = _plan(_open(rt, alice, key="access.grant"), rt)
    prompt = open_prompt(run2, "scope")
    with pytest.raises(InvalidInput) as excinfo:
        prompt_respond(prompt_id=prompt.pk, user=alice, action="answer", version=1, value="read")
    assert excinfo.value.code == "edit_not_repeated"
    prompt_respond(
        prompt_id=prompt.pk,
        user=alice,
        action="answer",
        version=1,
        value="read",
        value_confirmation="read",
    )
    assert Belief.objects.get(instance=run2, slot__key="scope").value == "read"


def test_it_refuses_a_scope_outside_the_order(rt: Actor, alice: User) -> None:
    access(rt)
    instance = _plan(_open(rt, alice, key="access.grant"), rt)
    prompt = open_prompt(instance, "scope")
    with pytest.raises(InvalidInput) as excinfo:
        prompt_respond(
            prompt_id=prompt.pk,
            user=alice,
            action="answer",
            version=1,
            value="root",
            value_confirmation="root",
        )
    assert "value" in excinfo.value.fields


def test_it_measures_escalation_against_a_user_grant_not_a_tool_guess(
    rt: Actor, alice: User
) -> None:
    """A tool's current 'admin' is not an earlier grant: typing 'admin' over an earlier user
    grant of 'read' is an escalation and must be typed twice."""
    access(rt)
    _run_with_scope(rt, alice, "read")
    run2 = _plan(
        _open(
            rt,
            alice,
            key="access.grant",
            beliefs=[{"slot": "scope", "value": "admin", "source": "tool"}],
        ),
        rt,
    )
    prompt = open_prompt(run2, "scope")
    assert (prompt.rule, prompt.prefill) == ("R3", None)
    with pytest.raises(InvalidInput) as excinfo:
        prompt_respond(prompt_id=prompt.pk, user=alice, action="answer", version=1, value="admin")
    assert "value_confirmation" in excinfo.value.fields


# --- expiry --------------------------------------------------------------------------------


def test_it_expires_blocking_prompts_past_their_ttl(
    rt: Actor, alice: User, transfer_class: TaskClass
) -> None:
    with time_machine.travel("2025-03-01 12:00:00+00:00", tick=False):
        instance = _plan(_open(rt, alice), rt)
        prompt = open_prompt(instance, "memo")
        assert prompt.expires_at == timezone.now() + settings.CONSOLE_PROMPT_TTL
        assert instances_expire() == 0
    later = timezone.now().replace(year=2025, month=3, day=1, hour=12) + (
        settings.CONSOLE_PROMPT_TTL + timedelta(seconds=1)
    )
    assert instances_expire(now=later) == 1
    assert instances_expire(now=later) == 0
    instance.refresh_from_db()
    assert instance.status == InstanceStatus.EXPIRED
    assert instance.bindings is None
    assert set(instance.prompts.values_list("state", flat=True)) == {PromptState.EXPIRED}
    assert AuditEvent.objects.filter(kind="instance.expired", instance_id=instance.pk).count() == 1


def test_it_refuses_an_answer_after_the_ttl(
    rt: Actor, alice: User, transfer_class: TaskClass
) -> None:
    with time_machine.travel("2025-03-01 12:00:00+00:00", tick=False) as traveller:
        instance = _plan(_open(rt, alice), rt)
        prompt = open_prompt(instance, "memo")
        traveller.shift(settings.CONSOLE_PROMPT_TTL + timedelta(minutes=1))
        with pytest.raises(Conflict) as excinfo:
            prompt_respond(
                prompt_id=prompt.pk, user=alice, action="answer", version=1, value="late"
            )
    assert excinfo.value.code == "prompt_expired"
    assert not Belief.objects.filter(value="late").exists()
    # Refusing the late answer does not roll the expiry back with it.
    instance.refresh_from_db()
    assert instance.status == InstanceStatus.EXPIRED
    assert AuditEvent.objects.filter(kind="instance.expired", instance_id=instance.pk).count() == 1


def test_it_expires_lazily_when_an_instance_is_read(
    rt: Actor, alice: User, transfer_class: TaskClass
) -> None:
    with time_machine.travel("2025-03-01 12:00:00+00:00", tick=False) as traveller:
        instance = _plan(_open(rt, alice), rt)
        traveller.shift(settings.CONSOLE_PROMPT_TTL - timedelta(minutes=1))
        assert instance_for_principal(instance.pk, alice).status == "awaiting_user"
        traveller.shift(timedelta(minutes=2))
        read = instance_for_principal(instance.pk, alice)
        assert read.status == InstanceStatus.EXPIRED
        assert instance_for_runtime(instance.pk, rt.key).status == "expired"


def test_it_expires_from_the_management_command(
    rt: Actor, alice: User, transfer_class: TaskClass
) -> None:
    with time_machine.travel("2025-03-01 12:00:00+00:00", tick=False) as traveller:
        first = _plan(_open(rt, alice), rt)
        second = _plan(_open(rt, alice), rt)
        ready = _finished_run_1(rt, alice)
        traveller.shift(settings.CONSOLE_PROMPT_TTL + timedelta(hours=1))
        out = StringIO()
        call_command("expire_prompts", stdout=out)
    assert out.getvalue().strip() == "2 instances expired"
    statuses = dict(
        TaskInstance.objects.filter(pk__in=[first.pk, second.pk, ready.pk]).values_list(
            "pk", "status"
        )
    )
    assert statuses == {first.pk: "expired", second.pk: "expired", ready.pk: "ready"}


def test_it_does_not_expire_an_instance_with_only_assumptions_open(
    rt: Actor, alice: User, transfer_class: TaskClass
) -> None:
    beliefs = [
        {"slot": "recipient_account", "value": "DE89", "source": "user"},
        {"slot": "memo", "value": "m", "source": "user"},
        {"slot": "reference", "value": "r", "source": "tool"},
    ]
    instance = _plan(_open(rt, alice, beliefs=beliefs), rt)
    assert instance.status == InstanceStatus.READY
    assert open_prompt(instance, "reference").expires_at is None
    assert instances_expire(now=timezone.now() + timedelta(days=30)) == 0


# --- registration --------------------------------------------------------------------------


def test_it_refuses_a_risk_class_from_a_runtime_and_stores_a_suggestion(rt: Actor) -> None:
    with pytest.raises(InvalidInput) as excinfo:
        register_task_class(key="x", slots=[{"key": "a", "risk_class": "cosmetic"}], actor=rt)
    assert "slots[0].risk_class" in excinfo.value.fields
    assert not TaskClass.objects.filter(key="x").exists()
    task_class = register("x", actor=rt, slots=[{"key": "a", "suggested_risk": "cosmetic"}])
    slot = task_class.slots.get()
    assert (slot.risk_class, slot.suggested_risk) == ("unclassified", "cosmetic")


def test_an_open_slots_class_grows_a_slot_only_for_the_action_that_names_it(
    rt: Actor, alice: User, transfer_class: TaskClass
) -> None:
    transfer_class.open_slots = True
    transfer_class.save()
    instance = _open(rt, alice)
    record_belief(
        instance=instance,
        data={"slot": "ship_to", "value": "1 Main St", "source": "tool"},
        actor=rt,
    )
    slot = transfer_class.slots.get(key="ship_to")
    assert slot.risk_class == "unclassified" and not slot.declared
    instance = _plan(instance, rt)
    item = _items(instance)["ship_to"]
    assert (item["route"], item["rule"]) == ("CONFIRM", "R4")
    assert item["effective_risk"] == "irreversible"
    assert item["risk_reason"] == "unclassified: treated as irreversible"
    # Another action of the class does not grow a question for it.
    other = _plan(_open(rt, alice), rt)
    assert "ship_to" not in _items(other)
    assert "ship_to" not in other.action_slots


def test_a_belief_for_a_slot_the_class_does_not_have_is_refused(
    rt: Actor, alice: User, transfer_class: TaskClass
) -> None:
    instance = _open(rt, alice)
    with pytest.raises(InvalidInput) as refused:
        record_belief(
            instance=instance,
            data={"slot": "ship_to", "value": "1 Main St", "source": "tool"},
            actor=rt,
        )
    assert refused.value.code == "unknown_slot"
    assert not transfer_class.slots.filter(key="ship_to").exists()


def test_it_keeps_decision_links_a_later_registration_leaves_out(
    rt: Actor, transfer_class: TaskClass
) -> None:
    register_task_class(
        key="payments.transfer",
        slots=[{"key": "recipient_account"}],
        decisions=[{"key": "send_transfer", "slots": []}],
        actor=rt,
    )
    slot = transfer_class.slots.get(key="recipient_account")
    assert [d.key for d in slot.decisions.all()] == ["send_transfer"]
    assert selectors.slot_effective_risk(slot).risk == "irreversible"


@pytest.mark.parametrize("typed", ["1e400", "-1E999", "abc", True])
def test_it_refuses_a_number_answer_that_is_not_a_finite_number(
    rt: Actor, alice: User, typed: object
) -> None:
    register("calc", actor=rt, slots=[{"key": "amount", "value_type": "number"}])
    instance = _plan(_open(rt, alice, key="calc"), rt)
    prompt = open_prompt(instance, "amount")
    with pytest.raises(InvalidInput) as excinfo:
        prompt_respond(prompt_id=prompt.pk, user=alice, action="answer", version=1, value=typed)
    assert "value" in excinfo.value.fields
    prompt_respond(prompt_id=prompt.pk, user=alice, action="answer", version=1, value="12.5")
    assert Belief.objects.get(slot__key="amount").value == 12.5


def test_it_refuses_a_world_whose_slot_statement_is_not_an_object(
    rt: Actor, alice: User, transfer_class: TaskClass
) -> None:
    with pytest.raises(InvalidInput) as excinfo:
        _open(rt, alice, world={"recipient_account": "DE89"})
    assert "world.recipient_account" in excinfo.value.fields
    assert not TaskInstance.objects.exists()


def test_it_drops_a_vetoed_belief_from_a_parallel_open_instance_on_its_next_plan(
    rt: Actor, alice: User, transfer_class: TaskClass
) -> None:
    base = _plan(
        _open(rt, alice, beliefs=[{"slot": "reference", "value": "rent", "source": "tool"}]), rt
    )
    instance_cancel(instance=base, actor=rt)
    run_a = _plan(_open(rt, alice), rt)
    run_b = _plan(_open(rt, alice), rt)
    assert open_prompt(run_b, "reference").prefill == "rent"

    prompt_respond(
        prompt_id=open_prompt(run_a, "reference").pk, user=alice, action="veto", version=1
    )
    answer_all(run_b, alice, {"recipient_account": "DE89", "memo": "m"})

    # Run B re-planned after each answer: the vetoed 'rent' is no longer an assumption.
    assert run_b.status == InstanceStatus.AWAITING_USER
    ask = open_prompt(run_b, "reference")
    assert (ask.route, ask.rule, ask.prefill) == ("ASK", "R0", None)
    answer_all(run_b, alice, {"reference": "utilities"})
    assert run_b.bindings == {"recipient_account": "DE89", "memo": "m", "reference": "utilities"}


def test_it_asks_a_carried_irreversible_value_whose_world_reference_is_empty(
    rt: Actor, alice: User, transfer_class: TaskClass
) -> None:
    """An empty object anchors nothing: R5, not a CONFIRM that shows no reference (S6)."""
    base = _plan(
        _open(
            rt,
            alice,
            beliefs=[
                {"slot": "recipient_account", "value": "DE89", "source": "user", "world_ref": {}}
            ],
        ),
        rt,
    )
    instance_cancel(instance=base, actor=rt)
    run2 = _plan(_open(rt, alice, world={"recipient_account": {"iban": "DE89"}}), rt)
    item = _items(run2)["recipient_account"]
    assert (item["route"], item["rule"], item["value"]) == ("ASK", "R5", None)


# --- a downgrade binds nothing retroactively ------------------------------------------------


def test_it_keeps_a_blocking_prompt_blocking_after_a_downgrade(
    rt: Actor, alice: User, transfer_class: TaskClass
) -> None:
    _finished_run_1(rt, alice)
    run2 = _plan(_open(rt, alice, world=WORLD_2), rt)
    held = open_prompt(run2, "recipient_account")
    assert (held.route, held.rule, held.blocking) == ("CONFIRM", "R6", True)

    # A classifier lowers the decision the account feeds; the slot itself is only reversible.
    classify(transfer_class, decisions={"send_transfer": "reversible"})
    set_world(instance=run2, world={**WORLD_2, "memo": {"x": 1}}, actor=rt)
    run2 = _plan(run2, rt)

    held.refresh_from_db()
    assert (held.state, held.route, held.blocking, held.version) == ("open", "CONFIRM", True, 1)
    assert run2.status == InstanceStatus.AWAITING_USER
    assert _items(run2)["recipient_account"]["route"] == "CONFIRM"
    # A new instance plans with the new classes.
    run3 = _plan(_open(rt, alice, world=WORLD_2), rt)
    assert _items(run3)["recipient_account"]["route"] == "SURFACED"


def _blocking_counts(instance: TaskInstance) -> tuple[int, int]:
    """The count planning keeps on the instance, and the count of its blocking prompts."""
    instance.refresh_from_db()
    return instance.blocking_asked, Prompt.objects.filter(instance=instance, blocking=True).count()


def test_it_counts_a_prompt_that_becomes_blocking_and_keeps_counting_a_released_one(
    rt: Actor, alice: User, transfer_class: TaskClass
) -> None:
    beliefs = [{"slot": "reference", "value": "rent", "source": "inference", "turn": 1}]
    instance = _plan(_open(rt, alice, beliefs=beliefs), rt)
    surfaced = open_prompt(instance, "reference")
    assert not surfaced.blocking
    assert _blocking_counts(instance) == (2, 2)  # the account and the memo, asked

    # An upgrade makes the assumption a confirmation: one more question put to the person.
    classify(transfer_class, slots={"reference": "irreversible"})
    instance = _plan(instance, rt)
    surfaced.refresh_from_db()
    assert surfaced.blocking
    assert _blocking_counts(instance) == (3, 3)

    # The person's own answer releases the account's prompt; it was still asked.
    record_belief(
        instance=instance,
        data={"slot": "recipient_account", "value": "DE02", "source": "user", "turn": 2},
        actor=rt,
    )
    assert open_prompt(instance, "memo").blocking
    # What stays open is no question: the value the runtime reported, bound, listed for a veto.
    (reported,) = Prompt.objects.filter(
        instance=instance, slot__key="recipient_account", state=PromptState.OPEN
    )
    assert (reported.route, reported.blocking, reported.prefill) == ("SILENT", False, "DE02")
    assert _blocking_counts(instance) == (3, 3)


def test_it_lets_a_user_answer_release_a_blocking_prompt(
    rt: Actor, alice: User, transfer_class: TaskClass
) -> None:
    """The hold is for classification changes only: a new user belief still binds silently."""
    _finished_run_1(rt, alice)
    run2 = _plan(_open(rt, alice, world=WORLD_2), rt)
    prompt = open_prompt(run2, "recipient_account")
    record_belief(
        instance=run2,
        data={"slot": "recipient_account", "value": "DE02 1203", "source": "user", "turn": 2},
        actor=rt,
    )
    prompt.refresh_from_db()
    assert prompt.state == PromptState.SUPERSEDED


# --- registration never lowers a guard -------------------------------------------------------


def test_it_keeps_what_a_later_registration_leaves_out(rt: Actor, alice: User) -> None:
    register(
        "iam.grant",
        actor=rt,
        slots=[{"key": "scope", "label": "Access scope", "scope_order": ["read", "admin"]}],
    )
    register_task_class(key="iam.grant", slots=[{"key": "scope"}], actor=rt)
    slot = TaskClass.objects.get(key="iam.grant").slots.get(key="scope")
    assert slot.scope_order == ["read", "admin"]
    assert slot.label == "Access scope"


def test_it_refuses_a_runtime_changing_a_scope_order(rt: Actor) -> None:
    register("iam.grant", actor=rt, slots=[{"key": "scope", "scope_order": ["read", "admin"]}])
    with pytest.raises(InvalidInput) as excinfo:
        register_task_class(
            key="iam.grant", slots=[{"key": "scope", "scope_order": ["admin", "read"]}], actor=rt
        )
    assert "slots[0].scope_order" in excinfo.value.fields
    # Restating the same order is fine (registrations are idempotent).
    register_task_class(
        key="iam.grant", slots=[{"key": "scope", "scope_order": ["read", "admin"]}], actor=rt
    )


def test_it_refuses_an_acquisition_time_from_a_runtime(
    rt: Actor, alice: User, transfer_class: TaskClass
) -> None:
    instance = _open(rt, alice)
    with pytest.raises(InvalidInput) as excinfo:
        record_belief(
            instance=instance,
            data={"slot": "memo", "value": "x", "source": "tool", "acquired_at": "2020-01-01"},
            actor=rt,
        )
    assert "acquired_at" in excinfo.value.fields
