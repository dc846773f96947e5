"""Every read the read layer writes as fixed SQL answers what its straightforward ORM version in
`tests.oracles` answers, over generated data: runtimes that own, share or only
use a class, runs of two people with beliefs of every status (ties in time included), retired
slots, decisions, plans that ask and plans that bind, answered and overdue prompts, receipts,
revoked keys, and readers who own the instance and readers who do not."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import uuid4

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from beliefs.domain.policy import RiskClass
from beliefs.domain.vocabulary import INSIGHTS_RUNS_SHOWN
from beliefs.models import (
    Belief,
    BeliefStatus,
    Decision,
    InstanceStatus,
    Prompt,
    PromptState,
    Runtime,
    RuntimeAPIKey,
    Slot,
    TaskClass,
    TaskClassShare,
    TaskInstance,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookEvent,
)
from beliefs.selectors import answering as fast_answering
from beliefs.selectors import beliefs as fast_beliefs
from beliefs.selectors import insights as fast_insights
from beliefs.selectors import instances as fast_instances
from beliefs.selectors import outbox as fast_outbox
from beliefs.selectors import pages as fast_pages
from beliefs.selectors import runtimes as fast_runtimes
from beliefs.services.audit import SYSTEM
from beliefs.services.planning import instance_plan
from beliefs.services.responses import prompt_respond
from tests import oracles

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 1, 1, tzinfo=UTC)
RISKS = [r.value for r in RiskClass]


def _fields(obj: Any) -> dict[str, Any]:
    """A model instance's loaded column values."""
    return {k: v for k, v in vars(obj).items() if not k.startswith("_")}


def _belief_view(belief: Any) -> Any:
    if belief is None:
        return None
    runtime = belief.instance.runtime
    return (
        *(getattr(belief, name) for name in fast_beliefs._BELIEF_NAMES),
        belief.instance.run_number,
        belief.instance.runtime_id,
        runtime.name if runtime is not None else None,
    )


def _slot_rows_view(found: list[fast_beliefs.SlotRow]) -> list[Any]:
    return [
        (
            tuple(getattr(row.slot, name) for name in fast_beliefs._SLOT_NAMES),
            row.fed,
            _belief_view(row.belief),
            row.carried,
        )
        for row in found
    ]


def _prompt_view(prompt: Prompt) -> tuple[Any, ...]:
    names = [name for _, name in fast_beliefs._OPEN_PROMPT_COLUMNS]
    return (*(getattr(prompt, name) for name in names), prompt.instance_id)


def _world(rng: random.Random) -> Any:
    return rng.choice([None, {}, {"n": 1}, {"n": rng.randint(1, 3), "who": {"a": "Ada"}}])


