"""What an answer to a prompt reads first: the instance under the lock every writer takes, found
through the prompt and its principal, with every prompt the answer and the re-plan after it look
at (two queries, which a person's every click runs)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Max, OuterRef, Q, Subquery

from beliefs.models import Belief, Prompt, PromptState, TaskInstance
from beliefs.selectors.access import Owner
from beliefs.selectors.beliefs import with_light_instance

# The prompts an answer looks at besides its own: the open ones (the re-plan reconciles them)
# and the answered ones (a receipt names who answered what).
LOOKED_AT = (PromptState.OPEN, PromptState.ANSWERED)


@dataclass(frozen=True)
class AnswerRead:
    """The instance locked, with its task class, principal and runtime attached; the prompt
    answered; `prompts`, the instance's open and answered prompts and the one answered, by id,
    each with its slot and its belief (of the belief's instance, its run number and runtime);
    `last_turn`, the highest turn of the instance's beliefs (0: none)."""

    instance: TaskInstance
    prompt: Prompt
    prompts: list[Prompt]
    last_turn: int

    def open_prompts(self) -> list[Prompt]:
        return [p for p in self.prompts if p.state == PromptState.OPEN]


def prompt_to_answer(instance_id: Any, prompt_id: int, *, principal_id: int) -> Prompt | None:
    """The prompt of that instance, with its slot and its instance, if `principal_id` is the
    instance's principal; else None. What a page reads to parse the answer a person posts,
    before the answer itself (`answer_under_lock`)."""
    owner = Owner.of(principal_id=principal_id)
    found = Prompt.objects.filter(owner.q("instance__"), pk=prompt_id, instance_id=instance_id)
    return found.select_related("slot", "instance").first()


def answer_under_lock(prompt_id: int, *, principal_id: int) -> AnswerRead | None:
    """The prompt's instance under its row lock (only the instance's row: its task class,
    principal and runtime are read, not locked), if `principal_id` is its principal; None for
    anyone else or no such prompt. The caller holds a transaction."""
    owner = Owner.of(principal_id=principal_id)
    of_prompt = Prompt.objects.filter(pk=prompt_id).values("instance_id")
    last_turn = (
        Belief.objects.filter(instance=OuterRef("pk"))
        .order_by()
        .values("instance")
        .annotate(m=Max("turn"))
        .values("m")
    )
    instance = (
        TaskInstance.objects.select_for_update(of=("self",), no_key=True)
        .select_related("task_class", "principal", "runtime")
        .annotate(last_turn=Subquery(last_turn))
        .filter(owner.q(), pk=Subquery(of_prompt))
        .first()
    )
    if instance is None:
        return None
    prompts = list(
        with_light_instance(
            Prompt.objects.filter(Q(state__in=LOOKED_AT) | Q(pk=prompt_id), instance=instance)
            .select_related("slot", "belief", "belief__instance__runtime")
            .order_by("id"),
            "belief__instance",
        )
    )
    for prompt in prompts:
        Prompt.instance.field.set_cached_value(prompt, instance)
    (prompt,) = [p for p in prompts if p.pk == prompt_id]
    return AnswerRead(instance, prompt, prompts, instance.last_turn or 0)
