"""An approval binds the exact action: a ready instance carries a signed receipt of its
bindings, which a tool server verifies with the published keys alone (here with PyJWT, not the
library that signs) and redeems once; a veto after ready or a cancel revokes it."""

from __future__ import annotations

import base64
import json
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
import time_machine
from django.test import override_settings
from django.utils import timezone

from beliefs import signing
from beliefs.domain.canonical import bindings_digest
from beliefs.models import AuditEvent, Receipt
from tests.conftest import JsonClient, runtime_key_of
from tests.support.api import API, Driver, by_slot

CLASS = "payments.refund"


@pytest.fixture
def ready(api: Driver) -> dict[str, Any]:
    """A refund alice confirmed: ready, with its receipt."""
    api.register(
        CLASS,
        slots=[{"key": "iban"}, {"key": "amount", "value_type": "number"}, {"key": "note"}],
        decisions=[{"key": "refund", "slots": ["iban", "amount"]}],
        risks={"iban": "irreversible", "amount": "irreversible", "note": "cosmetic"},
        decision_risks={"refund": "irreversible"},
    )
    instance_id = api.open(
        CLASS,
        beliefs=[
            {"slot": "iban", "value": "NL91ABNA0417164300", "source": "tool"},
            {"slot": "amount", "value": 120, "source": "tool"},
            {"slot": "note", "value": "sorry", "source": "tool"},
        ],
    )
    api.plan(instance_id)
    api.respond(api.prompt(instance_id, "iban"), "confirm")
    edited = api.respond(
        api.prompt(instance_id, "amount"), "edit", value=100, value_confirmation=100
    )
    assert edited.status_code == 200, edited.json()
    instance = api.instance(instance_id)
    assert instance["status"] == "ready"
    return instance


def _jwks(client: JsonClient) -> dict[str, Any]:
    response = client.get("/.well-known/jwks.json")
    assert response.status_code == 200
    return json.loads(response.content)


def _verify(token: str, jwks: dict[str, Any], audience: str = "test-runtime") -> dict[str, Any]:
    """What a tool server does, with PyJWT and the published keys only."""
    kid = jwt.get_unverified_header(token)["kid"]
    key = jwt.PyJWKSet.from_dict(jwks)[kid]
    return jwt.decode(token, key.key, algorithms=["EdDSA"], audience=audience)


def test_a_ready_instance_carries_a_receipt_of_exactly_its_bindings(
    api: Driver, ready: dict[str, Any]
) -> None:
    assert ready["receipt_state"] == "valid"
    claims = _verify(ready["receipt"], _jwks(api.runtime))
    assert claims["bindings_digest"] == ready["bindings_digest"]
    assert claims["bindings_digest"] == bindings_digest(ready["bindings"])
    assert ready["bindings"] == {"iban": "NL91ABNA0417164300", "amount": 100, "note": "sorry"}
    assert claims["sub"] == "alice" and claims["instance"] == ready["id"]
    assert claims["task_class"] == CLASS and claims["decisions"] == ["refund"]
    assert claims["exp"] - claims["iat"] == 24 * 3600
    approvals = {(a["slot"], a["action"], a["by"]) for a in claims["approvals"]}
    assert approvals == {("iban", "confirm", "alice"), ("amount", "edit", "alice")}
    assert "NL91ABNA0417164300" not in json.dumps(claims)  # the digest, never the values
    header = jwt.get_unverified_header(ready["receipt"])
    assert header["typ"] == "approval-receipt+jwt" and header["alg"] == "EdDSA"
    (published,) = _jwks(api.runtime)["keys"]
    assert published["kid"] == header["kid"] and published["kty"] == "OKP"
    assert "d" not in published  # the public half only


def _tampered(token: str, **changes: Any) -> str:
    head, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims.update(changes)
    body = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return f"{head}.{body}.{signature}"


