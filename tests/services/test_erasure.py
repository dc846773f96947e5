"""Erasure (`manage.py erase_person`) and retention: a person's values and world references leave
every table, the audit keeps who did what with digests, and nobody else's values move."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.db import DatabaseError, connection, transaction
from django.test import Client
from django.utils import timezone

from beliefs.domain.canonical import bindings_digest
from beliefs.domain.vocabulary import AuditKind
from beliefs.errors import InvalidInput
from beliefs.models import AuditEvent, Belief, BeliefStatus, Receipt, TaskClass, TaskInstance
from beliefs.services.audit import SYSTEM, Actor, digest_of
from beliefs.services.erasure import (
    ERASED_TEXT,
    person_erase,
    retention_apply,
    task_class_set_retention,
)
from beliefs.services.sweep import sweep
from beliefs.signing import verify
from tests.conftest import JsonClient
from tests.support.api import Driver, by_slot

pytestmark = pytest.mark.django_db

SECRET = "ALICE-SECRET"  # in every value, world reference and reason of alice's
WORLD = "ALICE-WORLD"
BOBS = "BOB-KEEPS-THIS"
CLASS = "payments.transfer"


def _tables_holding(text: str) -> dict[str, int]:
    """Every table and column of the database (each cast to text) where `text` occurs."""
    found: dict[str, int] = {}
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            for column in connection.introspection.get_table_description(cursor, table):
                cursor.execute(
                    f"SELECT COUNT(*) FROM {quote(table)} "  # noqa: S608 - names from the schema
                    f"WHERE CAST({quote(column.name)} AS TEXT) LIKE %s",
                    [f"%{text}%"],
                )
                (count,) = cursor.fetchone()
                if count:
                    found[f"{table}.{column.name}"] = count
    return found


def _run(api: Driver, secret: str, world: str, principal: str = "alice") -> str:
    """An instance planned with a tool's value and a world reference: the recipient is asked
    to be confirmed (it feeds an irreversible decision)."""
    instance_id = api.open(
        CLASS,
        principal=principal,
        world={"recipient_account": {"owner": world}},
        beliefs=[
            {
                "slot": "recipient_account",
                "value": f"DE89-{secret}",
                "source": "tool",
                "turn": 1,
                "world_ref": {"owner": world},
            },
            {"slot": "memo", "value": f"memo {secret}", "source": "tool", "turn": 1},
        ],
    )
    api.plan(instance_id)
    return instance_id


@pytest.fixture
def alices(api: Driver, transfer: str) -> dict[str, str]:
    """Three instances of alice's: one ready (answered in the console, with a receipt), one she
    rejected with a reason, one still waiting for her."""
    assert transfer == CLASS  # its recipient feeds an irreversible decision
    ready = _run(api, SECRET, WORLD)
    api.answer_all(ready, {"recipient_account": f"NL91-{SECRET}-typed"})
    rejected = _run(api, f"{SECRET}-2", f"{WORLD}-2")
    prompt = api.prompt(rejected, "recipient_account")
    response = api.respond(prompt, "reject", reason=f"not {SECRET}, wrong account")
    assert response.status_code == 200, response.json()
    waiting = _run(api, f"{SECRET}-3", f"{WORLD}-3")
    return {"ready": ready, "rejected": rejected, "waiting": waiting}


@pytest.fixture
def bobs(runtime: JsonClient, person_client: Callable[[User], JsonClient]) -> str:
    bob = User.objects.create_user("bob", password="x")  # noqa: S106 - a test's
    return _run(Driver(runtime, person_client(bob)), BOBS, BOBS, principal="bob")


def test_no_value_of_hers_is_left_in_any_table(alices: dict[str, str], bobs: str) -> None:
    assert set(_tables_holding(SECRET)) >= {
        "beliefs_belief.value",
        "beliefs_prompt.prefill",
        "beliefs_promptresponse.value",
        "beliefs_taskinstance.plan_items",
        "beliefs_taskinstance.bindings",
        "beliefs_webhookevent.payload",
    }  # the search finds them where they were...
    assert _tables_holding(WORLD)
    bob_before = _tables_holding(BOBS)

    person_erase(user=User.objects.get(username="alice"), actor=SYSTEM)

    assert _tables_holding(SECRET) == {}  # ... and nowhere after
    assert _tables_holding(WORLD) == {}
    assert _tables_holding(BOBS) == bob_before  # nobody else's values move


def test_the_audit_keeps_who_did_what_and_still_verifies(alices: dict[str, str]) -> None:
    ready = TaskInstance.objects.get(pk=alices["ready"])
    bound = bindings_digest(ready.bindings)
    events_before = list(AuditEvent.objects.order_by("id").values_list("id", "kind", "data"))
    person_erase(user=User.objects.get(username="alice"), actor=SYSTEM)

    # Nothing in the log changed; the erasure added its own events.
    events_after = list(AuditEvent.objects.order_by("id").values_list("id", "kind", "data"))
    assert events_after[: len(events_before)] == events_before
    added = [kind for _, kind, _ in events_after[len(events_before) :]]
    assert added.count(AuditKind.INSTANCE_VALUES_ERASED) == 3
    assert added.count(AuditKind.INSTANCE_CANCELLED) == 1  # the waiting one
    assert added[-1] == AuditKind.PERSON_ERASED
    # The log stays append-only...
    with pytest.raises(DatabaseError), transaction.atomic():
        AuditEvent.objects.filter(pk=events_after[0][0]).update(data={})
    # ... and what it holds of a value is its digest, which still names what was bound.
    (edit,) = AuditEvent.objects.filter(kind=AuditKind.PROMPT_EDIT, instance_id=ready.pk)
    assert edit.data["value_digest"] == digest_of(f"NL91-{SECRET}-typed")
    receipt = Receipt.objects.get(instance=ready)
    claims = verify(receipt.token)
    assert claims["bindings_digest"] == bound == receipt.bindings_digest
    assert claims["sub"] == "alice"


def test_her_unfinished_instances_are_cancelled_and_the_runtime_told(
    alices: dict[str, str], api: Driver
) -> None:
    erasure = person_erase(user=User.objects.get(username="alice"), actor=SYSTEM)
    assert erasure.cancelled == 1
    waiting = api.instance(alices["waiting"])
    assert waiting["status"] == "cancelled"
    assert waiting["status_reason"] == "the person's data was erased at their request"
    rejected = api.instance(alices["rejected"])
    assert rejected["status_reason"] == ERASED_TEXT  # what she typed is gone
    ready = api.instance(alices["ready"])
    assert ready["status"] == "ready"
    assert ready["bindings"] == {"recipient_account": None, "memo": None}
    assert ready["world"] == {}
    assert all(item["value"] is None for item in ready["plan"])
    assert all(prompt["prefill"] is None for prompt in ready["prompts"])


def test_an_erased_value_is_never_carried_into_a_later_run(
    alices: dict[str, str], api: Driver
) -> None:
    person_erase(user=User.objects.get(username="alice"), actor=SYSTEM)
    assert not Belief.objects.filter(principal__username="alice").exclude(
        status=BeliefStatus.ERASED
    )
    later = api.open(CLASS)
    items = by_slot(api.plan(later))
    assert items["recipient_account"]["route"] == "ASK"
    assert items["recipient_account"]["value"] is None and items["memo"]["belief"] is None


def test_the_command_reports_what_it_removed_and_kept(alices: dict[str, str]) -> None:
    out = io.StringIO()
    call_command("erase_person", "alice", "--yes", "--json", stdout=out)
    report = json.loads(out.getvalue())
    assert report["person"] == "alice" and report["cancelled"] == 1
    assert report["removed"]["instances"] == 3 and report["removed"]["beliefs"] >= 3
    kept = " ".join(entry["what"] + " " + entry["why"] for entry in report["kept"])
    assert "audit events" in kept and "receipts" in kept and "append-only" in kept
    (event,) = AuditEvent.objects.filter(kind=AuditKind.PERSON_ERASED)
    assert event.subject == "alice" and event.data["removed"] == report["removed"]


def test_the_command_asks_before_it_erases(alices: dict[str, str]) -> None:
    # Run without a terminal and without --yes, it refuses and erases nothing.
    with pytest.raises(CommandError, match="pass --yes"):
        call_command("erase_person", "alice", stdout=io.StringIO())
    with pytest.raises(CommandError, match="No person with the username 'nobody'"):
        call_command("erase_person", "nobody", "--yes", stdout=io.StringIO())
    assert _tables_holding(SECRET)
    assert not AuditEvent.objects.filter(kind=AuditKind.PERSON_ERASED).exists()


# --- retention -----------------------------------------------------------------------------


def _age(instance_id: str, days: float) -> None:
    TaskInstance.objects.filter(pk=instance_id).update(
        updated_at=timezone.now() - timedelta(days=days)
    )


def test_retention_erases_finished_instances_past_their_class_s_period(
    alices: dict[str, str],
) -> None:
    TaskClass.objects.filter(key=CLASS).update(retention_days=30)
    _age(alices["ready"], 31)
    _age(alices["rejected"], 29)  # not yet
    _age(alices["waiting"], 400)  # not finished: never

    assert sweep()["values_erased"] == 1
    erased = TaskInstance.objects.get(pk=alices["ready"])
    assert erased.erased_at is not None and erased.bindings == {
        "recipient_account": None,
        "memo": None,
    }
    assert SECRET not in json.dumps(erased.plan_items)
    assert TaskInstance.objects.get(pk=alices["rejected"]).erased_at is None
    assert TaskInstance.objects.get(pk=alices["waiting"]).erased_at is None
    (event,) = AuditEvent.objects.filter(kind=AuditKind.INSTANCE_VALUES_ERASED)
    assert event.instance_id == erased.pk and event.actor == "system"
    assert event.data == {"why": "retention", "retention_days": 30}
    assert retention_apply() == 0  # done once


def test_without_a_period_values_are_kept(alices: dict[str, str]) -> None:
    for instance_id in alices.values():
        _age(instance_id, 10_000)
    assert retention_apply() == 0
    assert not TaskInstance.objects.filter(erased_at__isnull=False).exists()


def test_a_retention_period_is_whole_days_and_its_change_audited(alices: dict[str, str]) -> None:
    task_class = TaskClass.objects.get(key=CLASS)
    staff = Actor(user=User.objects.get(username="alice"))
    for wrong in (0, -3, 1.5, True, "30"):
        with pytest.raises(InvalidInput, match="retention_days"):
            task_class_set_retention(task_class=task_class, days=wrong, actor=staff)  # type: ignore[arg-type]
    assert TaskClass.objects.get(pk=task_class.pk).retention_days is None
    task_class_set_retention(task_class=task_class, days=30, actor=staff)
    task_class_set_retention(task_class=task_class, days=30, actor=staff)  # no change: no event
    (event,) = AuditEvent.objects.filter(kind=AuditKind.TASK_CLASS_RETENTION_CHANGED)
    assert (event.data["before"], event.data["after"], event.actor) == (None, 30, "alice")


def test_the_person_s_page_says_the_values_were_erased(alices: dict[str, str], alice: User) -> None:
    alice_client = Client()
    alice_client.force_login(alice)
    before = alice_client.get(f"/instances/{alices['ready']}/").content.decode()
    assert SECRET in before and "were erased" not in before
    person_erase(user=User.objects.get(username="alice"), actor=SYSTEM)
    page = alice_client.get(f"/instances/{alices['ready']}/")
    assert page.status_code == 200
    text = page.content.decode()
    assert SECRET not in text and 'id="erased-notice"' in text and "were erased on" in text