def _generate(seed: int, people: list[User]) -> list[TaskInstance]:
    """A class, its runtimes and runs of `people`, from `seed`."""
    rng = random.Random(seed)
    runtimes = [Runtime.objects.create(name=f"rt{seed}-{i}") for i in range(3)]
    task_class = TaskClass.objects.create(
        key=f"class{seed}", name="c", owner=rng.choice([None, runtimes[0]])
    )
    TaskClassShare.objects.create(
        task_class=task_class, runtime=runtimes[1], history=rng.random() < 0.5
    )
    TaskClassShare.objects.create(task_class=task_class, runtime=runtimes[2], history=False)
    slots = [
        Slot.objects.create(
            task_class=task_class,
            key=f"s{i}",
            label=f"Slot {i}",
            risk_class=rng.choice(RISKS),
            monotonic=rng.random() < 0.2,
            position=rng.randint(0, 3),  # ties: ordered by id then
            retired_at=T0 if rng.random() < 0.15 else None,
        )
        for i in range(7)
    ]
    for i in range(3):
        decision = Decision.objects.create(
            task_class=task_class, key=f"d{i}", label="d", risk_class=rng.choice(RISKS)
        )
        decision.slots.set(rng.sample(slots, rng.randint(0, 4)))
    instances = []
    for person in people:
        for run in range(1, 5):
            instances.append(
                TaskInstance.objects.create(
                    task_class=task_class,
                    principal=person,
                    run_number=run,
                    runtime=rng.choice([None, *runtimes]),
                    action_slots=[s.key for s in rng.sample(slots, rng.randint(1, len(slots)))],
                    world=_world(rng) or {},
                )
            )
    statuses = [BeliefStatus.ACTIVE] * 3 + [BeliefStatus.SUPERSEDED, BeliefStatus.VETOED]
    beliefs = [
        Belief(
            instance=(instance := rng.choice(instances)),
            principal_id=instance.principal_id,
            runtime_id=instance.runtime_id,
            slot=rng.choice(slots),
            value=rng.choice(["a", 1, True, {"k": [1, 2]}]),
            source=rng.choice(["user", "tool", "inference", "default"]),
            turn=rng.randint(1, 3),
            acquired_at=T0 + timedelta(seconds=rng.randint(0, 6)),  # ties in time
            world_ref=_world(rng),
            status=rng.choice(statuses),
        )
        for _ in range(40)
    ]
    rng.shuffle(beliefs)  # ids unrelated to runs or clocks
    Belief.objects.bulk_create(beliefs)
    for instance in instances:
        if rng.random() < 0.8:
            instance_plan(instance=instance, actor=SYSTEM)
    prompts = list(Prompt.objects.filter(instance__task_class=task_class).order_by("id"))
    for prompt in prompts:
        roll = rng.random()
        if roll < 0.15:
            prompt.state = PromptState.ANSWERED
            prompt.action = "confirm"
            prompt.response_value = prompt.prefill
            prompt.response_reason = rng.choice(["", "fine"])
            prompt.shown_at = T0
            prompt.responded_at = T0 + timedelta(seconds=5)
            prompt.save()
        elif roll < 0.25 and prompt.expires_at is not None:
            Prompt.objects.filter(pk=prompt.pk).update(expires_at=timezone.now() - timedelta(1))
    return instances


@pytest.mark.parametrize("seed", range(4))
def test_the_fast_reads_answer_as_the_orm(seed: int, alice: User, mallory: User) -> None:
    instances = _generate(seed, [alice, mallory])
    instances = list(TaskInstance.objects.filter(pk__in=[i.pk for i in instances]))
    assert {i.status for i in instances} >= {InstanceStatus.AWAITING_USER}, "a plan asks"
    stranger = Runtime.objects.create(name=f"stranger{seed}")
    for instance in instances:
        for owner in (
            {"runtime_id": instance.runtime_id},
            {"runtime_id": stranger.pk},
            {"principal_id": instance.principal_id},
            {"principal_id": (mallory if instance.principal_id == alice.pk else alice).pk},
        ):
            if owner.get("runtime_id", 0) is None:
                continue
            fast = fast_instances.instance_read(instance.pk, **owner)
            slow = oracles.instance_read(instance.pk, **owner)
            assert (fast is None) == (slow is None), owner
            if fast is not None and slow is not None:
                assert json.dumps(fast.payload) == json.dumps(slow.payload)
                assert fast.expiry_due == slow.expiry_due
        for runtime_id in {None, instance.runtime_id, stranger.pk}:
            for lock in (False, True):
                fast_i = fast_instances.instance_to_plan(
                    instance.pk, runtime_id=runtime_id, lock=lock
                )
                slow_i = oracles.instance_to_plan(instance.pk, runtime_id=runtime_id, lock=lock)
                if fast_i is None or slow_i is None:
                    assert fast_i is None and slow_i is None
                    continue
                assert _fields(fast_i) == _fields(slow_i)
                if lock:
                    assert _fields(fast_i.task_class) == _fields(slow_i.task_class)
                    assert _fields(fast_i.principal) == _fields(slow_i.principal)
        assert fast_instances.instance_to_plan(uuid4(), runtime_id=None, lock=False) is None
        assert _slot_rows_view(fast_beliefs.slot_rows(instance)) == _slot_rows_view(
            oracles.slot_rows(instance)
        )
        assert [_prompt_view(p) for p in fast_beliefs.open_prompts_of(instance)] == [
            _prompt_view(p) for p in oracles.open_prompts_of(instance)
        ]
    # What an open counts: the person's open instances per runtime (none included), and their
    # last run number of a class (none yet for another class).
    other_class = TaskClass.objects.create(key=f"other{seed}", name="other")
    counted = set()
    for person in (alice, mallory):
        for runtime_id in {None, stranger.pk, *(i.runtime_id for i in instances)}:
            for class_id in (instances[0].task_class_id, other_class.pk):
                fast_c = fast_instances.opening_counts(person.pk, runtime_id, class_id)
                assert fast_c == oracles.opening_counts(person.pk, runtime_id, class_id)
                counted.add(fast_c)
    assert len(counted) > 2, counted
    slots = list(Slot.objects.filter(task_class=instances[0].task_class))
    fast_choice = fast_beliefs.choose_beliefs_for(instances, slots)
    slow_choice = oracles.choose_beliefs_for(instances, slots)
    assert {
        i: {s: (_belief_view(b), c) for s, (b, c) in chosen.items()}
        for i, chosen in fast_choice.items()
    } == {
        i: {s: (_belief_view(b), c) for s, (b, c) in chosen.items()}
        for i, chosen in slow_choice.items()
    }
    assert any(chosen for chosen in slow_choice.values()), "some slot binds a belief"


