"""What the attention tests share: a transfer whose recipient account is on record, its world
unchanged or changed, and a person's history of irreversible confirmations, each fast or slow."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib.auth.models import User
from django.utils import timezone

from beliefs.models import Prompt
from beliefs.selectors import attention
from beliefs.services.audit import Actor
from beliefs.services.planning import instance_plan
from beliefs.services.responses import prompt_respond, prompts_mark_shown
from tests.builders import answer_all, open_instance, open_prompt

ON_RECORD = "DE89 3704"
WORLD_SAME = {"recipient_account": {"iban": "DE89 3704", "holder": "Bob"}}
WORLD_CHANGED = {"recipient_account": {"iban": "DE02 1203", "holder": "Eve"}}
WINDOW = 2
FAST_S, SLOW_S = 0.3, 8.0
# The habit's thresholds these tests run under: a window of WINDOW confirmations.
HABIT_SETTINGS = {
    "CONSOLE_HABIT_WINDOW": WINDOW,
    "CONSOLE_HABIT_KEPT_SHARE": 0.9,
    "CONSOLE_HABIT_MEDIAN_DWELL_S": 2.0,
}


def run(rt: Actor, user: User, world: dict) -> Any:  # noqa: ANN401
    """A new attempt of the transfer for `user` in `world`, planned."""
    instance = open_instance(
        task_class_key="payments.transfer", principal=user.username, world=world, actor=rt
    )
    return instance_plan(instance=instance, actor=rt)


def shown(prompt: Prompt, user: User, seconds_ago: float) -> Prompt:
    """The prompt as first shown to `user` on a page `seconds_ago`."""
    prompts_mark_shown(instance=prompt.instance, prompts=[prompt], user=user)
    Prompt.objects.filter(pk=prompt.pk).update(
        shown_at=timezone.now() - timedelta(seconds=seconds_ago)
    )
    prompt.refresh_from_db()
    return prompt


def history(rt: Actor, user: User, *, fast: bool, runs: int = WINDOW) -> None:
    """Run 1 answered, then `runs` irreversible confirmations kept, each fast or slow."""
    answer_all(
        run(rt, user, WORLD_SAME),
        user,
        {"recipient_account": ON_RECORD, "reference": "rent", "memo": "March"},
    )
    for _ in range(runs):
        confirm_kept(rt, user, fast=fast)


def confirm_kept(rt: Actor, user: User, *, fast: bool) -> None:
    """One more irreversible confirmation that keeps the value on record, fast or slow."""
    tail = ON_RECORD[-4:] if attention.habit(user.pk).habitual else None
    prompt = shown(
        open_prompt(run(rt, user, WORLD_SAME), "recipient_account"),
        user,
        FAST_S if fast else SLOW_S,
    )
    prompt_respond(
        prompt_id=prompt.pk, user=user, action="confirm", version=prompt.version, typed_tail=tail
    )


def target(rt: Actor, user: User, *, changed: bool, risk: str) -> Prompt:
    """The recipient account's CONFIRM in a new attempt, shown a while ago; `risk` is the
    effective risk the prompt carries."""
    prompt = open_prompt(
        run(rt, user, WORLD_CHANGED if changed else WORLD_SAME), "recipient_account"
    )
    assert prompt.route == "CONFIRM" and prompt.effective_risk == "irreversible"
    if risk != "irreversible":
        # A CONFIRM whose effective risk is below irreversible: the rule reads the prompt's risk.
        Prompt.objects.filter(pk=prompt.pk).update(effective_risk=risk)
    return shown(Prompt.objects.select_related("slot").get(pk=prompt.pk), user, SLOW_S)