@pytest.mark.parametrize(
    "change",
    [
        {"bindings_digest": "0" * 64},
        {"aud": "someone-else"},
        {"exp": 4_102_444_800},
        {"sub": "mallory"},
        {"instance": "00000000-0000-0000-0000-000000000000"},
        {"approvals": []},
    ],
)
def test_a_receipt_with_any_claim_changed_fails(
    api: Driver, ready: dict[str, Any], change: dict[str, Any]
) -> None:
    forged = _tampered(ready["receipt"], **change)
    with pytest.raises(jwt.InvalidSignatureError):
        _verify(forged, _jwks(api.runtime), audience=change.get("aud", "test-runtime"))
    refused = api.runtime.post_json(f"{API}/receipts/redeem/", {"receipt": forged})
    assert refused.status_code == 400 and refused.json()["error"] == "receipt_invalid"


def test_it_redeems_once(api: Driver, ready: dict[str, Any]) -> None:
    body = {"receipt": ready["receipt"], "bindings_digest": ready["bindings_digest"]}
    first = api.runtime.post_json(f"{API}/receipts/redeem/", body)
    assert first.status_code == 200, first.json()
    assert first.json()["instance"] == ready["id"]
    again = api.runtime.post_json(f"{API}/receipts/redeem/", body)
    assert again.status_code == 409 and again.json()["error"] == "receipt_redeemed"
    assert api.instance(ready["id"])["receipt_state"] == "redeemed"
    assert AuditEvent.objects.filter(kind="receipt.redeemed").count() == 1


def test_a_wrong_digest_is_refused_and_the_receipt_stays_unused(
    api: Driver, ready: dict[str, Any]
) -> None:
    other = bindings_digest({**ready["bindings"], "amount": 999})
    refused = api.runtime.post_json(
        f"{API}/receipts/redeem/", {"receipt": ready["receipt"], "bindings_digest": other}
    )
    assert refused.status_code == 400 and refused.json()["error"] == "digest_mismatch"
    assert Receipt.objects.get().redeemed_at is None


def test_an_expired_receipt_is_refused(api: Driver, ready: dict[str, Any]) -> None:
    with time_machine.travel(timezone.now() + timedelta(hours=25)):
        refused = api.runtime.post_json(f"{API}/receipts/redeem/", {"receipt": ready["receipt"]})
        assert refused.status_code == 400 and refused.json()["error"] == "receipt_expired"
        read = api.instance(ready["id"])
        assert read["receipt_state"] == "expired" and read["receipt"] is None


def test_another_runtimes_key_cannot_redeem(api: Driver, ready: dict[str, Any]) -> None:
    _, key = runtime_key_of("billing-agent")
    other = JsonClient()
    other.credentials(HTTP_AUTHORIZATION=f"Api-Key {key}")
    refused = other.post_json(f"{API}/receipts/redeem/", {"receipt": ready["receipt"]})
    assert refused.status_code == 404
    assert Receipt.objects.get().redeemed_at is None


def test_a_person_cannot_redeem(api: Driver, ready: dict[str, Any]) -> None:
    refused = api.person.post_json(f"{API}/receipts/redeem/", {"receipt": ready["receipt"]})
    assert refused.status_code == 403


def test_a_cancel_revokes(api: Driver, ready: dict[str, Any]) -> None:
    cancelled = api.runtime.post_json(f"{API}/instances/{ready['id']}/cancel/", {"reason": "x"})
    assert cancelled.status_code == 200
    refused = api.runtime.post_json(f"{API}/receipts/redeem/", {"receipt": ready["receipt"]})
    assert refused.status_code == 409 and refused.json()["error"] == "receipt_revoked"
    assert api.instance(ready["id"])["receipt_state"] == "revoked"


