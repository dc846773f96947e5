"""The seed's adversarial cases A1–A6 and the convergence thesis, over HTTP."""

from __future__ import annotations

from typing import Any

import pytest

from beliefs.models import AuditEvent, Belief
from tests.support.api import API, Driver, by_slot

pytestmark = pytest.mark.django_db


def _changed_keys(item: dict[str, Any]) -> dict[str, str]:
    return {e["key"]: e["change"] for e in item["world_diff"]}


# --- A1: a recipient account changed since run 1 ------------------------------------------


def _transfer(api: Driver) -> None:
    api.register(
        "payments.transfer",
        slots=[
            {"key": "recipient_account", "label": "Recipient account"},
            {"key": "amount", "label": "Amount", "value_type": "number"},
        ],
        decisions=[{"key": "send_transfer", "slots": ["recipient_account", "amount"]}],
        risks={"recipient_account": "reversible", "amount": "reversible"},
        decision_risks={"send_transfer": "irreversible"},
    )


def test_it_catches_a_stale_recipient_account_A1(api: Driver) -> None:
    _transfer(api)
    world1 = {
        "recipient_account": {"iban": "DE89 3704 0044", "holder": "Bob Example"},
        "amount": {"currency": "EUR"},
    }
    run1 = api.open("payments.transfer", world=world1)
    plan1 = api.plan(run1)
    assert {i["rule"] for i in plan1["items"]} == {"R0"}
    assert plan1["blocking"] == 2
    done = api.answer_all(run1, {"recipient_account": "DE89 3704 0044", "amount": 120})
    assert done["status"] == "ready"
    assert done["bindings"] == {"recipient_account": "DE89 3704 0044", "amount": 120}

    world2 = {
        "recipient_account": {"iban": "GB33 BUKB 2020", "holder": "Bob Example"},
        "amount": {"currency": "EUR"},
    }
    run2 = api.open("payments.transfer", world=world2)
    item = by_slot(api.plan(run2))["recipient_account"]

    assert (item["route"], item["rule"]) == ("CONFIRM", "R6")
    assert item["effective_risk"] == "irreversible"
    assert item["risk_reason"] == "inherited from decision send_transfer (irreversible)"
    assert item["value"] == "DE89 3704 0044"
    assert item["belief"]["carried"] is True
    assert item["belief"]["run_number"] == 1
    assert _changed_keys(item) == {"holder": "unchanged", "iban": "changed"}
    prompt = api.prompt(run2, "recipient_account")
    assert prompt["blocking"] is True
    assert prompt["prefill"] == "DE89 3704 0044"
    assert api.instance(run2)["status"] == "awaiting_user"

    # A change of an irreversible value is sent twice.
    once = api.respond(prompt, "edit", value="GB33 BUKB 2020")
    assert (once.status_code, once.json()["error"]) == (400, "edit_not_repeated")
    edited = api.respond(
        prompt, "edit", value="GB33 BUKB 2020", value_confirmation="GB33 BUKB 2020"
    )
    assert edited.status_code == 200
    assert edited.json()["instance"]["status"] == "awaiting_user"  # the amount is still open
    amount = api.prompt(run2, "amount")
    assert (amount["route"], amount["rule"], amount["prefill"]) == ("CONFIRM", "R6", 120)
    confirmed = api.respond(amount, "confirm")
    assert confirmed.status_code == 200
    assert confirmed.json()["instance"]["bindings"] == {
        "recipient_account": "GB33 BUKB 2020",
        "amount": 120,
    }


# --- A2: a tool fetched the value in this very run ----------------------------------------


def test_it_confirms_a_current_tool_value_showing_its_source_A2(api: Driver) -> None:
    _transfer(api)
    run = api.open(
        "payments.transfer",
        beliefs=[
            {"slot": "recipient_account", "value": "DE00 POISON", "source": "tool", "turn": 3},
            {"slot": "amount", "value": 50, "source": "user", "turn": 2},
        ],
    )
    items = by_slot(api.plan(run))
    assert (items["recipient_account"]["route"], items["recipient_account"]["rule"]) == (
        "CONFIRM",
        "R4",
    )
    assert items["recipient_account"]["belief"]["source"] == "tool"
    assert items["recipient_account"]["belief"]["carried"] is False
    assert "tool" in items["recipient_account"]["reason"]
    assert (items["amount"]["route"], items["amount"]["rule"]) == ("SILENT", "R2")
    prompt = api.prompt(run, "recipient_account")
    assert prompt["belief"]["source"] == "tool"
    assert prompt["prefill"] == "DE00 POISON"


# --- A3: a shipping address nobody classified -----------------------------------------------


