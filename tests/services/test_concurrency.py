"""Two people (or two tabs) answering the same prompt version at the same moment.

One decision per prompt version is a database rule: whichever way the race falls, one response
wins and the other is refused, never both recorded.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection, connections

from beliefs.errors import Conflict
from beliefs.models import AuditEvent, Belief, Decision, PromptResponse, RuntimeAPIKey, Slot
from beliefs.services.audit import Actor
from beliefs.services.planning import instance_plan
from beliefs.services.responses import RespondResult, prompt_respond
from tests.builders import (
    open_instance,
    open_prompt,
    register_task_class,
    transfer,
)

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="needs PostgreSQL row locks; SQLite serialises writers",
    ),
    pytest.mark.django_db(transaction=True),
]


def _race(calls: list[Callable[[], Any]]) -> list[Any]:
    """Run the calls in threads released together; each result is a value or the exception."""
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def run(index: int) -> None:
        try:
            barrier.wait(timeout=10)
            results[index] = calls[index]()
        except Exception as exc:  # noqa: BLE001 - the test inspects what each thread got
            results[index] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not any(thread.is_alive() for thread in threads)
    return results


@pytest.fixture
def prompt_id(runtime_key: tuple[RuntimeAPIKey, str], alice: User) -> int:
    rt = Actor(key=runtime_key[0])
    transfer(rt)
    instance = open_instance(
        task_class_key="payments.transfer",
        principal="alice",
        beliefs=[{"slot": "recipient_account", "value": "DE89", "source": "tool"}],
        actor=rt,
    )
    instance_plan(instance=instance, actor=rt)
    return open_prompt(instance, "recipient_account").pk


def test_it_lets_exactly_one_of_two_different_answers_win(prompt_id: int, alice: User) -> None:
    def edit(value: str) -> Callable[[], Any]:
        return lambda: prompt_respond(
            prompt_id=prompt_id,
            user=alice,
            action="edit",
            version=1,
            value=value,
            value_confirmation=value,
        )

    results = _race([edit("DE02"), edit("DE03")])

    wins = [r for r in results if isinstance(r, RespondResult)]
    losses = [r for r in results if isinstance(r, Conflict)]
    assert (len(wins), len(losses)) == (1, 1), results
    assert losses[0].status == 409
    assert PromptResponse.objects.filter(prompt_id=prompt_id).count() == 1
    winner = PromptResponse.objects.get(prompt_id=prompt_id).value
    assert list(Belief.objects.filter(source="user").values_list("value", flat=True)) == [winner]
    assert AuditEvent.objects.filter(kind="prompt.edit").count() == 1


def test_it_records_two_identical_racing_answers_once(prompt_id: int, alice: User) -> None:
    def confirm() -> Any:
        return prompt_respond(prompt_id=prompt_id, user=alice, action="confirm", version=1)

    results = _race([confirm, confirm])

    assert all(isinstance(r, RespondResult) for r in results), results
    assert sorted(r.replayed for r in results) == [False, True]
    assert PromptResponse.objects.filter(prompt_id=prompt_id).count() == 1
    assert Belief.objects.filter(source="user").count() == 1
    assert AuditEvent.objects.filter(kind="prompt.confirm").count() == 1


def test_it_numbers_two_racing_opens_of_the_same_task_class_apart(
    runtime_key: tuple[RuntimeAPIKey, str], alice: User
) -> None:
    rt = Actor(key=runtime_key[0])
    transfer(rt)
    open_instance(task_class_key="payments.transfer", principal="alice", actor=rt)

    def open_one() -> Any:
        return open_instance(task_class_key="payments.transfer", principal="alice", actor=rt)

    results = _race([open_one, open_one, open_one])

    assert not [r for r in results if isinstance(r, Exception)], results
    assert sorted(r.run_number for r in results) == [2, 3, 4]


def test_it_registers_the_same_new_slot_from_two_racing_registrations_once(
    runtime_key: tuple[RuntimeAPIKey, str],
) -> None:
    rt = Actor(key=runtime_key[0])
    register_task_class(key="payments.transfer", slots=[{"key": "memo"}], actor=rt)

    def register() -> Any:
        return register_task_class(
            key="payments.transfer",
            slots=[{"key": "memo"}, {"key": "iban"}],
            decisions=[{"key": "send", "slots": ["iban"]}],
            actor=rt,
        )

    results = _race([register, register, register])

    assert not [r for r in results if isinstance(r, Exception)], results
    assert sorted(Slot.objects.values_list("key", flat=True)) == ["iban", "memo"]
    assert Decision.objects.get(key="send").slots.get().key == "iban"