def test_a_veto_after_ready_revokes_and_the_next_ready_signs_anew(api: Driver) -> None:
    api.register(
        CLASS,
        slots=[{"key": "iban"}, {"key": "note"}],
        risks={"iban": "irreversible", "note": "reversible"},
    )
    first = api.open(
        CLASS,
        beliefs=[
            {"slot": "iban", "value": "NL91", "source": "user"},
            {"slot": "note", "value": "n", "source": "user"},
        ],
    )
    api.plan(first)
    later = api.open(CLASS)
    plan = api.plan(later)
    assert by_slot(plan)["note"]["route"] == "SURFACED"
    answered = api.respond(api.prompt(later, "iban"), "answer", value="NL91")  # R5: asked again
    assert answered.status_code == 200, answered.json()
    token = api.instance(later)["receipt"]
    assert token is not None

    vetoed = api.respond(api.prompt(later, "note"), "veto", reason="not this note")
    assert vetoed.status_code == 200, vetoed.json()
    refused = api.runtime.post_json(f"{API}/receipts/redeem/", {"receipt": token})
    assert refused.status_code == 409 and refused.json()["error"] == "receipt_revoked"
    reopened = api.instance(later)
    assert reopened["status"] == "awaiting_user" and reopened["receipt"] is None

    api.respond(api.prompt(later, "note"), "answer", value="the right note")
    fresh = api.instance(later)
    assert fresh["status"] == "ready" and fresh["receipt"] not in (None, token)
    assert (
        _verify(fresh["receipt"], _jwks(api.runtime))["bindings_digest"]
        == (fresh["bindings_digest"])
    )


def test_a_receipt_signed_by_the_previous_key_verifies_after_a_rotation(
    api: Driver, ready: dict[str, Any], tmp_path: Path, settings: Any
) -> None:
    newer = tmp_path / "newer.pem"
    signing.write_key(newer, signing.new_key())
    with override_settings(
        CONSOLE_RECEIPT_SIGNING_KEYS=[str(newer), *settings.CONSOLE_RECEIPT_SIGNING_KEYS]
    ):
        keys = _jwks(api.runtime)
        assert len(keys["keys"]) == 2
        assert _verify(ready["receipt"], keys)["instance"] == ready["id"]
        redeemed = api.runtime.post_json(f"{API}/receipts/redeem/", {"receipt": ready["receipt"]})
        assert redeemed.status_code == 200, redeemed.json()
    # Once the old key is no longer published, its receipts no longer verify.
    with override_settings(CONSOLE_RECEIPT_SIGNING_KEYS=[str(newer)]), pytest.raises(KeyError):
        _verify(ready["receipt"], _jwks(api.runtime))


@pytest.mark.parametrize("body", [{}, {"receipt": ""}, {"receipt": "a.b.c"}, {"receipt": 5}])
def test_bad_redeem_bodies_get_a_clear_400(api: Driver, body: dict[str, Any]) -> None:
    refused = api.runtime.post_json(f"{API}/receipts/redeem/", body)
    assert refused.status_code == 400
    assert set(refused.json()) >= {"error", "detail", "fields"}


def test_a_carried_value_never_binds_a_slot_the_action_does_not_name(api: Driver) -> None:
    api.register(CLASS, slots=[{"key": "iban"}, {"key": "note"}], risks={"note": "cosmetic"})
    earlier = api.open(CLASS, beliefs=[{"slot": "note", "value": "carried", "source": "user"}])
    api.plan(earlier)
    response = api.runtime.post_json(
        f"{API}/instances/", {"task_class": CLASS, "principal": "alice", "slots": ["iban"]}
    )
    assert response.status_code == 201, response.json()
    instance_id = response.json()["id"]
    outside = api.runtime.post_json(
        f"{API}/instances/{instance_id}/beliefs/", {"slot": "note", "value": "x", "source": "tool"}
    )
    assert outside.status_code == 400 and outside.json()["error"] == "slot_not_in_action"
    api.runtime.post_json(
        f"{API}/instances/{instance_id}/beliefs/",
        {"slot": "iban", "value": "NL91", "source": "user"},
    )
    plan = api.plan(instance_id)
    assert plan["slots"] == ["iban"] and [i["slot"] for i in plan["items"]] == ["iban"]
    instance = api.instance(instance_id)
    assert instance["bindings"] == {"iban": "NL91"}
    assert _verify(instance["receipt"], _jwks(api.runtime))["bindings_digest"] == (
        bindings_digest({"iban": "NL91"})
    )
    refused = api.runtime.post_json(
        f"{API}/instances/",
        {
            "task_class": CLASS,
            "principal": "alice",
            "slots": ["iban"],
            "beliefs": [{"slot": "note", "value": "x", "source": "tool"}],
        },
    )
    assert refused.status_code == 400 and refused.json()["error"] == "slot_not_in_action"


