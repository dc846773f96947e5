"""Test data, built the way the product builds it: through the services, with risk classes
written straight to the rows as a classifier's decision would leave them (the classification
services have tests of their own in tests/classify).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.contrib.auth.models import User

from beliefs import schemas
from beliefs.domain.attention import changed_details
from beliefs.models import Belief, Decision, Prompt, PromptState, Slot, TaskClass, TaskInstance
from beliefs.schemas import parse
from beliefs.selectors.quorum import bound_world_changes
from beliefs.services.audit import SYSTEM, Actor
from beliefs.services.instances import belief_record, instance_open, instance_set_world
from beliefs.services.planning import instance_plan
from beliefs.services.responses import prompt_respond
from beliefs.services.task_classes import task_class_register


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
# the input schemas the API reads (`beliefs.schemas`), so a refused input raises the API's
# InvalidInput.


def register_task_class(
    *,
    key: str,
    actor: Actor,
    name: str | None = None,
    slots: Sequence[Mapping[str, Any]] = (),
    decisions: Sequence[Mapping[str, Any]] = (),
    open_slots: bool | None = None,
) -> TaskClass:
    body: dict[str, Any] = {"slots": list(slots), "decisions": list(decisions)}
    if name is not None:
        body["name"] = name
    if open_slots is not None:
        body["open_slots"] = open_slots
    return task_class_register(key=key, **parse(schemas.TaskClassIn, body, key=key), actor=actor)


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
    data = parse(schemas.InstanceIn, body)
    return instance_open(
        task_class_key=data["task_class"],
        principal=data["principal"],
        world=data.get("world"),
        beliefs=data.get("beliefs", []),
        actor=actor,
    )


def record_belief(*, instance: TaskInstance, data: Mapping[str, Any], actor: Actor) -> Belief:
    return belief_record(instance=instance, belief=parse(schemas.BeliefIn, dict(data)), actor=actor)


def set_world(*, instance: TaskInstance, world: Any, actor: Actor) -> TaskInstance:
    return instance_set_world(
        instance=instance, world=parse(schemas.WorldIn, {"world": world})["world"], actor=actor
    )


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
        prompt_respond(
            prompt_id=prompt.pk,
            user=user,
            action=action,
            version=prompt.version,
            value=value,
            value_confirmation=value,
        )
    instance.refresh_from_db()
    return instance


def confirm_or_answer(instance: TaskInstance, user: Any, asked: str) -> None:
    """Confirm every open blocking prompt that is pre-filled and answer every blank (ASK) one
    with `asked`, typed twice as a monotonic scope needs it. A confirm acknowledges every
    changed detail of its world, as a person who read them would."""
    for prompt in Prompt.objects.filter(instance=instance, state=PromptState.OPEN, blocking=True):
        value = asked if prompt.route == "ASK" else None
        prompt_respond(
            prompt_id=prompt.pk,
            user=user,
            action="answer" if value else "confirm",
            version=prompt.version,
            value=value,
            value_confirmation=value,
            acknowledged=changed_keys(prompt),
        )


def changed_keys(prompt: Prompt) -> list[str]:
    """The keys a confirm of `prompt` acknowledges: every changed detail of its world diff."""
    return [detail.key for detail in changed_details(prompt.world_diff)]


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
    classify(
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
    classify(
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
    classify(
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
    return instance_plan(instance=instance, actor=SYSTEM)


def answered_run(task_class: TaskClass, principal: User, values: Mapping[str, Any]) -> TaskInstance:
    """A finished run: every value given by the user in this run (R2: silent, ready)."""
    instance = run(
        task_class,
        principal,
        beliefs=[{"slot": k, "value": v, "source": "user"} for k, v in values.items()],
    )
    assert instance.status == "ready"
    return instance


def open_prompt_or_none(instance: TaskInstance, slot_key: str) -> Prompt | None:
    """The open prompt of `slot_key`, or None where the slot has none."""
    return Prompt.objects.filter(
        instance=instance, slot__key=slot_key, state=PromptState.OPEN
    ).first()


def ticks(instance: Any) -> list[str]:
    """What an approver names to acknowledge every changed detail of the worlds an instance's
    values were bound with ("slot:key"), as the approvers' page has them tick."""
    return [key for shown in bound_world_changes(instance) for key in shown.keys]
