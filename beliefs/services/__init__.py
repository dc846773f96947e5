"""Every write of the domain, one module per entity.

Each service is one transaction and writes its audit event inside it, so nothing is ever
half-written and nothing happens without a trace. Services that touch an instance lock its row
first (a no-op on SQLite, where IMMEDIATE transactions already serialise writers).

The names below are the services' public surface, so that callers can write
`services.instance_open(...)`; each lives in the module named beside it.
"""

from __future__ import annotations

from beliefs.services.access import instance_for_principal, instance_for_runtime
from beliefs.services.approvals import (
    approver_mark_away,
    instance_approve,
    instance_reject_approval,
)
from beliefs.services.audit import SYSTEM, Actor, audit
from beliefs.services.expiry import instance_expire_if_due, instances_expire
from beliefs.services.instances import (
    BeliefSpec,
    World,
    belief_record,
    instance_cancel,
    instance_open,
    instance_set_world,
)
from beliefs.services.planning import (
    PlanResult,
    instance_plan,
    instance_plan_for_runtime,
    instances_replan_for_task_class,
)
from beliefs.services.reask import prompt_reask_with_world
from beliefs.services.receipts import receipt_redeem
from beliefs.services.responses import RespondResult, prompt_respond, prompts_mark_shown
from beliefs.services.runtimes import runtime_key_create, runtime_key_revoke, task_class_transfer
from beliefs.services.task_classes import (
    DecisionSpec,
    SlotSpec,
    slot_retire,
    task_class_register,
    task_class_share,
    task_class_unshare,
)

__all__ = [
    "approver_mark_away",
    "instance_approve",
    "instance_reject_approval",
    "SYSTEM",
    "Actor",
    "BeliefSpec",
    "DecisionSpec",
    "SlotSpec",
    "World",
    "RespondResult",
    "audit",
    "belief_record",
    "instance_cancel",
    "instance_expire_if_due",
    "instance_for_principal",
    "instance_for_runtime",
    "instance_open",
    "PlanResult",
    "instance_plan",
    "instance_plan_for_runtime",
    "instance_set_world",
    "instances_expire",
    "instances_replan_for_task_class",
    "prompt_respond",
    "prompt_reask_with_world",
    "receipt_redeem",
    "slot_retire",
    "prompts_mark_shown",
    "runtime_key_create",
    "runtime_key_revoke",
    "task_class_register",
    "task_class_share",
    "task_class_unshare",
    "task_class_transfer",
]
