"""Each rule is defined once, on its model or queryset, and tested here over every input:
the instance status sets, who takes a veto, open blocking prompts, overdue prompts (at, just
before and just after their time to live) and the instances still waiting for their person.
Where a rule is also said in Python for values already read, both say the same."""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from beliefs.models import InstanceStatus, Prompt, PromptState, TaskInstance
from tests.builders import run, shop

pytestmark = pytest.mark.django_db

NOW = timezone.now().replace(microsecond=0)
TICK = timedelta(microseconds=1)
# A prompt's time to live relative to NOW: None, long past, just before, at, just after, later.
EXPIRIES: dict[str, datetime | None] = {
    "none": None,
    "past": NOW - timedelta(hours=1),
    "just before": NOW - TICK,
    "at": NOW,
    "just after": NOW + TICK,
    "later": NOW + timedelta(hours=1),
}


def test_it_splits_every_instance_status_into_open_or_closed() -> None:
    open_, closed = InstanceStatus.open(), InstanceStatus.closed()
    assert open_ == {
        InstanceStatus.OPEN,
        InstanceStatus.AWAITING_USER,
        InstanceStatus.AWAITING_SIGNATURE,
        InstanceStatus.AWAITING_APPROVAL,
    }
    assert closed == {InstanceStatus.READY, InstanceStatus.CANCELLED, InstanceStatus.EXPIRED}
    assert open_ | closed == set(InstanceStatus) and not open_ & closed


@pytest.mark.parametrize("status", list(InstanceStatus))
def test_it_takes_a_veto_while_waiting_and_after_ready_only(status: InstanceStatus) -> None:
    instance = TaskInstance(status=status)
    waiting = (
        InstanceStatus.AWAITING_USER,
        InstanceStatus.AWAITING_APPROVAL,
        InstanceStatus.AWAITING_SIGNATURE,
    )
    assert instance.accepts_veto is (status in (*waiting, InstanceStatus.READY))
    assert instance.is_open is (status in InstanceStatus.open())


@pytest.fixture
def waiting_run(alice: User) -> tuple[TaskInstance, Prompt]:
    """A planned run awaiting alice with exactly one prompt left open, to be set per case."""
    instance = run(shop(), alice)
    assert instance.status == InstanceStatus.AWAITING_USER
    first, *others = list(instance.prompts.order_by("id"))
    Prompt.objects.filter(pk__in=[p.pk for p in others]).update(state=PromptState.SUPERSEDED)
    return instance, first


def _set(prompt: Prompt, state: str, blocking: bool, expires_at: datetime | None) -> Prompt:
    Prompt.objects.filter(pk=prompt.pk).update(
        state=state, blocking=blocking, expires_at=expires_at
    )
    return Prompt.objects.get(pk=prompt.pk)


def test_it_finds_open_blocking_prompts_over_every_state_and_blocking(
    waiting_run: tuple[TaskInstance, Prompt],
) -> None:
    instance, prompt = waiting_run
    for state, blocking in itertools.product(PromptState, (False, True)):
        prompt = _set(prompt, state, blocking, EXPIRIES["later"])
        expected = state == PromptState.OPEN and blocking
        assert instance.prompts.blocking_open().filter(pk=prompt.pk).exists() is expected
        assert prompt.is_blocking_open is expected, (state, blocking)


def test_it_finds_overdue_prompts_from_their_time_to_live_on(
    waiting_run: tuple[TaskInstance, Prompt],
) -> None:
    instance, prompt = waiting_run
    for state, blocking, (name, expires_at) in itertools.product(
        PromptState, (False, True), EXPIRIES.items()
    ):
        prompt = _set(prompt, state, blocking, expires_at)
        due = name in ("past", "just before", "at")  # at its time to live it is overdue
        expected = state == PromptState.OPEN and blocking and due
        case = (state, blocking, name)
        assert instance.prompts.overdue(NOW).filter(pk=prompt.pk).exists() is expected, case
        assert prompt.is_overdue(NOW) is expected, case  # the same rule for a prompt read


@pytest.mark.parametrize("status", list(InstanceStatus))
def test_it_lists_an_instance_as_waiting_until_a_blocking_prompt_is_overdue(
    waiting_run: tuple[TaskInstance, Prompt], status: InstanceStatus
) -> None:
    instance, prompt = waiting_run
    TaskInstance.objects.filter(pk=instance.pk).update(status=status)
    for state, blocking, (name, expires_at) in itertools.product(
        (PromptState.OPEN, PromptState.ANSWERED), (False, True), EXPIRIES.items()
    ):
        _set(prompt, state, blocking, expires_at)
        counts = state == PromptState.OPEN and blocking
        overdue = counts and name in ("past", "just before", "at")
        expected = status in InstanceStatus.waiting_for_person() and not overdue
        found = TaskInstance.objects.waiting(NOW).with_next_expiry().filter(pk=instance.pk).first()
        case = (status, state, blocking, name)
        assert (found is not None) is expected, case
        if found is not None:
            # The earliest time to live of its open blocking prompts, for the inbox to show.
            assert found.next_expiry == (expires_at if counts else None), case


@pytest.mark.parametrize("status", list(InstanceStatus))
def test_it_finds_a_signature_overdue_from_its_due_time_on_in_every_status(
    waiting_run: tuple[TaskInstance, Prompt], status: InstanceStatus
) -> None:
    """Awaiting a signature and past its time to sign: the queryset, the model method and the
    inbox's `waiting` say the same, over every status and due time (none, or any of EXPIRIES)."""
    instance, prompt = waiting_run
    _set(prompt, PromptState.ANSWERED, True, None)  # only the signature's time counts here
    for name, due_at in EXPIRIES.items():
        TaskInstance.objects.filter(pk=instance.pk).update(status=status, signature_due_at=due_at)
        instance.refresh_from_db()
        expected = (
            status == InstanceStatus.AWAITING_SIGNATURE
            and name in ("past", "just before", "at")  # at its due time it is overdue
        )
        case = (status, name)
        assert TaskInstance.objects.signature_overdue(NOW).filter(pk=instance.pk).exists() is (
            expected
        ), case
        assert instance.signature_overdue(NOW) is expected, case
        waits = status in InstanceStatus.waiting_for_person() and not expected
        assert TaskInstance.objects.waiting(NOW).filter(pk=instance.pk).exists() is waits, case