@pytest.mark.parametrize("seed", range(3))
def test_the_declared_slots_answer_as_the_orm(seed: int, alice: User, mallory: User) -> None:
    task_class_id = _generate(seed, [alice, mallory])[0].task_class_id
    slots = list(Slot.objects.filter(task_class_id=task_class_id).order_by("id"))
    # One more left undeclared (registered by an open of an open-slots class) and one retired.
    Slot.objects.filter(pk=slots[0].pk).update(declared=False)
    Slot.objects.filter(pk=slots[1].pk).update(retired_at=T0)
    fast = fast_beliefs.declared_slots(task_class_id)
    slow = oracles.declared_slots(task_class_id)
    assert list(fast) == list(slow)
    assert [_fields(s) for s in fast.values()] == [_fields(s) for s in slow.values()]
    assert slots[0].key not in slow and slots[1].key not in slow and slow


def _full_prompt_view(prompt: Prompt) -> tuple[Any, ...]:
    return (_fields(prompt), _fields(prompt.slot), _belief_view(prompt.belief))


@pytest.mark.parametrize("seed", range(4))
def test_the_page_and_answer_reads_answer_as_the_orm(seed: int, alice: User, mallory: User) -> None:
    made = _generate(seed, [alice, mallory])
    instances = list(TaskInstance.objects.filter(pk__in=[i.pk for i in made]).order_by("pk"))
    # One is answered to the end: a ready instance, with its receipt and answered prompts.
    now = timezone.now()
    ready = next(
        i
        for i in instances
        if i.status == InstanceStatus.AWAITING_USER and not i.prompts.overdue(now).exists()
    )
    for _ in range(5):  # (an answer may re-plan what another question shows: answer again)
        for prompt in Prompt.objects.filter(instance=ready, state=PromptState.OPEN, blocking=True):
            confirm = prompt.route == "CONFIRM"
            prompt_respond(
                prompt_id=prompt.pk,
                user=ready.principal,
                action="confirm" if confirm else "answer",
                version=prompt.version,
                value=None if confirm else "typed",
                value_confirmation=None if confirm else "typed",
                acknowledged=[d["key"] for d in prompt.world_diff],
            )
    ready.refresh_from_db()
    assert ready.status == InstanceStatus.READY and ready.receipt_id is not None
    # Two wait for a passkey signature, one of them past its time.
    signing = [i for i in instances if i.status == InstanceStatus.AWAITING_USER][-2:]
    for instance, due in zip(signing, (timedelta(hours=-1), timedelta(hours=1)), strict=False):
        TaskInstance.objects.filter(pk=instance.pk).update(
            status=InstanceStatus.AWAITING_SIGNATURE, signature_due_at=timezone.now() + due
        )
    instances = list(TaskInstance.objects.filter(pk__in=[i.pk for i in made]).order_by("pk"))
    for instance in instances:
        other = mallory if instance.principal_id == alice.pk else alice
        assert fast_pages.instance_decisions(instance) == oracles.instance_decisions(instance)
        for person in (instance.principal, other):
            fast_page = fast_pages.instance_page(instance.pk, principal_id=person.pk)
            slow_page = oracles.instance_page(instance.pk, principal_id=person.pk)
            if fast_page is None or slow_page is None:
                assert fast_page is None and slow_page is None and person == other
                continue
            slow_fields = {
                k: v for k, v in _fields(slow_page.instance).items() if k != "beliefs_at"
            }
            assert _fields(fast_page.instance) == slow_fields
            for related in ("task_class", "principal", "receipt"):
                fast_related = getattr(fast_page.instance, related)
                slow_related = getattr(slow_page.instance, related)
                assert (fast_related is None) == (slow_related is None), related
                if fast_related is not None:
                    assert _fields(fast_related) == _fields(slow_related), related
            assert fast_page.beliefs_at == slow_page.beliefs_at
            assert [_full_prompt_view(p) for p in fast_page.prompts] == [
                _full_prompt_view(p) for p in slow_page.prompts
            ]
        for prompt in Prompt.objects.filter(instance=instance):
            for person, instance_id in (
                (instance.principal, instance.pk),
                (other, instance.pk),
                (instance.principal, uuid4()),
            ):
                fast_p = fast_answering.prompt_to_answer(
                    instance_id, prompt.pk, principal_id=person.pk
                )
                slow_p = oracles.prompt_to_answer(instance_id, prompt.pk, principal_id=person.pk)
                if fast_p is None or slow_p is None:
                    assert fast_p is None and slow_p is None
                    continue
                assert (_fields(fast_p), _fields(fast_p.slot), fast_p.instance.status) == (
                    _fields(slow_p),
                    _fields(slow_p.slot),
                    slow_p.instance.status,
                )
            for person in (instance.principal, other):
                fast_a = fast_answering.answer_under_lock(prompt.pk, principal_id=person.pk)
                slow_a = oracles.answer_under_lock(prompt.pk, principal_id=person.pk)
                if fast_a is None or slow_a is None:
                    assert fast_a is None and slow_a is None and person == other
                    continue
                assert _fields(fast_a.instance) == _fields(slow_a.instance)
                for related in ("task_class", "principal", "runtime"):
                    fast_related = getattr(fast_a.instance, related)
                    slow_related = getattr(slow_a.instance, related)
                    assert (fast_related is None) == (slow_related is None), related
                    if fast_related is not None:
                        assert _fields(fast_related) == _fields(slow_related), related
                assert fast_a.prompt.pk == slow_a.prompt.pk == prompt.pk
                assert [_full_prompt_view(p) for p in fast_a.prompts] == [
                    _full_prompt_view(p) for p in slow_a.prompts
                ]
                assert fast_a.last_turn == slow_a.last_turn
    # Where each person goes next, at moments either side of the prompts' and signatures'
    # times: overdue prompts and a signature past its time leave an instance out.
    found = set()
    for moment in (now - timedelta(days=2), timezone.now(), now + timedelta(days=30)):
        for instance in instances:
            for person in (alice, mallory):
                fast_n = fast_pages.next_waiting(person, moment, instance)
                slow_n = oracles.next_waiting(person, moment, instance)
                assert (fast_n is None) == (slow_n is None)
                if fast_n is not None and slow_n is not None:
                    assert _fields(fast_n) == _fields(slow_n)
                    assert _fields(fast_n.task_class) == _fields(slow_n.task_class)
                    found.add(fast_n.pk)
    assert len(found) > 1, "several instances are found next"
    waiting_now = {
        i.pk
        for person in (alice, mallory)
        for i in TaskInstance.objects.filter(principal=person).waiting(timezone.now())
    }
    assert waiting_now < {
        i.pk for i in instances if i.status in InstanceStatus.waiting_for_person()
    }, "some instance waiting for its person is left out as overdue"


