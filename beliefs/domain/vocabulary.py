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
    # Only an irreversible value bound on the runtime's report of the person's answer has a
    # prompt while SILENT: the person may veto what was done on their behalf.
    Route.SILENT.value: (Action.VETO,),
}
# Actions that write a new user-sourced belief.
VALUE_ACTIONS = frozenset({Action.CONFIRM, Action.EDIT, Action.ANSWER})
# Actions whose value the person typed (compared when a response is repeated).
TYPED_ACTIONS = frozenset({Action.EDIT, Action.ANSWER})


class AuditKind(StrEnum):
    """Every kind of audit event, `<what>.<happened>`: the activity page filters by these and
    by their families (`instance.*`)."""

    APPROVAL_APPROVED = "approval.approved"
    APPROVAL_AWAY_MARKED = "approval.away_marked"
    APPROVAL_REJECTED = "approval.rejected"
    APPROVAL_RESET = "approval.reset"
    # A person's recent irreversible confirmations began or ceased to look habitual.
    ATTENTION_FRICTION_LOWERED = "attention.friction_lowered"
    ATTENTION_FRICTION_RAISED = "attention.friction_raised"
    BELIEF_RECORDED = "belief.recorded"
    CLASSIFICATION_CHANGE_APPROVED = "classification.change_approved"
    CLASSIFICATION_CHANGE_REFUSED = "classification.change_refused"
    CLASSIFICATION_CHANGE_REQUESTED = "classification.change_requested"
    CLASSIFICATION_DECISION_REQUIRES_SIGNATURE = "classification.decision_requires_signature"
    CLASSIFICATION_DECISION_PERSON_CONFIRMS = "classification.decision_person_confirms"
    CLASSIFICATION_SLOT_FUTURE = "classification.slot_future"
    CLASSIFICATION_DECISION_APPROVALS = "classification.decision_approvals"
    CLASSIFICATION_DECISION_RISK = "classification.decision_risk"
    CLASSIFICATION_DECISION_SLOTS = "classification.decision_slots"
    CLASSIFICATION_SLOT_MONOTONIC = "classification.slot_monotonic"
    CLASSIFICATION_SLOT_RISK = "classification.slot_risk"
    CLASSIFICATION_SLOT_SCOPE_ORDER = "classification.slot_scope_order"
    INSTANCE_CANCELLED = "instance.cancelled"
    INSTANCE_EXPIRED = "instance.expired"
    INSTANCE_OPENED = "instance.opened"
    INSTANCE_PLANNED = "instance.planned"
    INSTANCE_SIGNED = "instance.signed"
    # Its values and world references were removed (retention, or the person's erasure).
    INSTANCE_VALUES_ERASED = "instance.values_erased"
    INSTANCE_SIGNATURE_VOIDED = "instance.signature_voided"
    INSTANCE_WORLD_SET = "instance.world_set"
    PASSKEY_REGISTERED = "passkey.registered"
    PASSKEY_REMOVED = "passkey.removed"
    PASSKEY_SIGNED_IN = "passkey.signed_in"
    PERSON_EMAIL_NOTIFICATIONS_SET = "person.email_notifications_set"
    PERSON_ERASED = "person.erased"
    PERSON_EXPORTED = "person.exported"
    PROMPT_ANSWER = "prompt.answer"
    PROMPT_CONFIRM = "prompt.confirm"
    PROMPT_EDIT = "prompt.edit"
    PROMPT_REJECT = "prompt.reject"
    # The person asked a value again with its world's current value (before signing).
    PROMPT_REASKED = "prompt.reasked"
    PROMPT_VETO = "prompt.veto"
    PROPOSAL_ANNOTATED = "proposal.annotated"
    PROPOSAL_VALIDATED = "proposal.validated"
    RECEIPT_REDEEMED = "receipt.redeemed"
    RUNTIME_CREATED = "runtime.created"
    RUNTIME_RENAMED = "runtime.renamed"
    RUNTIME_AUDIENCES_CHANGED = "runtime.audiences_changed"
    RUNTIME_KEY_CHANGED = "runtime_key.changed"
    RUNTIME_KEY_CREATED = "runtime_key.created"
    RUNTIME_KEY_REVOKED = "runtime_key.revoked"
    SLOT_REGISTERED_UNCLASSIFIED = "slot.registered_unclassified"
    SLOT_RETIRED = "slot.retired"
    TASK_CLASS_OWNER_CHANGED = "task_class.owner_changed"
    TASK_CLASS_REGISTERED = "task_class.registered"
    TASK_CLASS_RETENTION_CHANGED = "task_class.retention_changed"
    TASK_CLASS_SHARE_CHANGED = "task_class.share_changed"
    TASK_CLASS_SHARED = "task_class.shared"
    TASK_CLASS_UNSHARED = "task_class.unshared"
    TASK_CLASS_UPDATED = "task_class.updated"
    WEBHOOK_REDELIVERED = "webhook.redelivered"
    WEBHOOK_TEST_SENT = "webhook.test_sent"
    WEBHOOK_ENDPOINT_CHANGED = "webhook_endpoint.changed"
    WEBHOOK_ENDPOINT_CREATED = "webhook_endpoint.created"
    WEBHOOK_ENDPOINT_DELETED = "webhook_endpoint.deleted"
    WEBHOOK_ENDPOINT_SECRET_ROTATED = "webhook_endpoint.secret_rotated"

    @classmethod
    def of_response(cls, action: Action) -> AuditKind:
        """The kind of a person's response to a prompt."""
        return cls(f"prompt.{action.value}")


# A person's changes of friction, the latest of which says whether it is raised now.
FRICTION_KINDS = (AuditKind.ATTENTION_FRICTION_RAISED, AuditKind.ATTENTION_FRICTION_LOWERED)


def runtime_label(name: str) -> str:
    """How a runtime is named in the audit log and on the pages."""
    return f"runtime:{name}"
