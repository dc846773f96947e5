"""The `instance.awaiting_user` event that planning writes names the open blocking prompts it
holds in memory: the same list, in the same order, as reading them afterwards gives."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.utils import timezone

from beliefs.models import Prompt, PromptState, Slot, TaskInstance, WebhookEvent
from beliefs.services import planning
from beliefs.services.audit import SYSTEM
from beliefs.services.notify import _blocking_prompts, _prompt_summaries
from beliefs.services.responses import prompt_respond
from tests.builders import many_slots, run
from tests.support.outbound import open_transfer


def _awaiting(instance: TaskInstance) -> list[dict[str, Any]]:
    """The prompts of the instance's latest awaiting_user event."""
    event = (
        WebhookEvent.objects.filter(instance=instance, type="instance.awaiting_user")
        .order_by("-sequence")
        .first()
    )
    assert event is not None
    prompts: list[dict[str, Any]] = event.payload["data"]["prompts"]
    assert event.payload["data"]["blocking"] == len(prompts)
    return prompts


def test_a_first_plan_names_its_blocking_prompts_in_the_slots_order_not_the_ids(
    alice: User,
) -> None:
    task_class = many_slots(9)
    # Positions the reverse of the ids: the order is the slots', not the rows'.
    for position, slot in enumerate(Slot.objects.filter(task_class=task_class).order_by("-pk")):
        slot.position = position
        slot.save(update_fields=["position"])
    beliefs = [{"slot": f"s{i:03d}", "value": f"v{i}", "source": "tool"} for i in range(0, 9, 2)]
    instance = run(task_class, alice, beliefs=beliefs)
    assert instance.status == "awaiting_user"

    named = _awaiting(instance)
    assert len(named) >= 2
    assert named == _prompt_summaries(_blocking_prompts(instance))


def test_a_veto_after_ready_names_the_prompts_open_then(alice: User) -> None:
    instance = open_transfer(SYSTEM)
    first = Prompt.objects.get(instance=instance, state=PromptState.OPEN, blocking=True)
    prompt_respond(prompt_id=first.pk, user=alice, action="confirm", version=first.version)
    surfaced = Prompt.objects.get(instance=instance, state=PromptState.OPEN, slot__key="reference")
    prompt_respond(
        prompt_id=surfaced.pk,
        user=alice,
        action="veto",
        version=surfaced.version,
        reason="wrong invoice",
    )
    instance.refresh_from_db()
    assert instance.status == "awaiting_user"
    named = _awaiting(instance)
    assert [p["slot"] for p in named] == ["reference"]
    assert named == _prompt_summaries(_blocking_prompts(instance))


def test_an_open_prompt_of_a_slot_planning_did_not_route_sends_it_back_to_the_read(
    alice: User,
) -> None:
    task_class = many_slots(2)
    instance = run(task_class, alice)
    prompts = list(Prompt.objects.filter(instance=instance, state=PromptState.OPEN))
    assert prompts
    routed = planning._reconcile(instance, [], timezone.now())
    routed.created.clear()  # (unsaved: the prompts read above are the open ones)
    # As if one of the open prompts were for a slot no longer in the action.
    routed.planned[:] = [
        entry for entry in routed.planned if entry[0].slot.pk != prompts[0].slot_id
    ]
    assert planning._blocking_open(prompts, routed) is None
    # And with every slot routed, the list in memory.
    whole = planning._reconcile(instance, [], timezone.now())
    whole.created.clear()
    found = planning._blocking_open(prompts, whole)
    assert found is not None
    assert [p.pk for p in found] == [p.pk for p in _blocking_prompts(instance)]