def test_it_confirms_an_unclassified_shipping_address_A3(api: Driver) -> None:
    api.register(
        "shop.ship",
        slots=[
            {"key": "address", "label": "Shipping address", "suggested_risk": "reversible"},
            {"key": "gift_wrap", "label": "Gift wrap", "value_type": "boolean"},
        ],
        decisions=[{"key": "ship_order", "slots": ["address", "gift_wrap"]}],
        risks={"gift_wrap": "reversible"},  # the address is left unclassified
        decision_risks={"ship_order": "reversible"},
    )
    world = {"address": {"postcode": "10115"}}
    run1 = api.open("shop.ship", world=world)
    api.plan(run1)
    api.answer_all(run1, {"address": "1 Main St, Berlin", "gift_wrap": True})

    run2 = api.open("shop.ship", world={"address": {"postcode": "10115"}})
    items = by_slot(api.plan(run2))

    address = items["address"]
    assert address["route"] == "CONFIRM"
    assert address["route"] != "SURFACED"
    assert (address["rule"], address["effective_risk"]) == ("R6", "irreversible")
    assert address["risk_reason"] == "unclassified: treated as irreversible"
    assert (items["gift_wrap"]["route"], items["gift_wrap"]["rule"]) == ("SURFACED", "R7")
    task_class = api.runtime.get(f"{API}/task-classes/shop.ship/").json()
    (slot,) = [s for s in task_class["slots"] if s["key"] == "address"]
    assert (slot["risk_class"], slot["suggested_risk"]) == ("unclassified", "reversible")


# --- A4: a composite counterparty; only the entity id changed ------------------------------


def test_it_confirms_a_policy_slot_that_feeds_an_irreversible_decision_A4(api: Driver) -> None:
    api.register(
        "legal.contract",
        slots=[
            {"key": "counterparty_name", "label": "Counterparty name"},
            {"key": "counterparty_entity_id", "label": "Counterparty entity id"},
            {"key": "counterparty_jurisdiction", "label": "Jurisdiction"},
        ],
        decisions=[
            {
                "key": "sign_contract",
                "slots": [
                    "counterparty_name",
                    "counterparty_entity_id",
                    "counterparty_jurisdiction",
                ],
            }
        ],
        risks={
            "counterparty_name": "reversible",
            "counterparty_entity_id": "policy",
            "counterparty_jurisdiction": "policy",
        },
        decision_risks={"sign_contract": "irreversible"},
    )
    world1 = {"counterparty_entity_id": {"registry": "HRB", "lei": "5299001"}}
    run1 = api.open("legal.contract", world=world1)
    api.plan(run1)
    api.answer_all(
        run1,
        {
            "counterparty_name": "ACME GmbH",
            "counterparty_entity_id": "HRB 1234",
            "counterparty_jurisdiction": "DE",
        },
    )

    world2 = {"counterparty_entity_id": {"registry": "HRB", "lei": "5299999"}}
    run2 = api.open("legal.contract", world=world2)
    items = by_slot(api.plan(run2))

    entity = items["counterparty_entity_id"]
    assert entity["route"] != "SURFACED"
    assert (entity["route"], entity["rule"]) == ("CONFIRM", "R6")
    assert entity["risk_reason"] == "inherited from decision sign_contract (irreversible)"
    assert _changed_keys(entity) == {"lei": "changed", "registry": "unchanged"}
    # The other parts have no world reference: nothing anchors them, so they are asked.
    assert {items[k]["rule"] for k in ("counterparty_name", "counterparty_jurisdiction")} == {"R5"}
    assert api.instance(run2)["blocking"] == 3


# --- A5: consent whose scope, policy version and date changed -------------------------------


def test_it_confirms_consent_against_a_changed_world_showing_exactly_what_changed_A5(
    api: Driver,
) -> None:
    api.register(
        "privacy.consent",
        slots=[{"key": "consent", "label": "Consent", "choices": ["yes", "no"]}],
        decisions=[{"key": "share_data", "slots": ["consent"]}],
        risks={"consent": "irreversible"},
        decision_risks={"share_data": "irreversible"},
    )
    ref = {
        "scope": "email",
        "policy_version": "2024-01",
        "date": "2024-02-01",
        "subject": "newsletter",
    }
    run1 = api.open("privacy.consent", world={"consent": ref})
    api.plan(run1)
    api.answer_all(run1, {"consent": "yes"})
    assert Belief.objects.get(source="user").world_ref == ref

    now = {
        "scope": "email+phone",
        "policy_version": "2025-06",
        "date": "2025-07-01",
        "subject": "newsletter",
    }
    run2 = api.open("privacy.consent", world={"consent": now})
    item = by_slot(api.plan(run2))["consent"]

    assert (item["route"], item["rule"]) == ("CONFIRM", "R6")
    assert item["value"] == "yes"
    changed = [e for e in item["world_diff"] if e["change"] != "unchanged"]
    assert {e["key"] for e in changed} == {"scope", "policy_version", "date"}
    assert {e["key"]: (e["old"], e["new"]) for e in changed} == {
        "scope": ("email", "email+phone"),
        "policy_version": ("2024-01", "2025-06"),
        "date": ("2024-02-01", "2025-07-01"),
    }
    assert _changed_keys(item)["subject"] == "unchanged"
    prompt = api.prompt(run2, "consent")
    assert (prompt["world_ref"], prompt["world_now"]) == (ref, now)
    assert prompt["belief"]["acquired_at"]
    assert prompt["belief"]["run_number"] == 1