@pytest.mark.parametrize("seed", range(3))
def test_the_attention_reads_answer_as_the_orm_and_as_one(
    seed: int, alice: User, mallory: User
) -> None:
    from django.contrib.auth.models import Group

    from beliefs.domain.vocabulary import AuditKind
    from beliefs.selectors import attention as fast_attention
    from beliefs.selectors import passkeys as fast_passkeys
    from beliefs.services.audit import Actor, audit

    rng = random.Random(seed)
    instances = _generate(seed, [alice, mallory])
    group = Group.objects.create(name=f"approvers {seed}")
    for decision in Decision.objects.filter(task_class=instances[0].task_class_id):
        Decision.objects.filter(pk=decision.pk).update(
            requires_signature=rng.random() < 0.5,
            approvals_required=rng.randint(1, 3),
            approvers=rng.choice([None, group]),
        )
    answered = Prompt.objects.filter(instance__principal=alice).order_by("id")[:5]
    for n, prompt in enumerate(answered):  # irreversible confirmations, kept or edited
        Prompt.objects.filter(pk=prompt.pk).update(
            route="CONFIRM",
            effective_risk="irreversible",
            state=PromptState.ANSWERED,
            action=rng.choice(["confirm", "edit"]),
            shown_at=rng.choice([None, T0]),
            responded_at=T0 + timedelta(seconds=n % 3),  # ties: the newest id first
        )
    assert any(fast_passkeys.decisions_fed(i) for i in instances), "some action feeds one"
    for instance in instances:
        assert fast_passkeys.decisions_fed(instance) == oracles.decisions_fed(instance)
    assert any(d.approvers_name for i in instances for d in oracles.decisions_fed(i))
    for person in (alice, mallory):
        for kinds in (
            [],
            [AuditKind.ATTENTION_FRICTION_RAISED],
            [AuditKind.ATTENTION_FRICTION_LOWERED],
        ):
            for kind in kinds:
                audit(kind, actor=Actor(user=person), subject="s", data={})
            for limit in (0, 1, 3, 20):
                # One query answers what the two reads answer apart, and as the ORM does.
                expected = oracles.confirmations_and_friction(person.pk, limit)
                assert fast_attention.confirmations_and_friction(person.pk, limit) == expected
                assert fast_attention.recent_confirmations(person.pk, limit) == expected[0]
                assert fast_attention.friction_raised(person.pk) == expected[1]
    samples, raised = fast_attention.confirmations_and_friction(alice.pk, 20)
    assert len(samples) >= 5 and not raised, "lowered last"