def test_an_open_slots_class_grows_only_for_the_instance_that_names_the_slot(
    api: Driver,
) -> None:
    registered = api.runtime.put_json(
        f"{API}/task-classes/claude-code.Bash/",
        {"open_slots": True, "slots": [{"key": "command"}]},
    )
    assert registered.status_code == 200 and registered.json()["open_slots"] is True
    first = api.runtime.post_json(
        f"{API}/instances/",
        {"task_class": "claude-code.Bash", "principal": "alice", "slots": ["command", "timeout"]},
    )
    assert first.status_code == 201, first.json()
    assert first.json()["slots"] == ["command", "timeout"]
    second = api.runtime.post_json(
        f"{API}/instances/",
        {"task_class": "claude-code.Bash", "principal": "alice", "slots": ["command"]},
    )
    assert [i["slot"] for i in api.plan(second.json()["id"])["items"]] == ["command"]
    default = api.open("claude-code.Bash")
    assert [i["slot"] for i in api.plan(default)["items"]] == ["command"]
    slots = {
        s["key"]: s
        for s in api.runtime.get(f"{API}/task-classes/claude-code.Bash/").json()["slots"]
    }  # noqa: E501
    assert slots["timeout"]["declared"] is False and slots["command"]["declared"] is True


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_racing_redemptions_exactly_one_wins(
    live_server: Any, runtime_key: Any, alice: Any, person_client: Any
) -> None:
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: SQLite serialises writers, so nothing races")
    runtime = JsonClient()
    runtime.credentials(HTTP_AUTHORIZATION=f"Api-Key {runtime_key[1]}")
    api = Driver(runtime, person_client(alice))
    api.register(CLASS, slots=[{"key": "iban"}], risks={"iban": "irreversible"})
    instance_id = api.open(CLASS, beliefs=[{"slot": "iban", "value": "NL91", "source": "user"}])
    api.plan(instance_id)
    token = api.instance(instance_id)["receipt"]

    barrier = threading.Barrier(8)
    statuses: list[int] = []

    def redeem() -> None:
        with httpx.Client(base_url=live_server.url, timeout=30) as client:
            barrier.wait()
            response = client.post(
                "/api/v1/receipts/redeem/",
                json={"receipt": token},
                headers={"Authorization": f"Api-Key {runtime_key[1]}"},
            )
            statuses.append(response.status_code)

    threads = [threading.Thread(target=redeem) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(statuses) == [200] + [409] * 7
    assert Receipt.objects.filter(redeemed_at__isnull=False).count() == 1


def test_the_jwks_is_public_and_served_over_http(live_server: Any, api: Driver) -> None:
    response = httpx.get(f"{live_server.url}/.well-known/jwks.json", timeout=10)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    assert response.json() == _jwks(api.runtime)


def test_a_retired_slot_is_no_longer_planned_and_no_action_names_it(api: Driver) -> None:
    api.register(CLASS, slots=[{"key": "iban"}, {"key": "note"}])
    instance_id = api.open(CLASS)
    assert {i["slot"] for i in api.plan(instance_id)["items"]} == {"iban", "note"}
    retired = api.runtime.post_json(f"{API}/task-classes/{CLASS}/slots/note/retire/")
    assert retired.status_code == 200, retired.json()
    (note,) = [s for s in retired.json()["slots"] if s["key"] == "note"]
    assert note["retired"] is True
    assert [i["slot"] for i in api.plan(instance_id)["items"]] == ["iban"]
    assert (
        "note"
        not in api.runtime.post_json(
            f"{API}/instances/", {"task_class": CLASS, "principal": "alice"}
        ).json()["slots"]
    )
    named = api.runtime.post_json(
        f"{API}/instances/", {"task_class": CLASS, "principal": "alice", "slots": ["note"]}
    )
    assert named.status_code == 400 and named.json()["error"] == "slot_retired"
    assert AuditEvent.objects.filter(kind="slot.retired", subject="note").count() == 1
    _, key = runtime_key_of("billing-agent")
    other = JsonClient()
    other.credentials(HTTP_AUTHORIZATION=f"Api-Key {key}")
    assert other.post_json(f"{API}/task-classes/{CLASS}/slots/iban/retire/").status_code == 403
