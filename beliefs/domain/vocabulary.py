"""The console's words and limits, in one place: pure Python, no Django.

Models, services, the API and the pages take these names from here, so a limit or an action is
never spelled twice.
"""

from __future__ import annotations

from enum import StrEnum

from beliefs.domain.contract import Severity, TransitionPolicy, Verdict
from beliefs.domain.policy import Route

# Limits on what people and runtimes may send.
MAX_KEY_LENGTH = 200  # task class, slot and decision keys
MAX_LABEL_LENGTH = 200  # names and labels
MAX_TEXT_LENGTH = 2000  # a typed value, a reason, a note
MAX_JSON_DEPTH = 32  # nesting of any JSON body; a proposal needs four levels
MAX_PATH_LENGTH = 500  # a finding's JSON path as stored
MAX_URL_LENGTH = 2000  # a webhook endpoint's URL
MAX_SECRET_LENGTH = 200  # a webhook signing secret as stored
MAX_IDEMPOTENCY_KEY_LENGTH = 200  # an Idempotency-Key header
MAX_PROBLEM_LENGTH = 500  # why a stored webhook endpoint is skipped, for staff
# /insights/ follows the first runs of each task class; a partial index holds exactly the
# planned instances of these runs, so changing it needs a migration.
INSIGHTS_RUNS_SHOWN = 10

# Proposal validations: verdicts (in the order the statistics stack them, bottom to top),
# transition policies and finding severities.
VERDICTS: tuple[str, ...] = tuple(v.value for v in Verdict)
TRANSITION_POLICIES: tuple[str, ...] = tuple(p.value for p in TransitionPolicy)
SEVERITIES: tuple[str, ...] = tuple(s.value for s in Severity)


class Action(StrEnum):
    """What a person may do with a prompt."""

    CONFIRM = "confirm"
    EDIT = "edit"
    ANSWER = "answer"
    REJECT = "reject"
    VETO = "veto"


# Which actions each route's prompt takes. SILENT has no prompt.
ACTIONS_BY_ROUTE: dict[str, tuple[Action, ...]] = {
    Route.CONFIRM.value: (Action.CONFIRM, Action.EDIT, Action.REJECT),
    Route.ASK.value: (Action.ANSWER, Action.REJECT),
    Route.SURFACED.value: (Action.VETO,),
}
# Actions that write a new user-sourced belief.
VALUE_ACTIONS = frozenset({Action.CONFIRM, Action.EDIT, Action.ANSWER})
# Actions whose value the person typed (compared when a response is repeated).
TYPED_ACTIONS = frozenset({Action.EDIT, Action.ANSWER})


def runtime_label(name: str) -> str:
    """How a runtime is named in the audit log and on the pages."""
    return f"runtime:{name}"