def test_the_event_reads_find_the_next_number_and_the_receiving_endpoints(alice: User) -> None:
    from beliefs.models import WebhookEndpoint, WebhookEvent
    from beliefs.selectors import events as fast_events

    runtimes = [Runtime.objects.create(name=f"events-{i}") for i in range(3)]
    for n, (active, deleted) in enumerate(
        [(True, None), (False, None), (True, T0), (True, None), (True, None)]
    ):
        WebhookEndpoint.objects.create(
            runtime=runtimes[n % 2],
            url=f"https://hooks.example.org/{n}",
            secret="whsec_x",
            previous_secret="whsec_old" if n == 4 else "",
            previous_secret_until=T0 if n == 4 else None,
            event_types=["instance.ready"] if n == 3 else [],
            active=active,
            deleted_at=deleted,
        )
    task_class = TaskClass.objects.create(key="events", name="events")
    instances = [
        TaskInstance.objects.create(task_class=task_class, principal=alice, run_number=n)
        for n in (1, 2)
    ]
    for sequence in (1, 2, 5):
        WebhookEvent.objects.create(
            webhook_id=f"msg_{sequence}",
            type="instance.ready",
            instance=instances[0],
            sequence=sequence,
            payload={},
        )
    receiving = [fast_events.event_reads(None, r.pk)[1] for r in runtimes]
    assert [[e.url for e in found] for found in receiving] == [
        ["https://hooks.example.org/0", "https://hooks.example.org/4"],
        ["https://hooks.example.org/3"],
        [],
    ]
    assert fast_events.event_reads(instances[0].pk, None) == (6, [])
    assert fast_events.event_reads(instances[1].pk, None) == (1, [])
    assert fast_events.event_reads(None, None) == (None, [])
    # Every instance (and none) with every runtime (and none), as the ORM reads the two.
    for instance in [None, *instances]:
        for runtime in [None, *runtimes]:
            sequence, found = fast_events.event_reads(
                None if instance is None else instance.pk, None if runtime is None else runtime.pk
            )
            assert sequence == (
                None if instance is None else oracles.next_event_sequence(instance.pk)
            )
            expected = [] if runtime is None else oracles.receiving_endpoints(runtime.pk)
            assert [_fields(e) for e in found] == [_fields(e) for e in expected]


