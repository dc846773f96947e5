"""The classification services: reasons, audit events, four eyes, re-planning."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from beliefs.errors import Conflict, InvalidInput, PermissionDenied
from beliefs.models import (
    AuditEvent,
    Decision,
    Prompt,
    RiskChangeRequest,
    RuntimeAPIKey,
    Slot,
    TaskInstance,
)
from beliefs.services import classification as c
from beliefs.services.audit import SYSTEM, Actor
from tests.builders import answered_run, classify, contract, open_prompt_or_none, run, shop

pytestmark = pytest.mark.django_db

ANSWERS = {"item_sku": "A", "shipping_address": "x", "delivery_speed": "std", "gift_wrap": False}


def slot(key: str) -> Slot:
    return Slot.objects.select_related("task_class").get(key=key)


def decision(key: str) -> Decision:
    return Decision.objects.select_related("task_class").get(key=key)


def prompt_state(instance: TaskInstance) -> list[tuple[str, str, bool, int, str]]:
    return list(
        Prompt.objects.filter(instance=instance)
        .order_by("slot__position")
        .values_list("slot__key", "route", "blocking", "version", "state")
    )


def events(kind: str) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(kind=kind).order_by("id"))


# --- reasons, audit, permissions ----------------------------------------------------------


def test_it_audits_a_change_with_who_before_after_and_reason(carol: User) -> None:
    shop()
    result = c.slot_set_risk(
        slot=slot("shipping_address"),
        risk_class="irreversible",
        reason="  A3: a stale address ships  ",
        actor=Actor(user=carol),
    )
    assert result.outcome == "applied"
    assert slot("shipping_address").risk_class == "irreversible"
    [event] = events("classification.slot_risk")
    assert (event.actor, event.actor_user, event.subject) == ("carol", carol, "shipping_address")
    assert event.task_class.key == "commerce.ship_order"
    assert event.data["before"] == "unclassified"
    assert event.data["after"] == "irreversible"
    assert event.data["reason"] == "A3: a stale address ships"


@pytest.mark.parametrize("reason", ["", "   ", None, 7])
def test_it_refuses_a_change_without_a_reason(carol: User, reason: object) -> None:
    shop()
    with pytest.raises(InvalidInput) as refused:
        c.slot_set_risk(
            slot=slot("shipping_address"),
            risk_class="irreversible",
            reason=reason,
            actor=Actor(user=carol),
        )
    assert "reason" in refused.value.fields
    assert slot("shipping_address").risk_class == "unclassified"
    assert not AuditEvent.objects.filter(kind__startswith="classification.").exists()


def test_it_refuses_an_unknown_class_and_a_return_to_unclassified(carol: User) -> None:
    shop()
    for bad in ("catastrophic", "unclassified", None):
        with pytest.raises(InvalidInput) as refused:
            c.slot_set_risk(
                slot=slot("item_sku"), risk_class=bad, reason="r", actor=Actor(user=carol)
            )
        assert "risk_class" in refused.value.fields


def test_it_lets_only_classifiers_change_anything(
    alice: User, rita: User, runtime_key: tuple[RuntimeAPIKey, str]
) -> None:
    shop()
    for actor in (Actor(user=alice), Actor(user=rita), Actor(key=runtime_key[0]), SYSTEM):
        with pytest.raises(PermissionDenied):
            c.slot_set_risk(
                slot=slot("item_sku"), risk_class="irreversible", reason="r", actor=actor
            )
        with pytest.raises(PermissionDenied):
            c.decision_set_risk(
                decision=decision("ship"), risk_class="irreversible", reason="r", actor=actor
            )
    assert slot("item_sku").risk_class == "reversible"


def test_it_writes_nothing_for_a_change_to_the_same_value(carol: User) -> None:
    shop()
    result = c.slot_set_risk(
        slot=slot("item_sku"), risk_class="reversible", reason="r", actor=Actor(user=carol)
    )
    assert result.outcome == "unchanged"
    assert not AuditEvent.objects.filter(kind__startswith="classification.").exists()


# --- four eyes ---------------------------------------------------------------------------


def request_address_downgrade(carol: User) -> RiskChangeRequest:
    result = c.slot_set_risk(
        slot=slot("shipping_address"),
        risk_class="reversible",
        reason="addresses are editable",
        actor=Actor(user=carol),
    )
    assert result.outcome == "requested"
    return result.request


def test_it_holds_a_downgrade_out_of_irreversible_as_a_request(carol: User) -> None:
    task_class = shop()
    classify(task_class, slots={"shipping_address": "irreversible"})
    change_request = request_address_downgrade(carol)
    assert slot("shipping_address").risk_class == "irreversible"
    assert (change_request.state, change_request.field) == ("pending", "risk_class")
    assert (change_request.before, change_request.after) == ("irreversible", "reversible")
    assert change_request.requested_by == carol
    [event] = events("classification.change_requested")
    assert event.data["request"] == change_request.pk
    assert (event.data["before"], event.data["after"]) == ("irreversible", "reversible")
    assert event.data["reason"] == "addresses are editable"
    assert not events("classification.slot_risk")


def test_it_holds_classifying_an_unclassified_slot_below_irreversible(carol: User) -> None:
    shop()
    change_request = request_address_downgrade(carol)
    assert change_request.before == "unclassified"
    assert slot("shipping_address").risk_class == "unclassified"


def test_it_refuses_the_requester_approving_their_own_request(carol: User) -> None:
    shop()
    change_request = request_address_downgrade(carol)
    with pytest.raises(PermissionDenied, match="cannot approve it"):
        c.risk_change_request_approve(
            change_request=change_request, reason="looks fine", actor=Actor(user=carol)
        )
    change_request.refresh_from_db()
    assert change_request.state == "pending"
    assert slot("shipping_address").risk_class == "unclassified"
    assert not events("classification.change_approved")


def test_it_lets_a_second_classifier_approve(carol: User, cathy: User) -> None:
    shop()
    change_request = request_address_downgrade(carol)
    result = c.risk_change_request_approve(
        change_request=change_request, reason="checked", actor=Actor(user=cathy)
    )
    assert result.outcome == "applied"
    assert slot("shipping_address").risk_class == "reversible"
    change_request.refresh_from_db()
    assert (change_request.state, change_request.decided_by) == ("approved", cathy)
    assert (change_request.decision_reason, change_request.decided_at is not None) == (
        "checked",
        True,
    )
    [approved] = events("classification.change_approved")
    assert (approved.actor, approved.data["requested_by"]) == ("cathy", "carol")
    assert approved.data["reason"] == "checked"
    [applied] = events("classification.slot_risk")
    assert (applied.data["before"], applied.data["after"]) == ("unclassified", "reversible")
    assert (applied.data["requested_by"], applied.data["approved_by"]) == ("carol", "cathy")
    with pytest.raises(Conflict, match="already approved by cathy"):
        c.risk_change_request_approve(
            change_request=change_request, reason="again", actor=Actor(user=cathy)
        )


def test_it_leaves_everything_as_it_was_on_refusal(carol: User, cathy: User, alice: User) -> None:
    task_class = shop()
    classify(task_class, slots={"shipping_address": "irreversible"})
    answered_run(task_class, alice, ANSWERS)
    run_2 = run(task_class, alice)
    before = prompt_state(run_2)
    change_request = request_address_downgrade(carol)
    result = c.risk_change_request_refuse(
        change_request=change_request, reason="addresses go stale", actor=Actor(user=cathy)
    )
    assert result.outcome == "unchanged"
    assert slot("shipping_address").risk_class == "irreversible"
    assert prompt_state(run_2) == before
    change_request.refresh_from_db()
    assert (change_request.state, change_request.decided_by) == ("refused", cathy)
    [refused] = events("classification.change_refused")
    assert (refused.data["reason"], refused.data["withdrawn"]) == ("addresses go stale", False)
    with pytest.raises(Conflict):
        c.risk_change_request_approve(
            change_request=change_request, reason="x", actor=Actor(user=cathy)
        )


def test_it_lets_the_requester_withdraw(carol: User) -> None:
    shop()
    change_request = request_address_downgrade(carol)
    c.risk_change_request_refuse(
        change_request=change_request, reason="wrong slot", actor=Actor(user=carol)
    )
    change_request.refresh_from_db()
    assert change_request.state == "refused"
    assert events("classification.change_refused")[0].data["withdrawn"] is True


def test_it_refuses_a_second_request_for_the_same_field(carol: User, cathy: User) -> None:
    shop()
    request_address_downgrade(carol)
    with pytest.raises(Conflict, match="already waiting"):
        c.slot_set_risk(
            slot=slot("shipping_address"),
            risk_class="cosmetic",
            reason="r",
            actor=Actor(user=cathy),
        )
    assert RiskChangeRequest.objects.count() == 1


def test_it_refuses_to_approve_a_request_whose_target_changed(carol: User, cathy: User) -> None:
    shop()
    change_request = request_address_downgrade(carol)  # from unclassified
    c.slot_set_risk(
        slot=slot("shipping_address"),
        risk_class="irreversible",
        reason="classify it properly first",
        actor=Actor(user=cathy),
    )
    with pytest.raises(Conflict, match="changed since"):
        c.risk_change_request_approve(
            change_request=change_request, reason="ok", actor=Actor(user=cathy)
        )
    assert slot("shipping_address").risk_class == "irreversible"


def test_it_holds_clearing_monotonic_and_applies_it_once_approved(carol: User, cathy: User) -> None:
    contract()
    result = c.slot_set_monotonic(
        slot=slot("scope"), monotonic=False, reason="not a grant", actor=Actor(user=carol)
    )
    assert result.outcome == "requested"
    assert slot("scope").monotonic is True
    assert (result.request.before, result.request.after) == (True, False)
    c.risk_change_request_approve(
        change_request=result.request, reason="agreed", actor=Actor(user=cathy)
    )
    assert slot("scope").monotonic is False
    [event] = events("classification.slot_monotonic")
    assert (event.data["before"], event.data["after"]) == (True, False)


def test_it_holds_a_decision_downgrade_that_drops_its_slots(carol: User, cathy: User) -> None:
    contract()
    # entity_id feeds sign and register: lowering sign alone changes no effective risk, but it
    # lowers the decision's own class out of irreversible, so it waits too.
    result = c.decision_set_risk(
        decision=decision("sign"), risk_class="policy", reason="r", actor=Actor(user=carol)
    )
    assert result.outcome == "requested"
    assert decision("sign").risk_class == "irreversible"
    c.risk_change_request_approve(
        change_request=result.request, reason="ok", actor=Actor(user=cathy)
    )
    applied = events("classification.decision_risk")[-1]
    assert [(e["slot"], e["after"]) for e in applied.data["effective"]] == [("name", "policy")]


# --- re-planning -------------------------------------------------------------------------


def test_it_makes_prompts_blocking_in_open_instances_on_an_upgrade(
    carol: User, alice: User
) -> None:
    task_class = shop()
    classify(task_class, slots={"shipping_address": "irreversible"})
    answered_run(task_class, alice, ANSWERS)
    run_2 = run(task_class, alice)
    speed = open_prompt_or_none(run_2, "delivery_speed")
    assert (speed.route, speed.blocking) == ("SURFACED", False)

    result = c.slot_set_risk(
        slot=slot("delivery_speed"),
        risk_class="irreversible",
        reason="express costs money",
        actor=Actor(user=carol),
    )
    assert result.replanned == 1
    speed = open_prompt_or_none(run_2, "delivery_speed")
    assert (speed.route, speed.rule, speed.blocking) == ("ASK", "R5", True)
    assert speed.version == 2
    assert events("classification.slot_risk")[0].data["replanned"] == 1


def test_it_makes_every_slot_of_a_raised_decision_blocking(carol: User, alice: User) -> None:
    task_class = shop()
    classify(task_class, slots={"shipping_address": "irreversible"})
    answered_run(task_class, alice, ANSWERS)
    run_2 = run(task_class, alice)
    c.decision_set_risk(
        decision=decision("ship"), risk_class="irreversible", reason="r", actor=Actor(user=carol)
    )
    blocking = {
        key
        for key, _, is_blocking, _, state in prompt_state(run_2)
        if is_blocking and state == "open"
    }
    assert blocking == {"item_sku", "delivery_speed", "shipping_address"}


def test_it_makes_a_newly_linked_slot_blocking(carol: User, alice: User) -> None:
    task_class = shop()
    classify(
        task_class, slots={"shipping_address": "irreversible"}, decisions={"ship": "irreversible"}
    )
    answered_run(task_class, alice, ANSWERS)
    run_2 = run(task_class, alice)
    assert open_prompt_or_none(run_2, "gift_wrap") is None  # cosmetic: silent
    c.decision_set_slots(
        decision=decision("ship"),
        slot_keys=["item_sku", "delivery_speed", "gift_wrap"],
        reason="wrapping is part of the shipment",
        actor=Actor(user=carol),
    )
    assert open_prompt_or_none(run_2, "gift_wrap").route == "ASK"
    [event] = events("classification.decision_slots")
    assert event.data["before"] == ["delivery_speed", "item_sku"]
    assert event.data["after"] == ["delivery_speed", "gift_wrap", "item_sku"]


def test_it_makes_a_slot_monotonic_at_once(carol: User, alice: User) -> None:
    task_class = shop()
    classify(
        task_class, slots={"shipping_address": "irreversible", "delivery_speed": "irreversible"}
    )
    run_1 = run(
        task_class,
        alice,
        beliefs=[{"slot": "delivery_speed", "value": "std", "source": "tool", "world_ref": {}}],
    )
    assert open_prompt_or_none(run_1, "delivery_speed").route == "CONFIRM"
    c.slot_set_monotonic(
        slot=slot("delivery_speed"), monotonic=True, reason="r", actor=Actor(user=carol)
    )
    prompt = open_prompt_or_none(run_1, "delivery_speed")
    assert (prompt.route, prompt.rule, prompt.prefill) == ("ASK", "R3", None)


def test_it_leaves_already_planned_prompts_as_they_are_after_an_approved_downgrade(
    carol: User, cathy: User, alice: User
) -> None:
    task_class = shop()
    classify(task_class, slots={"shipping_address": "irreversible"})
    answered_run(task_class, alice, ANSWERS)
    run_2 = run(task_class, alice)
    before = prompt_state(run_2)
    assert ("shipping_address", "ASK", True, 1, "open") in before

    change_request = request_address_downgrade(carol)
    result = c.risk_change_request_approve(
        change_request=change_request, reason="ok", actor=Actor(user=cathy)
    )
    assert result.replanned == 0
    assert slot("shipping_address").risk_class == "reversible"
    assert prompt_state(run_2) == before
    run_2.refresh_from_db()
    assert run_2.status == "awaiting_user"
    # Plans made afterwards use the new class.
    run_3 = run(task_class, alice)
    assert open_prompt_or_none(run_3, "shipping_address").route == "SURFACED"


def test_it_re_plans_nothing_on_an_immediate_downgrade(carol: User, alice: User) -> None:
    task_class = shop()
    classify(task_class, slots={"shipping_address": "irreversible"})
    answered_run(task_class, alice, ANSWERS)
    run_2 = run(task_class, alice)
    before = prompt_state(run_2)
    result = c.slot_set_risk(
        slot=slot("item_sku"), risk_class="cosmetic", reason="r", actor=Actor(user=carol)
    )
    assert (result.outcome, result.replanned) == ("applied", 0)
    assert prompt_state(run_2) == before


# --- links and scope order ----------------------------------------------------------------


def test_it_refuses_an_unlink_that_would_need_a_second_classifier(carol: User) -> None:
    contract()
    with pytest.raises(InvalidInput) as refused:
        c.decision_set_slots(
            decision=decision("sign"), slot_keys=["entity_id"], reason="r", actor=Actor(user=carol)
        )
    assert refused.value.code == "needs_second_classifier"
    assert "name" in refused.value.detail
    assert {s.key for s in decision("sign").slots.all()} == {"name", "entity_id"}


def test_it_lets_an_unlink_through_once_the_slot_is_irreversible_on_its_own(carol: User) -> None:
    contract()
    actor = Actor(user=carol)
    c.slot_set_risk(slot=slot("name"), risk_class="irreversible", reason="r", actor=actor)
    result = c.decision_set_slots(
        decision=decision("sign"), slot_keys=["entity_id"], reason="r", actor=actor
    )
    assert result.outcome == "applied"
    assert {s.key for s in decision("sign").slots.all()} == {"entity_id"}


def test_it_refuses_unknown_slots_in_a_decision(carol: User) -> None:
    contract()
    with pytest.raises(InvalidInput) as refused:
        c.decision_set_slots(
            decision=decision("sign"),
            slot_keys=["name", "nope"],
            reason="r",
            actor=Actor(user=carol),
        )
    assert refused.value.fields == {"slots": ["unknown slot 'nope'"]}


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("read, write, admin", ["read", "write", "admin"]),
        (["read", "write", "admin", "root"], ["read", "write", "admin", "root"]),
    ],
)
def test_it_sets_a_scope_order_that_only_adds_scopes_at_the_top(
    carol: User, given: object, stored: object
) -> None:
    contract()
    result = c.slot_set_scope_order(
        slot=slot("scope"), scope_order=given, reason="r", actor=Actor(user=carol)
    )
    assert result.outcome == "applied"
    assert slot("scope").scope_order == stored
    [event] = events("classification.slot_scope_order")
    assert (event.data["before"], event.data["after"]) == (["read", "write"], stored)
    assert not RiskChangeRequest.objects.exists()


def test_it_sets_a_scope_order_where_there_was_none(carol: User) -> None:
    contract()
    result = c.slot_set_scope_order(
        slot=slot("reminder"), scope_order="low, high", reason="r", actor=Actor(user=carol)
    )
    assert result.outcome == "applied"
    assert slot("reminder").scope_order == ["low", "high"]


# Until 0016 these took effect with one classifier; they weaken the escalation guard.
@pytest.mark.parametrize(
    ("given", "stored", "why"),
    [
        ("write, read", ["write", "read"], "it puts write below read"),
        (["read", "admin"], ["read", "admin"], "it removes write"),
        ("read", None, "at least two"),  # not even a valid order: refused, not requested
        ("", None, "it clears the scope order read < write"),
        ("guest, read, write", ["guest", "read", "write"], "it adds guest below write"),
        ("read, admin, write", ["read", "admin", "write"], "it adds admin below write"),
    ],
)
def test_it_holds_a_weaker_scope_order_for_a_second_classifier(
    carol: User, cathy: User, given: str, stored: object, why: str
) -> None:
    contract()
    if why == "at least two":
        with pytest.raises(InvalidInput, match=why):
            c.slot_set_scope_order(
                slot=slot("scope"), scope_order=given, reason="r", actor=Actor(user=carol)
            )
        return
    result = c.slot_set_scope_order(
        slot=slot("scope"), scope_order=given, reason="flatten it", actor=Actor(user=carol)
    )
    assert result.outcome == "requested"
    assert why in result.message and "second classifier" in result.message
    assert slot("scope").scope_order == ["read", "write"]
    assert not events("classification.slot_scope_order")
    change_request = result.request
    assert change_request is not None
    assert (change_request.field, change_request.before, change_request.after) == (
        "scope_order",
        ["read", "write"],
        stored or [],  # a request stores "no order" as []
    )
    [requested] = events("classification.change_requested")
    assert why in requested.data["why"]
    with pytest.raises(PermissionDenied, match="cannot approve it"):
        c.risk_change_request_approve(
            change_request=change_request, reason="mine", actor=Actor(user=carol)
        )
    approved = c.risk_change_request_approve(
        change_request=change_request, reason="checked", actor=Actor(user=cathy)
    )
    assert approved.outcome == "applied"
    assert slot("scope").scope_order == stored
    [applied] = events("classification.slot_scope_order")
    assert (applied.data["before"], applied.data["after"]) == (["read", "write"], stored)
    assert (applied.data["requested_by"], applied.data["approved_by"]) == ("carol", "cathy")


def test_one_scope_order_request_waits_at_a_time_and_a_refusal_keeps_the_order(
    carol: User, cathy: User
) -> None:
    contract()
    result = c.slot_set_scope_order(
        slot=slot("scope"), scope_order="write, read", reason="r", actor=Actor(user=carol)
    )
    assert result.request is not None
    with pytest.raises(Conflict, match="already waiting"):
        c.slot_set_scope_order(
            slot=slot("scope"), scope_order="", reason="r", actor=Actor(user=cathy)
        )
    c.risk_change_request_refuse(
        change_request=result.request, reason="no", actor=Actor(user=cathy)
    )
    assert slot("scope").scope_order == ["read", "write"]
    again = c.slot_set_scope_order(
        slot=slot("scope"), scope_order="", reason="r", actor=Actor(user=cathy)
    )
    assert again.outcome == "requested"


def test_a_scope_order_request_is_out_of_date_once_the_order_changed(
    carol: User, cathy: User
) -> None:
    contract()
    result = c.slot_set_scope_order(
        slot=slot("scope"), scope_order="write, read", reason="r", actor=Actor(user=carol)
    )
    assert result.request is not None
    c.slot_set_scope_order(
        slot=slot("scope"), scope_order="read, write, admin", reason="r", actor=Actor(user=cathy)
    )
    with pytest.raises(Conflict, match="changed since"):
        c.risk_change_request_approve(
            change_request=result.request, reason="ok", actor=Actor(user=cathy)
        )
    assert slot("scope").scope_order == ["read", "write", "admin"]


@pytest.mark.parametrize("bad", ["admin", "read, read", "read, , admin", 3, ["a", 1]])
def test_it_refuses_a_bad_scope_order(carol: User, bad: object) -> None:
    contract()
    with pytest.raises(InvalidInput) as refused:
        c.slot_set_scope_order(
            slot=slot("scope"), scope_order=bad, reason="r", actor=Actor(user=carol)
        )
    assert "scope_order" in refused.value.fields
    assert slot("scope").scope_order == ["read", "write"]