# --- A6: a monotonic scope is asked afresh, never pre-filled -------------------------------


def test_it_asks_a_monotonic_scope_afresh_and_makes_escalation_typed_twice_A6(
    api: Driver,
) -> None:
    api.register(
        "access.grant",
        slots=[{"key": "scope", "label": "Scope", "scope_order": ["read", "write", "admin"]}],
        decisions=[{"key": "grant_access", "slots": ["scope"]}],
        risks={"scope": "policy"},
        decision_risks={"grant_access": "policy"},
        monotonic=("scope",),
    )
    run1 = api.open("access.grant", world={"scope": {"repo": "main"}})
    api.plan(run1)
    api.answer_all(run1, {"scope": "read"})

    run2 = api.open("access.grant", world={"scope": {"repo": "main"}})
    item = by_slot(api.plan(run2))["scope"]
    assert (item["route"], item["rule"]) == ("ASK", "R3")
    assert item["risk_reason"] == "monotonic scope"
    assert item["value"] is None
    prompt = api.prompt(run2, "scope")
    assert prompt["prefill"] is None
    assert prompt["context_value"] == "read"

    once = api.respond(prompt, "answer", value="admin")
    assert once.status_code == 400
    assert "value_confirmation" in once.json()["fields"]
    confirm = api.respond(prompt, "confirm")
    assert confirm.status_code == 400
    assert "action" in confirm.json()["fields"]
    twice = api.respond(prompt, "answer", value="admin", value_confirmation="admin")
    assert twice.status_code == 200, twice.json()
    assert twice.json()["instance"]["bindings"] == {"scope": "admin"}


# --- convergence ---------------------------------------------------------------


def test_it_converges_to_one_blocking_prompt_per_irreversible_slot(api: Driver) -> None:
    api.register(
        "ops.mixed",
        slots=[
            {"key": "theme", "label": "Theme"},
            {"key": "note", "label": "Note"},
            {"key": "retention", "label": "Retention"},
            {"key": "account", "label": "Account"},
            {"key": "payee", "label": "Payee"},
            {"key": "unanchored", "label": "Unanchored"},
            {"key": "role", "label": "Role", "scope_order": ["viewer", "editor", "owner"]},
        ],
        decisions=[{"key": "pay", "slots": ["payee"]}],
        risks={
            "theme": "cosmetic",
            "note": "reversible",
            "retention": "policy",
            "account": "irreversible",
            "payee": "reversible",
            "unanchored": "irreversible",
            "role": "reversible",
        },
        decision_risks={"pay": "irreversible"},
        monotonic=("role",),
    )
    world = {
        "note": {"v": 1},
        "retention": {"v": 1},
        "account": {"bank": "A"},
        "payee": {"lei": "1"},
        "role": {"org": "x"},
    }
    values = {
        "theme": "dark",
        "note": "hello",
        "retention": "30d",
        "account": "ACC-1",
        "payee": "Bob",
        "unanchored": "U",
        "role": "editor",
    }

    # Run 1, no history: every slot asked (R0).
    run1 = api.open("ops.mixed", world=world)
    plan1 = api.plan(run1)
    assert {i["slot"]: i["rule"] for i in plan1["items"]} == dict.fromkeys(values, "R0")
    assert plan1["blocking"] == len(values)

    # Once answered, re-planning the same instance binds them all silently.
    api.answer_all(run1, values)
    replan = api.plan(run1)
    assert {i["slot"]: i["route"] for i in replan["items"]} == dict.fromkeys(values, "SILENT")
    assert (replan["status"], replan["blocking"], replan["bindings"]) == ("ready", 0, values)

    # Run 2, everything carried.
    run2 = api.open("ops.mixed", world=world)
    plan2 = api.plan(run2)
    routes = {i["slot"]: (i["route"], i["rule"]) for i in plan2["items"]}
    assert routes == {
        "theme": ("SILENT", "R1"),
        "note": ("SURFACED", "R7"),
        "retention": ("SURFACED", "R7"),
        "account": ("CONFIRM", "R6"),
        "payee": ("CONFIRM", "R6"),
        "unanchored": ("ASK", "R5"),
        "role": ("ASK", "R3"),
    }
    irreversible = [i for i in plan2["items"] if i["effective_risk"] == "irreversible"]
    assert len(irreversible) == 4
    assert plan2["blocking"] == len(irreversible)
    blocking_prompts = [
        p for p in api.instance(run2)["prompts"] if p["state"] == "open" and p["blocking"]
    ]
    assert sorted(p["slot"] for p in blocking_prompts) == sorted(i["slot"] for i in irreversible)
    reversible = [i for i in plan2["items"] if i["effective_risk"] in ("reversible", "policy")]
    assert all(not i["prompt"]["blocking"] for i in reversible)
    assert AuditEvent.objects.filter(kind="instance.planned", instance_id=run2).count() == 1