def test_the_key_read_answers_as_the_orm(db: None) -> None:
    runtime = Runtime.objects.create(name="keys")
    made = [RuntimeAPIKey.objects.create_key(name=f"k{i}", runtime=runtime) for i in range(3)]
    made[1][0].revoked = True
    made[1][0].save()
    for key, _ in made:
        fast = fast_runtimes.usable_runtime_key(key.prefix)
        slow = oracles.usable_runtime_key(key.prefix)
        if fast is None or slow is None:
            assert fast is None and slow is None and key.revoked
            continue
        assert _fields(fast) == _fields(slow)
        assert _fields(fast.runtime) == _fields(slow.runtime)
    assert fast_runtimes.usable_runtime_key("nosuch") is None
    assert oracles.usable_runtime_key("nosuch") is None


@pytest.mark.parametrize("seed", range(3))
def test_the_insights_reads_answer_as_the_orm(seed: int, alice: User) -> None:
    rng = random.Random(seed)
    classes = [TaskClass.objects.create(key=f"k{seed}-{i}", name="c") for i in range(3)]
    now = timezone.now()
    instances = [
        TaskInstance.objects.create(
            task_class=rng.choice(classes),
            principal=User.objects.create(username=f"p{seed}-{i}"),  # runs of a class: one each
            run_number=rng.randint(1, INSIGHTS_RUNS_SHOWN + 2),
            planned_at=None if rng.random() < 0.2 else now - timedelta(seconds=i),
            blocking_asked=rng.randint(0, 4),
        )
        for i in range(30)
    ]
    diffs: list[Any] = [
        [],
        [{"key": "a", "change": "unchanged"}],
        [{"key": "a", "change": "added"}],
    ]
    diffs.append([{"key": "a"}])  # an entry without "change" counts as one
    for i in range(60):
        instance = rng.choice(instances)
        shown = now - timedelta(seconds=rng.randint(0, 50), microseconds=rng.randint(0, 999999))
        Prompt.objects.create(
            instance=instance,
            slot=Slot.objects.create(task_class=instance.task_class, key=f"s{i}", label="s"),
            route=rng.choice(["CONFIRM", "ASK", "SURFACED"]),
            rule="R1",
            blocking=rng.random() < 0.8,
            state=rng.choice([PromptState.ANSWERED] * 3 + [PromptState.OPEN]),
            action=rng.choice(["confirm", "edit", "answer"]),
            world_diff=rng.choice(diffs),
            shown_at=None if rng.random() < 0.2 else shown,
            responded_at=None
            if rng.random() < 0.1
            else shown + timedelta(seconds=rng.choice([0, 1, 3]), microseconds=i),
        )
    assert fast_insights.convergence() == oracles.convergence()
    fast, slow = fast_insights.fatigue(), oracles.fatigue()
    assert fast == slow
    assert slow.confirms and slow.dwell_median_s is not None and slow.confirms_world_changed


