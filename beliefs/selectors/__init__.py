"""Reads that the pages, the API and the services share: no writes here.

The names below are the common ones, so that callers can write `selectors.instance_payload(...)`;
each lives in the module named beside it.
"""

from __future__ import annotations

from beliefs.selectors.beliefs import (
    SlotState,
    belief_summary,
    choose_beliefs,
    slot_effective_risk,
    slot_states,
)
from beliefs.selectors.instances import (
    inbox_instances,
    instance_payload,
    instance_prompts,
    instance_read,
    open_prompts,
    plan_payload,
    prompt_detail,
    prompts_for_user,
    share_payload,
    shares_payload,
    task_class_for_owner,
    task_class_payload,
    task_class_with_slots,
)

__all__ = [
    "SlotState",
    "belief_summary",
    "choose_beliefs",
    "inbox_instances",
    "instance_payload",
    "instance_prompts",
    "instance_read",
    "open_prompts",
    "plan_payload",
    "prompt_detail",
    "prompts_for_user",
    "share_payload",
    "shares_payload",
    "task_class_for_owner",
    "slot_effective_risk",
    "slot_states",
    "task_class_payload",
    "task_class_with_slots",
]
