"""Test data for the end-user pages, built through the services as a runtime would.

Risk classes are a classifier's decision; here they are written to the Slot and Decision rows
directly, as that decision would leave them.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User

from beliefs.models import Slot, TaskClass, TaskInstance
from beliefs.services.audit import Actor
from beliefs.services.planning import instance_plan
from tests.builders import (  # noqa: F401 - open_prompt and the helpers for the page tests
    classify,
    open_instance,
    open_prompt,
    register_task_class,
)

RUNTIME = Actor()  # the system stands in for a runtime key

VENDOR_WORLD_RUN_1 = {
    "recipient_account": {"holder": "Acme B.V.", "bank": "ABN AMRO", "verified": True},
    "reference": {"invoice": "INV-2024-001", "status": "open"},
}
VENDOR_WORLD_RUN_2 = {
    "recipient_account": {"holder": "Acme B.V.", "bank": "Revolut", "verified": True},
    "reference": {"invoice": "INV-2024-001", "status": "paid"},
}


def vendor_payment() -> TaskClass:
    """Pay a vendor: money and the account are irreversible, the schedule is policy, the
    approval scope is monotonic (single < recurring < unlimited), the memo is cosmetic."""
    task_class = register_task_class(
        key="payments.vendor",
        name="Vendor payment",
        slots=[
            {"key": "amount", "label": "Amount", "value_type": "number"},
            {"key": "recipient_account", "label": "Recipient account"},
            {"key": "reference", "label": "Payment reference"},
            {"key": "due_date", "label": "Due date", "value_type": "date"},
            {
                "key": "approval_scope",
                "label": "Approval scope",
                "scope_order": ["single", "recurring", "unlimited"],
            },
            {"key": "memo", "label": "Memo"},
        ],
        decisions=[
            {
                "key": "send_payment",
                "label": "Send payment",
                "slots": ["amount", "recipient_account"],
            },
            {"key": "schedule", "label": "Schedule it", "slots": ["due_date", "reference"]},
            {"key": "authorize", "label": "Authorize the vendor", "slots": ["approval_scope"]},
        ],
        actor=RUNTIME,
    )
    classify(
        task_class,
        slots={
            "amount": "irreversible",
            "recipient_account": "reversible",
            "reference": "reversible",
            "due_date": "policy",
            "approval_scope": "policy",
            "memo": "cosmetic",
        },
        decisions={"send_payment": "irreversible", "schedule": "policy", "authorize": "policy"},
        monotonic=("approval_scope",),
    )
    return task_class


def vendor_run_1(user: User) -> TaskInstance:
    """Run 1, everything said by the user: it binds silently and is ready at once."""
    instance = open_instance(
        task_class_key="payments.vendor",
        principal=user.username,
        world=VENDOR_WORLD_RUN_1,
        beliefs=[
            {"slot": "amount", "value": 250, "source": "user", "turn": 1},
            {
                "slot": "recipient_account",
                "value": "NL91ABNA0417164300",
                "source": "user",
                "turn": 1,
                "world_ref": VENDOR_WORLD_RUN_1["recipient_account"],
            },
            {
                "slot": "reference",
                "value": "INV-2024-001",
                "source": "user",
                "turn": 2,
                "world_ref": VENDOR_WORLD_RUN_1["reference"],
            },
            {"slot": "due_date", "value": "2025-06-30", "source": "user", "turn": 2},
            {"slot": "approval_scope", "value": "single", "source": "user", "turn": 3},
            {"slot": "memo", "value": "Thanks!", "source": "user", "turn": 3},
        ],
        actor=RUNTIME,
    )
    return instance_plan(instance=instance, actor=RUNTIME)


def vendor_run_2(user: User) -> TaskInstance:
    """Run 2 with everything carried and the world moved on:
    amount CONFIRM (R4, from a tool), recipient account CONFIRM (R6, the bank changed),
    reference SURFACED with a change, due date SURFACED, approval scope ASK (R3, monotonic),
    memo SILENT."""
    instance = open_instance(
        task_class_key="payments.vendor",
        principal=user.username,
        world=VENDOR_WORLD_RUN_2,
        beliefs=[{"slot": "amount", "value": 1250, "source": "tool", "turn": 1}],
        actor=RUNTIME,
    )
    return instance_plan(instance=instance, actor=RUNTIME)


def vendor(user: User) -> TaskInstance:
    """The task class, a finished run 1, and run 2 waiting for the user."""
    vendor_payment()
    vendor_run_1(user)
    return vendor_run_2(user)


HOSTILE_SCRIPT = "<script>alert('script')</script>"
HOSTILE_IMG = "<img src=x onerror=alert('img')>"
HOSTILE_JS_URL = "javascript:alert('url')"
HOSTILE_BIDI = "invoice\u202efdp.exe"


def hostile(user: User) -> TaskInstance:
    """Labels, values and world references that would run or deceive if not escaped."""
    task_class = register_task_class(
        key="hostile.<b>demo</b>",
        name=f"Hostile {HOSTILE_SCRIPT}",
        slots=[
            {"key": "payee", "label": f"Payee {HOSTILE_IMG}"},
            {"key": "link", "label": "Link"},
            {"key": "file", "label": "Attachment"},
            {"key": "note", "label": "Note"},
        ],
        decisions=[
            {"key": "send", "label": f"Send {HOSTILE_JS_URL}", "slots": ["payee", "link", "file"]}
        ],
        actor=RUNTIME,
    )
    classify(
        task_class,
        slots={"payee": "irreversible", "link": "irreversible", "file": "irreversible"},
        decisions={"send": "irreversible"},
    )
    Slot.objects.filter(task_class=task_class, key="note").update(risk_class="reversible")
    instance = open_instance(
        task_class_key=task_class.key,
        principal=user.username,
        world={"payee": {"name": HOSTILE_IMG, "iban\u200b": "NL00"}},
        beliefs=[
            {
                "slot": "payee",
                "value": HOSTILE_SCRIPT,
                "source": "tool",
                "turn": 1,
                "world_ref": {"name": HOSTILE_SCRIPT, "iban\u200b": "NL00"},
            },
            {"slot": "link", "value": HOSTILE_JS_URL, "source": "inference", "turn": 1},
            {"slot": "file", "value": HOSTILE_BIDI, "source": "tool", "turn": 1},
            {
                "slot": "note",
                "value": {"html": HOSTILE_IMG, "bidi": HOSTILE_BIDI},
                "source": "tool",
            },
        ],
        actor=RUNTIME,
    )
    return instance_plan(instance=instance, actor=RUNTIME)


def many(user: User, count: int) -> TaskInstance:
    """An instance with `count` prompts: half CONFIRM cards with a world diff, half assumptions,
    for query budgets that must not grow with the number of prompts."""
    slots = [{"key": f"slot_{i:03}", "label": f"Slot {i}"} for i in range(count)]
    confirm_keys = [s["key"] for s in slots[: count // 2]]
    task_class = register_task_class(
        key=f"bulk.{count}",
        name=f"Bulk {count}",
        slots=slots,
        decisions=[{"key": "act", "label": "Act", "slots": confirm_keys}],
        actor=RUNTIME,
    )
    classify(
        task_class,
        slots={s["key"]: "reversible" for s in slots[count // 2 :]},
        decisions={"act": "irreversible"},
    )
    world = {s["key"]: {"v": 2} for s in slots}
    beliefs: list[dict[str, Any]] = [
        {"slot": s["key"], "value": f"value {i}", "source": "tool", "world_ref": {"v": 1}}
        for i, s in enumerate(slots)
    ]
    instance = open_instance(
        task_class_key=task_class.key,
        principal=user.username,
        world=world,
        beliefs=beliefs,
        actor=RUNTIME,
    )
    return instance_plan(instance=instance, actor=RUNTIME)


REFUND_WORLD_THEN = {"iban": {"holder": "Bob Example"}}
REFUND_WORLD_NOW = {"iban": {"holder": "B. Exampel Holdings"}}
REFUND_AGENT = "billing-agent"


def refund_agent() -> Actor:
    """A key of the runtime `billing-agent`, as the actor it opens instances with."""
    from beliefs.models import Runtime, RuntimeAPIKey

    runtime, _ = Runtime.objects.get_or_create(name=REFUND_AGENT)
    key, _ = RuntimeAPIKey.objects.create_key(name=REFUND_AGENT, runtime=runtime)
    return Actor(key=RuntimeAPIKey.objects.select_related("runtime").get(pk=key.pk))


def refunds(user: User) -> tuple[TaskInstance, TaskInstance]:
    """Two refunds of one task class waiting for the user, opened by billing-agent, that
    differ in what they would do: attempt 2 refunds 1,200 to the IBAN of attempt 1, whose
    holder has changed since (1 detail changed); attempt 3 refunds 35 to an IBAN with a
    zero-width space. Attempt 1 (12 to Bob Example, all said by the user) is ready."""
    agent = refund_agent()
    task_class = register_task_class(
        key="payments.refund",
        name="Refund a customer",
        slots=[
            {"key": "amount", "label": "Amount", "value_type": "number"},
            {"key": "iban", "label": "IBAN"},
            {"key": "note", "label": "Note"},
        ],
        decisions=[{"key": "send_refund", "label": "Send the refund", "slots": ["amount", "iban"]}],
        actor=agent,
    )
    classify(
        task_class,
        slots={"amount": "irreversible", "iban": "irreversible", "note": "reversible"},
        decisions={"send_refund": "irreversible"},
    )

    def attempt(world: dict[str, Any], beliefs: list[dict[str, Any]]) -> TaskInstance:
        instance = open_instance(
            task_class_key=task_class.key,
            principal=user.username,
            world=world,
            beliefs=beliefs,
            actor=agent,
        )
        return instance_plan(instance=instance, actor=agent)

    attempt(
        REFUND_WORLD_THEN,
        [
            {"slot": "amount", "value": 12, "source": "user", "turn": 1},
            {
                "slot": "iban",
                "value": "NL91ABNA0417164300",
                "source": "user",
                "turn": 1,
                "world_ref": REFUND_WORLD_THEN["iban"],
            },
            {"slot": "note", "value": "late delivery", "source": "user", "turn": 1},
        ],
    )
    changed = attempt(
        REFUND_WORLD_NOW, [{"slot": "amount", "value": 1200, "source": "tool", "turn": 1}]
    )
    hidden = attempt(
        REFUND_WORLD_THEN,
        [
            {"slot": "amount", "value": 35, "source": "tool", "turn": 1},
            {"slot": "iban", "value": "NL02RABO\u200b0123456789", "source": "tool", "turn": 1},
        ],
    )
    return changed, hidden