def _delivery_view(delivery: WebhookDelivery) -> tuple[Any, ...]:
    return (_fields(delivery), _fields(delivery.event), _fields(delivery.endpoint))


@pytest.mark.parametrize("seed", range(3))
def test_the_claim_reads_answer_as_the_orm(seed: int) -> None:
    """Deliveries of every state, due and not (ties in time included), held or not, leases
    running and run out, over endpoints of several runtimes; asked for all, one, one
    endpoint's, and with endpoints and runtimes left out."""
    rng = random.Random(seed)
    now = timezone.now()
    runtimes = [Runtime.objects.create(name=f"outbox{seed}-{i}") for i in range(3)]
    endpoints = [
        WebhookEndpoint.objects.create(
            runtime=rng.choice(runtimes),
            url=f"https://example.org/{i}",
            secret=f"whsec_{i}",
            previous_secret=rng.choice(["", "whsec_old"]),
            previous_secret_until=rng.choice([None, now]),
            event_types=rng.choice([[], ["instance.ready"]]),
            active=rng.random() < 0.8,
        )
        for i in range(5)
    ]
    states = ["pending"] * 4 + ["sending", "succeeded", "failed"]
    deliveries = []
    for i in range(60):
        event = WebhookEvent.objects.create(
            webhook_id=f"msg_{seed}_{i}",
            type="instance.ready",
            runtime=rng.choice(runtimes),
            payload={"type": "instance.ready", "data": {"n": i, "é": [1, None]}},
        )
        deliveries.append(
            WebhookDelivery(
                event=event,
                endpoint=rng.choice(endpoints),
                state=rng.choice(states),
                attempts=rng.randint(0, 3),
                next_attempt_at=now + timedelta(seconds=rng.randint(-3, 2)),  # ties in time
                lease_until=rng.choice(
                    [None, now - timedelta(seconds=1), now, now + timedelta(microseconds=1)]
                ),
                claimed_by=rng.choice(["", "w1#a.1", "w1#a.2", "w2#b.1"]),
                held=rng.random() < 0.3,
                last_status_code=rng.choice([None, 204, 500]),
            )
        )
    rng.shuffle(deliveries)  # ids unrelated to due times
    WebhookDelivery.objects.bulk_create(deliveries)
    ids = [d.pk for d in WebhookDelivery.objects.all()]
    asks: list[dict[str, Any]] = [
        {"due_at": now, "limit": 100},
        {"due_at": now - timedelta(seconds=2), "limit": 5},
        {"due_at": now, "limit": 1, "only": rng.choice(ids)},
        {"due_at": now, "limit": 100, "endpoint_id": endpoints[0].pk},
        {"due_at": now, "limit": 100, "left_out_endpoints": [endpoints[1].pk, endpoints[2].pk]},
        {"due_at": now, "limit": 7, "left_out_runtimes": [runtimes[0].pk]},
        {
            "due_at": now,
            "limit": 100,
            "left_out_endpoints": [endpoints[3].pk],
            "left_out_runtimes": [runtimes[1].pk],
        },
    ]
    for ask in asks:
        fast = fast_outbox.claimable_deliveries(**ask)
        slow = oracles.claimable_deliveries(**ask)
        assert [_delivery_view(d) for d in fast] == [_delivery_view(d) for d in slow], ask
    assert oracles.claimable_deliveries(due_at=now, limit=100), "some are due"
    for runtime_ids in (None, [], [runtimes[0].pk], [r.pk for r in runtimes]):
        for at in (now - timedelta(seconds=1), now):
            fast_lanes = fast_outbox.lanes_in_flight(at, runtime_ids)
            slow_lanes = oracles.lanes_in_flight(at, runtime_ids)
            assert sorted(fast_lanes) == sorted(slow_lanes), runtime_ids
    assert oracles.lanes_in_flight(now - timedelta(seconds=1)), "some are in flight"
    for asked in ([], [runtimes[2].pk, runtimes[0].pk], [runtimes[1].pk, 10**9]):
        assert fast_outbox.lock_runtimes(asked) == oracles.lock_runtimes(asked)
