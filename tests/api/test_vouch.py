"""What a receipt vouches for, over the API: who vouched for each bound value, the world it was
bound with, meanings that expire, dates that must lie ahead, and decisions that want the
person's own act in the console."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Group, User

from beliefs.domain.canonical import worlds_digest
from beliefs.models import AuditEvent, Decision, Receipt, Slot
from beliefs.signing import verify
from tests.conftest import PASSWORD
from tests.support.api import API, Driver, by_slot

PAY = "attack.pay"
ATTACK = [
    {"slot": "iban", "value": "XX00ATTACKER0000", "source": "user", "turn": 1},
    {"slot": "amount", "value": 99999, "source": "user", "turn": 1},
]


def _register_pay(api: Driver) -> None:
    """A class whose slots nobody classified (so irreversible) and a decision over them."""
    response = api.runtime.put_json(
        f"{API}/task-classes/{PAY}/",
        {
            "name": "Pay",
            "slots": [{"key": "iban"}, {"key": "amount", "value_type": "number"}],
            "decisions": [{"key": "pay", "slots": ["iban", "amount"]}],
        },
    )
    assert response.status_code == 200, response.json()


def _claims(instance: dict[str, Any]) -> dict[str, Any]:
    assert instance["receipt"], instance
    return verify(instance["receipt"])


@pytest.mark.django_db
def test_a_runtime_key_alone_gets_a_receipt_that_says_the_runtime_vouched(api: Driver) -> None:
    _register_pay(api)
    instance_id = api.open(PAY, beliefs=ATTACK)
    plan = api.plan(instance_id)
    assert plan["status"] == "ready"
    assert {i["slot"]: (i["route"], i["rule"]) for i in plan["items"]} == {
        "iban": ("SILENT", "R2"),
        "amount": ("SILENT", "R2"),
    }
    instance = api.instance(instance_id)
    claims = _claims(instance)
    assert claims["vouched_by_runtime"] == ["iban", "amount"]
    assert claims["bound"] == {
        "iban": {"route": "SILENT", "rule": "R2", "source": "user", "via": "runtime"},
        "amount": {"route": "SILENT", "rule": "R2", "source": "user", "via": "runtime"},
    }
    assert claims["canonicalization"] == "RFC8785"
    # The instance read and the audit say the same.
    assert instance["vouched_by_runtime"] == ["iban", "amount"]
    assert instance["bound"] == claims["bound"]
    planned = AuditEvent.objects.filter(kind="instance.planned").latest("id")
    assert planned.data["vouched_by_runtime"] == ["iban", "amount"]

    # The person sees what was done on their behalf, with a veto...
    inbox = api.person.get("/").content.decode()
    assert f'id="reported-link-{instance_id}"' in inbox
    assert "Done on an agent’s report of your answer" in inbox
    page = api.person.get(f"/instances/{instance_id}/").content.decode()
    assert "report of your answer" in page and "XX00ATTACKER0000" in page
    (iban,) = [p for p in api.instance(instance_id)["prompts"] if p["slot"] == "iban"]
    assert (iban["route"], iban["blocking"], iban["state"]) == ("SILENT", False, "open")
    # ... and a veto revokes the unredeemed receipt and asks for the right value.
    vetoed = api.respond(iban, "veto", reason="I never gave this account")
    assert vetoed.status_code == 200, vetoed.json()
    assert Receipt.objects.get(instance_id=instance_id).revoked_at is not None
    after = api.instance(instance_id)
    assert after["status"] == "awaiting_user" and after["receipt"] is None
    assert by_slot(api.plan(instance_id))["iban"]["route"] == "ASK"
    # Vetoed (and no longer ready): it leaves the list of what was done on a report.
    assert f'id="reported-link-{instance_id}"' not in api.person.get("/").content.decode()


@pytest.mark.django_db
def test_with_the_person_confirming_in_the_console_the_same_attack_waits(api: Driver) -> None:
    _register_pay(api)
    Decision.objects.filter(key="pay").update(person_confirms=True)
    instance_id = api.open(PAY, beliefs=ATTACK)
    plan = api.plan(instance_id)
    assert plan["status"] == "awaiting_user" and plan["blocking"] == 2
    assert {(i["route"], i["rule"]) for i in plan["items"]} == {("CONFIRM", "R10")}
    assert api.instance(instance_id)["receipt"] is None
    # One click each (nothing changed): then the console vouches, not the runtime.
    for slot in ("iban", "amount"):
        response = api.respond(api.prompt(instance_id, slot), "confirm")
        assert response.status_code == 200, response.json()
    instance = api.instance(instance_id)
    assert instance["status"] == "ready"
    claims = _claims(instance)
    assert claims["vouched_by_runtime"] == []
    assert {b["via"] for b in claims["bound"].values()} == {"console"}


def _consent_class(api: Driver) -> None:
    api.register(
        "privacy.consent",
        slots=[{"key": "share_data", "value_type": "boolean"}],
        decisions=[{"key": "share", "slots": ["share_data"]}],
        risks={"share_data": "irreversible"},
        decision_risks={"share": "irreversible"},
    )


NARROW = {"scope": "analytics+marketing", "policy": "v4"}
WIDE = {"scope": "analytics+marketing+profiling", "policy": "v5"}


@pytest.mark.django_db
def test_equal_values_in_other_worlds_share_bindings_digest_but_not_worlds_digest(
    api: Driver,
) -> None:
    _consent_class(api)
    ready = []
    for world in (NARROW, WIDE):
        belief = {"slot": "share_data", "value": True, "source": "user", "world_ref": world}
        instance_id = api.open("privacy.consent", beliefs=[belief])
        assert api.plan(instance_id)["status"] == "ready"
        ready.append(api.instance(instance_id))
    narrow, wide = ready
    assert narrow["bindings_digest"] == wide["bindings_digest"]
    assert narrow["worlds_digest"] != wide["worlds_digest"]
    assert narrow["worlds_digest"] == worlds_digest({"share_data": NARROW})
    assert _claims(wide)["worlds_digest"] == wide["worlds_digest"]


@pytest.fixture
def privacy_board(db: None) -> Group:
    group = Group.objects.create(name="privacy-board")
    for name in ("cathy", "dan"):
        User.objects.create_user(name, password=PASSWORD).groups.add(group)
    return group


@pytest.mark.django_db
def test_an_approver_sees_the_changed_scope_and_must_tick_it(
    api: Driver, privacy_board: Group, person_client: Any
) -> None:
    _consent_class(api)
    Decision.objects.filter(key="share").update(approvals_required=1, approvers=privacy_board)
    run1 = api.open(
        "privacy.consent",
        beliefs=[{"slot": "share_data", "value": True, "source": "user", "world_ref": NARROW}],
    )
    api.plan(run1)
    cathy = person_client(User.objects.get(username="cathy"))
    first = api.instance(run1)
    body = {
        "action": "approve",
        "bindings_digest": first["bindings_digest"],
        "worlds_digest": first["worlds_digest"],
    }
    assert cathy.post_json(f"{API}/instances/{run1}/approval/", body).status_code == 200
    # Run 2 carries the consent into a wider world: the principal ticks each changed detail.
    run2 = api.open("privacy.consent", world={"share_data": WIDE})
    assert by_slot(api.plan(run2))["share_data"]["route"] == "CONFIRM"
    confirm = api.respond(
        api.prompt(run2, "share_data"), "confirm", acknowledged=["scope", "policy"]
    )
    assert confirm.status_code == 200, confirm.json()
    waiting = api.instance(run2)
    assert waiting["status"] == "awaiting_approval"
    shown = cathy.get(f"{API}/instances/{run2}/approval/").json()
    (world,) = shown["worlds"]
    assert world["world_ref"] == WIDE
    assert {c["key"]: (c["old"], c["new"]) for c in world["changes"]} == {
        "scope": (NARROW["scope"], WIDE["scope"]),
        "policy": ("v4", "v5"),
    }
    page = cathy.get(f"/approvals/{run2}/").content.decode()
    assert "analytics+marketing+profiling" in page
    digests = {k: waiting[k] for k in ("bindings_digest", "worlds_digest")}
    url = f"{API}/instances/{run2}/approval/"
    untickled = cathy.post_json(url, {"action": "approve", **digests})
    assert untickled.status_code == 400 and untickled.json()["error"] == "not_acknowledged"
    partly = cathy.post_json(
        url, {"action": "approve", **digests, "acknowledged": ["share_data:scope"]}
    )
    assert partly.status_code == 400
    assert api.instance(run2)["status"] == "awaiting_approval"  # nothing recorded
    # Without the worlds' digest, or with another world's, it is stale.
    stale = cathy.post_json(
        url, {"action": "approve", "bindings_digest": digests["bindings_digest"]}
    )
    assert stale.status_code == 409 and stale.json()["error"] == "stale_digest"
    ticked = ["share_data:scope", "share_data:policy"]
    done = cathy.post_json(url, {"action": "approve", **digests, "acknowledged": ticked})
    assert done.status_code == 200, done.json()
    assert api.instance(run2)["status"] == "ready"


@pytest.mark.django_db
def test_a_world_change_after_an_approval_starts_the_approvals_over(
    api: Driver, privacy_board: Group, person_client: Any
) -> None:
    _consent_class(api)
    Decision.objects.filter(key="share").update(approvals_required=2, approvers=privacy_board)
    instance_id = api.open(
        "privacy.consent",
        beliefs=[{"slot": "share_data", "value": True, "source": "user", "world_ref": NARROW}],
    )
    api.plan(instance_id)
    before = api.instance(instance_id)
    cathy = person_client(User.objects.get(username="cathy"))
    body = {
        "action": "approve",
        "bindings_digest": before["bindings_digest"],
        "worlds_digest": before["worlds_digest"],
    }
    url = f"{API}/instances/{instance_id}/approval/"
    assert cathy.post_json(url, body).status_code == 200
    # The same value, now referring to another world: approvals start again.
    recorded = api.runtime.post_json(
        f"{API}/instances/{instance_id}/beliefs/",
        {"slot": "share_data", "value": True, "source": "user", "world_ref": WIDE},
    )
    assert recorded.status_code == 201, recorded.json()
    api.plan(instance_id)
    after = api.instance(instance_id)
    assert after["bindings_digest"] == before["bindings_digest"]
    assert after["worlds_digest"] != before["worlds_digest"]
    assert after["quorum"]["approvals"] == [] and after["quorum"]["missing"] == 2
    assert [a["by"] for a in after["quorum"]["reset"]] == ["cathy"]
    assert cathy.post_json(url, body).status_code == 409  # her approval was for the old world
    reset = AuditEvent.objects.filter(kind="approval.reset").latest("id")
    assert "world" in reset.data["reason"]


@pytest.mark.django_db
@pytest.mark.parametrize("risk", ["cosmetic", "reversible", "policy", "irreversible"])
@pytest.mark.parametrize("source", ["user", "tool"])
@pytest.mark.parametrize("carried", [False, True])
def test_an_expired_meaning_is_asked_afresh_never_bound_or_assumed(
    api: Driver, risk: str, source: str, carried: bool
) -> None:
    api.register("ops.run", slots=[{"key": "date"}], risks={"date": risk})
    past = (datetime.now(UTC) - timedelta(days=30)).isoformat()
    belief = {"slot": "date", "value": "2026-11-04", "source": source}
    belief["world_ref"] = {"calendar": "ops", "valid_until": past}
    if carried:
        first = api.open("ops.run", beliefs=[belief])
        api.plan(first)
        instance_id = api.open("ops.run")
    else:
        instance_id = api.open("ops.run", beliefs=[belief])
    item = by_slot(api.plan(instance_id))["date"]
    assert (item["route"], item["rule"]) == ("ASK", "R8")
    page = api.person.get(f"/instances/{instance_id}/").content.decode()
    assert "expired on" in page


@pytest.mark.django_db
def test_a_valid_until_that_is_not_an_instant_is_refused_and_nothing_is_stored(
    api: Driver, transfer: str
) -> None:
    bad = {"slot": "memo", "value": "x", "source": "tool", "world_ref": {"valid_until": "soon"}}
    response = api.runtime.post_json(
        f"{API}/instances/", {"task_class": transfer, "principal": "alice", "beliefs": [bad]}
    )
    assert response.status_code == 400
    assert "valid_until" in str(response.json()["fields"])
    world = api.runtime.post_json(
        f"{API}/instances/",
        {"task_class": transfer, "principal": "alice", "world": {"memo": {"valid_until": 3}}},
    )
    assert world.status_code == 400 and "valid_until" in str(world.json()["fields"])


@pytest.mark.django_db
def test_a_past_date_in_a_future_slot_is_asked_and_cannot_be_answered_again(
    api: Driver,
) -> None:
    response = api.runtime.put_json(
        f"{API}/task-classes/ops.schedule/",
        {"slots": [{"key": "run_on", "value_type": "date", "future": True}]},
    )
    assert response.status_code == 200, response.json()
    assert Slot.objects.get(key="run_on").future
    # A runtime may turn it on, never off.
    again = api.runtime.put_json(
        f"{API}/task-classes/ops.schedule/",
        {"slots": [{"key": "run_on", "value_type": "date", "future": False}]},
    )
    assert again.status_code == 200 and Slot.objects.get(key="run_on").future
    Slot.objects.filter(key="run_on").update(risk_class="reversible")
    yesterday = (datetime.now(UTC) - timedelta(days=1)).date().isoformat()
    instance_id = api.open(
        "ops.schedule", beliefs=[{"slot": "run_on", "value": yesterday, "source": "user"}]
    )
    assert (by_slot(api.plan(instance_id))["run_on"]["rule"]) == "R9"
    refused = api.respond(api.prompt(instance_id, "run_on"), "answer", value=yesterday)
    assert refused.status_code == 400 and "today" in str(refused.json()["fields"])
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).date().isoformat()
    answered = api.respond(api.prompt(instance_id, "run_on"), "answer", value=tomorrow)
    assert answered.status_code == 200, answered.json()
    assert api.instance(instance_id)["status"] == "ready"


@pytest.mark.django_db
def test_future_on_a_slot_that_is_no_date_is_refused(api: Driver) -> None:
    response = api.runtime.put_json(
        f"{API}/task-classes/ops.bad/", {"slots": [{"key": "note", "future": True}]}
    )
    assert response.status_code == 400 and "future" in str(response.json()["fields"])
