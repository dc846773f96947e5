"""Test data helpers shared by every test area.

Risk classes are a classifier's decision (services of their own, tested in tests/classify);
here they are written straight to the rows, as the state a test starts from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from beliefs import services
from beliefs.api import serializers
from beliefs.api.serializers import parse
from beliefs.models import Belief, Decision, Prompt, PromptState, Slot, TaskClass, TaskInstance
from beliefs.services import Actor


def classify(
    task_class: TaskClass,
    *,
    slots: Mapping[str, str] | None = None,
    decisions: Mapping[str, str] | None = None,
    monotonic: tuple[str, ...] = (),
) -> None:
    """Set risk classes (and monotonic) as a classifier's decision would leave them."""
    for key, risk in (slots or {}).items():
        Slot.objects.filter(task_class=task_class, key=key).update(risk_class=risk)
    for key, risk in (decisions or {}).items():
        Decision.objects.filter(task_class=task_class, key=key).update(risk_class=risk)
    if monotonic:
        Slot.objects.filter(task_class=task_class, key__in=monotonic).update(monotonic=True)


def open_prompt(instance: TaskInstance, slot: str) -> Prompt:
    """The one open prompt of `slot` in `instance` (fails the test if there is none)."""
    return Prompt.objects.select_related("slot", "belief").get(
        instance=instance, slot__key=slot, state=PromptState.OPEN
    )


# --- the services, called with what a runtime would send -----------------------------------
# The services take typed, validated arguments; these helpers validate a runtime's JSON with
# the API's own serializers first, so a refused input raises the API's InvalidInput.


def register_task_class(
    *,
    key: str,
    actor: Actor,
    name: str | None = None,
    slots: Sequence[Mapping[str, Any]] = (),
    decisions: Sequence[Mapping[str, Any]] = (),
) -> TaskClass:
    body: dict[str, Any] = {"slots": list(slots), "decisions": list(decisions)}
    if name is not None:
        body["name"] = name
    return services.task_class_register(
        key=key, **parse(serializers.TaskClassIn, body, key=key), actor=actor
    )


def open_instance(
    *,
    task_class_key: str,
    principal: str,
    actor: Actor,
    world: Any = None,
    beliefs: Any = None,
) -> TaskInstance:
    body: dict[str, Any] = {"task_class": task_class_key, "principal": principal}
    if world is not None:
        body["world"] = world
    if beliefs is not None:
        body["beliefs"] = beliefs
    data = parse(serializers.InstanceIn, body)
    return services.instance_open(
        task_class_key=data["task_class"],
        principal=data["principal"],
        world=data.get("world"),
        beliefs=data.get("beliefs", []),
        actor=actor,
    )


def record_belief(*, instance: TaskInstance, data: Mapping[str, Any], actor: Actor) -> Belief:
    return services.belief_record(
        instance=instance, belief=parse(serializers.BeliefIn, dict(data)), actor=actor
    )


def set_world(*, instance: TaskInstance, world: Any, actor: Actor) -> TaskInstance:
    return services.instance_set_world(
        instance=instance, world=parse(serializers.WorldIn, {"world": world})["world"], actor=actor
    )
