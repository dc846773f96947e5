"""Builders shared by the domain and API tests: task classes with risk classes set directly.

Risk classes are a classifier's job (another service); here they are written to the rows, as a
classifier's decision would leave them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from beliefs import services
from beliefs.models import Prompt, PromptState, TaskClass, TaskInstance
from beliefs.services import Actor
from tests.builders import classify, open_prompt, register_task_class  # noqa: F401 - re-exported


def register(
    key: str,
    *,
    actor: Actor,
    slots: list[dict[str, Any]],
    decisions: list[dict[str, Any]] | None = None,
    risks: Mapping[str, str] | None = None,
    decision_risks: Mapping[str, str] | None = None,
    monotonic: tuple[str, ...] = (),
) -> TaskClass:
    task_class = register_task_class(
        key=key, name=key, slots=slots, decisions=decisions or [], actor=actor
    )
    classify(task_class, slots=risks, decisions=decision_risks, monotonic=monotonic)
    return task_class


def transfer(actor: Actor) -> TaskClass:
    """A1: the recipient account feeds an irreversible decision; memo is cosmetic; the
    reference is reversible."""
    return register(
        "payments.transfer",
        actor=actor,
        slots=[
            {"key": "recipient_account", "label": "Recipient account"},
            {"key": "reference", "label": "Reference"},
            {"key": "memo", "label": "Memo"},
        ],
        decisions=[
            {"key": "send_transfer", "slots": ["recipient_account"]},
        ],
        risks={"recipient_account": "reversible", "reference": "reversible", "memo": "cosmetic"},
        decision_risks={"send_transfer": "irreversible"},
    )


def access(actor: Actor) -> TaskClass:
    """A6: a monotonic scope with an order."""
    return register(
        "access.grant",
        actor=actor,
        slots=[
            {"key": "scope", "label": "Scope", "scope_order": ["read", "write", "admin"]},
            {"key": "resource", "label": "Resource"},
        ],
        decisions=[{"key": "grant_access", "slots": ["scope", "resource"]}],
        risks={"scope": "policy", "resource": "reversible"},
        decision_risks={"grant_access": "policy"},
        monotonic=("scope",),
    )


def answer_all(instance: TaskInstance, user: Any, values: Mapping[str, Any]) -> TaskInstance:
    """Answer every open blocking prompt of the instance with the value given for its slot."""
    for prompt in Prompt.objects.filter(
        instance=instance, state=PromptState.OPEN, blocking=True
    ).select_related("slot"):
        action = "answer" if prompt.route == "ASK" else "edit"
        value = values[prompt.slot.key]
        services.prompt_respond(
            prompt_id=prompt.pk,
            user=user,
            action=action,
            version=prompt.version,
            value=value,
            value_confirmation=value,
        )
    instance.refresh_from_db()
    return instance
