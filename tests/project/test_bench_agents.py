"""`make bench`'s waiting agents run in processes of their own (`bench.agents`), ordered by
`bench.longpoll.Crowd`: they open and plan over real HTTP, wait with the client's `wait()`,
resume when their person answers, and stop waiting when told."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.test import Client

from beliefs.models import Decision, RuntimeAPIKey, TaskClass
from beliefs.schemas import TaskClassIn, parse
from beliefs.services.audit import Actor
from beliefs.services.task_classes import task_class_register
from bench.agents import CLASS
from bench.longpoll import Agent, Crowd, Person
from tests.support.live_server import LiveServer


def _bench_class(key: RuntimeAPIKey) -> None:
    """`bench.wait` as the benchmark registers it: one slot, asked before an irreversible act."""
    body = {
        "name": CLASS,
        "slots": [{"key": "s000", "label": "Slot s000"}],
        "decisions": [{"key": "act", "label": "Act", "slots": ["s000"]}],
    }
    task_class_register(key=CLASS, **parse(TaskClassIn, body, key=CLASS), actor=Actor(key=key))
    task_class = TaskClass.objects.get(key=CLASS)
    task_class.slots.update(risk_class="reversible")
    Decision.objects.filter(task_class=task_class).update(risk_class="irreversible")


@pytest.mark.django_db(transaction=True)
def test_the_agents_wait_in_their_own_processes_and_resume_when_their_person_answers(
    live_server: LiveServer,
    runtime_key: tuple[RuntimeAPIKey, str],
    alice: User,
    signed_in: Callable[[User], Client],
) -> None:
    key, raw = runtime_key
    alice_client = signed_in(alice)
    _bench_class(key)
    agents = [Agent(n=n, person=0) for n in range(3)]

    async def run() -> tuple[int, int]:
        crowd = await Crowd.start([live_server.url], raw, 2)
        try:
            await crowd.open(agents, [Person(alice.username, session="")])
            await crowd.arm(seconds=0.3, slack=0.5)
            before = await crowd.waiting()
            form = {"action": "confirm", "version": str(agents[0].version)}
            answered = await asyncio.to_thread(
                lambda: alice_client.post(
                    agents[0].prompt_path, form, headers={"HX-Request": "true"}
                )
            )
            assert answered.status_code == 200
            await crowd.finish([agents[0], agents[1]], timeout=2)
            return before, await crowd.waiting()
        finally:
            await crowd.close()

    waiting_before, waiting_after = asyncio.run(run())

    assert [bool(a.prompt_path) and not a.error for a in agents] == [True, True, True]
    assert len({a.instance_id for a in agents}) == 3
    assert waiting_before == 3
    # The answered agent resumed; the one whose person did not answer is reported as never
    # resumed, and every wait stopped.
    assert agents[0].resumed > 0 and agents[0].error == ""
    assert agents[1].resumed == 0
    assert waiting_after == 0
