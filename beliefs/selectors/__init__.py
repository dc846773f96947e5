"""Reads that the pages, the API and the services share: no writes here.

The names below are the common ones, so that callers can write `selectors.instance_payload(...)`;
each lives in the module named beside it.
"""

from __future__ import annotations

from beliefs.selectors.access import Owner, owned_instance
from beliefs.selectors.answering import prompt_to_answer
from beliefs.selectors.beliefs import (
    SlotState,
    belief_body,
    belief_summary,
    choose_beliefs,
    slot_effective_risk,
    slot_states,
)
from beliefs.selectors.instances import (
    expiry_due,
    fresh_prompt,
    inbox_instances,
    instance_body,
    instance_payload,
    instance_prompts,
    instance_read,
    instance_to_plan,
    open_prompts,
    plan_payload,
    prompt_body,
    prompt_detail,
    prompts_for_user,
    share_payload,
    shares_payload,
    task_class_for_owner,
    task_class_payload,
    task_class_with_slots,
)
from beliefs.selectors.pages import (
    DecisionView,
    PageRead,
    instance_decisions,
    instance_page,
    next_waiting,
)
from beliefs.selectors.passkeys import person_passkeys_for_runtime
from beliefs.selectors.quorum import (
    Standing,
    approvals_asked_of,
    awaiting_approvers,
    bound_world_changes,
    instance_for_approver,
    quorum_of,
    quorum_payload,
    reported_to,
    time_to_quorum,
    waiting_for_approver,
)

__all__ = [
    "DecisionView",
    "PageRead",
    "expiry_due",
    "instance_page",
    "approvals_asked_of",
    "bound_world_changes",
    "awaiting_approvers",
    "Standing",
    "instance_for_approver",
    "person_passkeys_for_runtime",
    "quorum_of",
    "quorum_payload",
    "reported_to",
    "time_to_quorum",
    "waiting_for_approver",
    "Owner",
    "SlotState",
    "belief_body",
    "belief_summary",
    "choose_beliefs",
    "fresh_prompt",
    "inbox_instances",
    "instance_body",
    "instance_decisions",
    "instance_payload",
    "instance_prompts",
    "instance_read",
    "instance_to_plan",
    "next_waiting",
    "open_prompts",
    "owned_instance",
    "prompt_to_answer",
    "plan_payload",
    "prompt_body",
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
