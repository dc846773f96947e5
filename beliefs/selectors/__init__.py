"""Reads that the pages, the API and the services share: no writes here.

The names below are the common ones, so that callers can write `selectors.instance_payload(...)`;
each lives in the module named beside it.

Reads are querysets and model methods. A few are fixed SQL, written with `rows`' helpers and
decoded with the ORM's own converters, each because a `make bench` goal fails or comes within
the machine's noise of failing without it (figures from `python -m bench --quick`, this
checkout and one with the ORM read taken in turns on one 2-core machine); each has its ORM
version in `tests/oracles.py`, held equal by
`tests/services/test_read_parity.py`:

- the runtime key of every request (`runtimes.usable_runtime_key`): through the ORM the
  authenticated read fell from 0.43-0.44x of /healthz to 0.32-0.33x (SQLite, PostgreSQL),
  against the goal of 0.3x, with the rows moving by about 0.1 from run to run;
- the instance a plan starts from (`instances.instance_to_plan`): through the ORM, plan vs
  read fell from 0.80x to 0.48x (580 vs 1,217 requests/s, SQLite), against the goal of 0.5x;
- the instance read that every read and long-poll renewal answers (`instances.instance_read`,
  through `access.owned_rows`): it is what the read/healthz row times, already within 0.1 of
  its goal with the key read alone through the ORM;
- what a person's answer reads before and under its lock (`answering.prompt_to_answer`,
  `answering.answer_under_lock`) and the instance page it answers with
  (`pages.instance_page`, `pages.instance_decisions`; their prompts through `prompts`):
  through the ORM, click to answer recorded went from 21 to 43 ms p50 with 200 agents waiting
  (`--only waiting`), and with 1,000 the two cores saturated: the waiting rows' p50 of click
  to webhook went from 78 ms to 1.3 s (SQLite) and 4.8 s (PostgreSQL), against goals of
  100 ms and 1 s;
- planning's belief choice and the slots and open prompts it plans over (`beliefs.slot_rows`,
  `beliefs.choose_beliefs_for`, `beliefs.open_prompts_of`): their ORM versions run queries per
  slot, and the goal is as many queries at 200 slots as at 5; the choice seeks the newest
  value of each runtime the run may carry from, so a person's 5,000 runs with another runtime
  cost nothing (1.0x, from 11x on PostgreSQL and 17x on SQLite when it walked them);
- the worker's claim of webhook deliveries (`outbox.claimable_deliveries`, with the lanes in
  flight and the runtimes' locks it takes): with the latter two through the ORM, the worker's
  CPU per delivery at a trickle went from 3.6 to 5.2 ms on PostgreSQL, against the goal of
  5 ms;
- what one whole approval reads besides those, each a query whose compiling through the ORM
  cost about ten times the database's own time (`make bench`'s approval row, whose goal is its
  CPU halved; per approval, in process on SQLite, ORM vs fixed SQL): the next instance waiting
  for the person, which the Confirm that finishes an instance links to
  (`pages.next_waiting`: 4.7 vs 0.3 ms); the person's latest irreversible confirmations and
  change of friction, which the page and that Confirm read
  (`attention.confirmations_and_friction`, `attention.habit`: 4.9 vs 0.5 ms); each webhook
  event's number and the endpoints it goes to, one query (`events.event_reads`: 2.0 vs
  0.2 ms as two, two events); the decisions an action feeds,
  which the answer that readies it reads for its gates and receipt
  (`passkeys.decisions_fed`: 1.0 vs 0.1 ms); the declared slots that an open naming none
  takes as its action (`beliefs.declared_slots`: 1.1 vs 0.15 ms); what an open counts under
  the person's lock, their open instances and last run number (`instances.opening_counts`:
  one query where the ORM made two, the open 7.0 vs 5.3 ms); and the person's
  permissions, which every person page's header reads (`permissions.permissions_of`, through
  `beliefs.roles`: one query where Django's `ModelBackend` builds two, about 0.5 ms of the
  page's 10). With the ORM the Confirm took 24.6 ms and the page 13.2 (medians); without,
  13.8 and 7.5-9;
- the insights page's two windows (`insights.convergence`, `insights.fatigue`): through the
  ORM, the page at 100,000 instances went to 3.12x its time at 100 on PostgreSQL (convergence;
  11.7 vs 36.4 ms) and to 3.12x on SQLite (fatigue, dwell and world diff decoded in Python;
  10.1 vs 31.4 ms at 10,000), against the goal of 2x.

`health.database_answers` is a round trip (SELECT 1), and `postgres` holds PostgreSQL's
statements that read nothing. Where a partial index's condition must be seen in a query's text,
querysets write the constant in with `written.Written`.
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
from beliefs.selectors.lists import (
    instance_summary,
    instances_of_runtime,
    task_class_summary,
    task_classes_for,
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
    "instance_summary",
    "instances_of_runtime",
    "task_class_summary",
    "task_classes_for",
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
