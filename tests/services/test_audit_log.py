"""The audit log is append-only in the database, and every service writes to it."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from beliefs.models import AuditEvent, RuntimeAPIKey
from beliefs.services.audit import SYSTEM, Actor, audit
from beliefs.services.expiry import instances_expire
from beliefs.services.instances import instance_cancel
from beliefs.services.planning import instance_plan
from beliefs.services.responses import prompt_respond
from tests.builders import (
    open_instance,
    open_prompt,
    record_belief,
    register_task_class,
    set_world,
    transfer,
)

TABLE = AuditEvent._meta.db_table


@pytest.fixture
def event(db: None) -> AuditEvent:
    return audit("test.event", actor=SYSTEM, subject="before", data={"n": 1})


def _unchanged(event: AuditEvent) -> None:
    fresh = AuditEvent.objects.get(pk=event.pk)
    assert (fresh.kind, fresh.subject, fresh.data) == ("test.event", "before", {"n": 1})


def test_it_refuses_an_orm_update(event: AuditEvent) -> None:
    with pytest.raises(DatabaseError), transaction.atomic():
        AuditEvent.objects.filter(pk=event.pk).update(subject="after")
    _unchanged(event)


def test_it_refuses_an_orm_save_of_an_existing_event(event: AuditEvent) -> None:
    event.subject = "after"
    with pytest.raises(DatabaseError), transaction.atomic():
        event.save()
    _unchanged(event)


def test_it_refuses_an_orm_delete(event: AuditEvent) -> None:
    with pytest.raises(DatabaseError), transaction.atomic():
        AuditEvent.objects.filter(pk=event.pk).delete()
    _unchanged(event)


def test_it_refuses_a_raw_sql_update(event: AuditEvent) -> None:
    with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"UPDATE {TABLE} SET subject = %s WHERE id = %s", ["after", event.pk])
    _unchanged(event)


def test_it_refuses_a_raw_sql_delete(event: AuditEvent) -> None:
    with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {TABLE} WHERE id = %s", [event.pk])
    _unchanged(event)


def test_it_refuses_a_raw_sql_delete_of_every_row(event: AuditEvent) -> None:
    with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {TABLE}")
    assert AuditEvent.objects.filter(pk=event.pk).exists()


@pytest.mark.skipif(connection.vendor != "postgresql", reason="TRUNCATE is PostgreSQL's")
def test_it_refuses_a_truncate(event: AuditEvent) -> None:
    with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {TABLE}")
    assert AuditEvent.objects.filter(pk=event.pk).exists()


def test_it_still_appends(event: AuditEvent) -> None:
    audit("test.event", actor=SYSTEM, subject="second")
    assert AuditEvent.objects.filter(kind="test.event").count() == 2


def test_it_audits_every_service(runtime_key: tuple[RuntimeAPIKey, str], alice: User) -> None:
    rt = Actor(key=runtime_key[0])
    transfer(rt)
    # Open slots: the belief for "undeclared" below grows the class (for that instance only).
    register_task_class(key="payments.transfer", slots=[{"key": "memo"}], actor=rt, open_slots=True)
    instance = open_instance(
        task_class_key="payments.transfer",
        principal="alice",
        beliefs=[{"slot": "reference", "value": "rent", "source": "tool"}],
        actor=rt,
    )
    record_belief(
        instance=instance,
        data={"slot": "recipient_account", "value": "DE89", "source": "tool"},
        actor=rt,
    )
    record_belief(
        instance=instance, data={"slot": "undeclared", "value": 1, "source": "tool"}, actor=rt
    )
    set_world(instance=instance, world={"memo": {"k": 1}}, actor=rt)
    instance_plan(instance=instance, actor=rt)
    instance_plan(instance=instance, actor=rt)  # idempotent: no second event
    respond = {"user": alice, "version": 1}
    prompt_respond(
        prompt_id=open_prompt(instance, "recipient_account").pk, action="confirm", **respond
    )
    prompt_respond(
        prompt_id=open_prompt(instance, "undeclared").pk,
        action="edit",
        value=2,
        value_confirmation=2,
        **respond,
    )
    prompt_respond(
        prompt_id=open_prompt(instance, "memo").pk, action="answer", value="m", **respond
    )
    prompt_respond(
        prompt_id=open_prompt(instance, "reference").pk, action="veto", reason="no", **respond
    )
    prompt_respond(
        prompt_id=open_prompt(instance, "reference").pk, action="reject", reason="stop", **respond
    )
    second = open_instance(task_class_key="payments.transfer", principal="alice", actor=rt)
    instance_plan(instance=second, actor=rt)
    instance_cancel(instance=second, actor=rt, reason="bye")
    third = open_instance(task_class_key="payments.transfer", principal="alice", actor=rt)
    instance_plan(instance=third, actor=rt)
    instances_expire(now=timezone.now() + timedelta(days=30))

    kinds = Counter(AuditEvent.objects.values_list("kind", flat=True))
    assert kinds == {
        "task_class.registered": 1,
        "task_class.updated": 1,
        "instance.opened": 3,
        "belief.recorded": 3,
        "slot.registered_unclassified": 1,
        "instance.world_set": 1,
        # plan of the first instance, plus its re-plans after belief, world and each response
        "instance.planned": kinds["instance.planned"],
        "prompt.confirm": 1,
        "prompt.edit": 1,
        "prompt.answer": 1,
        "prompt.veto": 1,
        "prompt.reject": 1,
        "instance.cancelled": 1,
        "instance.expired": 1,
    }
    assert kinds["instance.planned"] >= 3
    by_instance = Counter(
        AuditEvent.objects.filter(kind="instance.planned").values_list("instance_id", flat=True)
    )
    assert by_instance[second.pk] == 1
    assert by_instance[third.pk] == 1
    actors = set(AuditEvent.objects.values_list("actor", flat=True))
    assert actors == {"runtime:test-runtime", "alice", "system"}


@pytest.mark.django_db(transaction=True)
def test_it_refuses_an_update_outside_a_test_transaction() -> None:
    """Committed for real (as the live server and threads see it), and the flush after this
    test must leave the triggers in place for the next one."""
    event = audit("test.event", actor=SYSTEM, subject="before", data={"n": 1})
    with pytest.raises(DatabaseError), transaction.atomic():
        AuditEvent.objects.filter(pk=event.pk).update(subject="after")
    _unchanged(event)


def test_it_still_refuses_after_a_transactional_test_flushed(event: AuditEvent) -> None:
    with pytest.raises(DatabaseError), transaction.atomic():
        AuditEvent.objects.filter(pk=event.pk).delete()
    _unchanged(event)
