"""Task classes and instances for the classifier tests, built through the services."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.contrib.auth.models import User

from beliefs import services
from beliefs.models import Prompt, PromptState, TaskClass, TaskInstance
from beliefs.services import SYSTEM
from tests.builders import classify as set_classes
from tests.builders import open_instance, register_task_class


def shop() -> TaskClass:
    """A3: the shipping address is unclassified (the runtime suggests policy); the decision
    `ship` is reversible and fed by the item and the delivery speed."""
    task_class = register_task_class(
        key="commerce.ship_order",
        name="Ship an order",
        slots=[
            {"key": "item_sku", "label": "Item"},
            {"key": "shipping_address", "label": "Shipping address", "suggested_risk": "policy"},
            {"key": "delivery_speed", "label": "Delivery speed"},
            {"key": "gift_wrap", "label": "Gift wrap"},
        ],
        decisions=[{"key": "ship", "label": "Ship", "slots": ["item_sku", "delivery_speed"]}],
        actor=SYSTEM,
    )
    set_classes(
        task_class,
        slots={"item_sku": "reversible", "delivery_speed": "reversible", "gift_wrap": "cosmetic"},
        decisions={"ship": "reversible"},
    )
    return task_class


def contract() -> TaskClass:
    """A4: the counterparty's parts are policy, the decisions they feed irreversible; the
    entity id feeds two decisions."""
    task_class = register_task_class(
        key="legal.sign_contract",
        name="Sign a contract",
        slots=[
            {"key": "name", "label": "Counterparty name"},
            {"key": "entity_id", "label": "Entity id"},
            {"key": "reminder", "label": "Renewal reminder"},
            {"key": "scope", "label": "Access scope", "scope_order": ["read", "write"]},
        ],
        decisions=[
            {"key": "sign", "label": "Sign", "slots": ["name", "entity_id"]},
            {"key": "register", "label": "Register", "slots": ["entity_id"]},
        ],
        actor=SYSTEM,
    )
    set_classes(
        task_class,
        slots={
            "name": "policy",
            "entity_id": "policy",
            "reminder": "reversible",
            "scope": "policy",
        },
        decisions={"sign": "irreversible", "register": "irreversible"},
        monotonic=("scope",),
    )
    return task_class


def many_slots(count: int, key: str = "bulk.task") -> TaskClass:
    """`count` slots, half of them unclassified, two decisions each fed by every other slot."""
    slots = [{"key": f"s{i:03d}", "label": f"Slot {i}"} for i in range(count)]
    task_class = register_task_class(
        key=key,
        name=key,
        slots=slots,
        decisions=[
            {"key": "even", "slots": [s["key"] for s in slots[::2]]},
            {"key": "odd", "slots": [s["key"] for s in slots[1::2]]},
        ],
        actor=SYSTEM,
    )
    set_classes(
        task_class,
        slots={s["key"]: "reversible" for s in slots[: count // 2]},
        decisions={"even": "policy"},
    )
    return task_class


def run(
    task_class: TaskClass,
    principal: User,
    beliefs: list[dict[str, Any]] | None = None,
    world: dict[str, Any] | None = None,
) -> TaskInstance:
    """Open and plan an instance."""
    instance = open_instance(
        task_class_key=task_class.key,
        principal=principal.username,
        world=world,
        beliefs=beliefs,
        actor=SYSTEM,
    )
    return services.instance_plan(instance=instance, actor=SYSTEM)


def answered_run(task_class: TaskClass, principal: User, values: Mapping[str, Any]) -> TaskInstance:
    """A finished run: every value given by the user in this run (R2: silent, ready)."""
    instance = run(
        task_class,
        principal,
        beliefs=[{"slot": k, "value": v, "source": "user"} for k, v in values.items()],
    )
    assert instance.status == "ready"
    return instance


def open_prompt(instance: TaskInstance, slot_key: str) -> Prompt | None:
    return Prompt.objects.filter(
        instance=instance, slot__key=slot_key, state=PromptState.OPEN
    ).first()
