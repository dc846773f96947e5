"""The JSON the API answers with (a task class, an instance, its plan and its prompts, a
belief, a receipt's redemption, an approval, a person's passkeys), each shape written once, as a
TypedDict: the builders return these (so the type checker holds every builder to every key),
and `beliefs.api.serializers` makes the OpenAPI document's components from these same classes
(so the document cannot say other keys than the bytes have).

A key's Python type says what JSON it holds (`str | None`: a string or null; a nested TypedDict:
an object of that shape). Where the document says more than the type does, the key is
`Annotated` with a `Doc`: a help text, the values a string may take, or its format. Times and
ids are strings in the JSON, so their format is said with `Doc`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal, NotRequired, TypedDict

from beliefs.domain.contract import FINDING_CODES
from beliefs.domain.policy import RiskClass, Route, Rule, Source
from beliefs.domain.vocabulary import TRANSITION_POLICIES, VERDICTS, Action
from beliefs.domain.vouch import Via
from beliefs.domain.worlddiff import Change
from beliefs.models import BeliefStatus, InstanceStatus, PromptState, RecordedVia, Slot


@dataclass(frozen=True)
class Doc:
    """What the OpenAPI document says of one key beyond its Python type."""

    help: str = ""
    # The only values a string may take (an enum in the document).
    choices: tuple[str, ...] = ()
    format: Literal["uuid", "date-time"] | None = None


# Choice sets: each is named once in the document (settings.SPECTACULAR_SETTINGS names some).
ROUTES = tuple(r.value for r in Route)
RULES = tuple(r.value for r in Rule)
RISKS = tuple(r.value for r in RiskClass)
SOURCES = tuple(s.value for s in Source)
VIAS = tuple(v.value for v in Via)
PROMPT_STATES = tuple(PromptState.values)
INSTANCE_STATUSES = tuple(InstanceStatus.values)
RECEIPT_STATES = ("valid", "redeemed", "revoked", "expired")

UUID = Doc(format="uuid")
TIME = Doc(format="date-time")


# --- task classes --------------------------------------------------------------------------


class SlotJSON(TypedDict):
    key: str
    label: str
    value_type: Annotated[str, Doc(choices=tuple(Slot.ValueType.values))]
    choices: list[Any] | None
    scope_order: list[str] | None
    monotonic: bool
    future: Annotated[
        bool, Doc("a date slot that takes only dates from today on: a date before today is asked")
    ]
    risk_class: Annotated[str, Doc(choices=RISKS)]
    suggested_risk: Annotated[str | None, Doc(choices=RISKS)]
    effective_risk: Annotated[str, Doc(choices=RISKS)]
    risk_reason: str
    decisions: list[str]
    declared: Annotated[
        bool, Doc("false for a slot an open-slots class grew from one action's arguments")
    ]
    retired: Annotated[bool, Doc("a retired slot is no longer planned")]


class DecisionJSON(TypedDict):
    key: str
    label: str
    risk_class: Annotated[str, Doc(choices=RISKS)]
    slots: list[str]
    requires_signature: Annotated[
        bool,
        Doc(
            "an action of this decision is ready only once its person signed the bindings "
            "with a passkey"
        ),
    ]
    person_confirms: Annotated[
        bool,
        Doc(
            "a `user` value a runtime recorded for a slot of this decision is confirmed by the "
            "person in the console (rule R10), never bound on the runtime's word"
        ),
    ]


class TaskClassJSON(TypedDict):
    key: str
    name: str
    open_slots: bool
    subject_key: Annotated[
        str | None,
        Doc(
            "the world key that names the thing a run acts on (people see runs with different "
            "subjects as separate tasks); null: none"
        ),
    ]
    slots: list[SlotJSON]
    decisions: list[DecisionJSON]


class TaskClassSummaryJSON(TypedDict):
    """A task class in a list: its slots by key, and which of them no classifier has decided."""

    key: str
    name: str
    open_slots: bool
    owned: Annotated[bool, Doc("the reading runtime owns it (false: shared with it, or unowned)")]
    slots: Annotated[list[str], Doc("its slots' keys")]
    unclassified: Annotated[
        list[str],
        Doc("slots no classifier has set a risk for yet: irreversible until one does"),
    ]
    updated_at: Annotated[str, TIME]


class ShareJSON(TypedDict):
    runtime: str
    history: bool
    created_at: Annotated[str, TIME]
    updated_at: Annotated[str, TIME]


class ShareListJSON(TypedDict):
    task_class: str
    owner: str | None
    shares: list[ShareJSON]


# --- an instance and its parts ---------------------------------------------------------------


class WorldDiffJSON(TypedDict):
    key: Annotated[str, Doc("a dotted path into the slot's world")]
    old: Any
    new: Any
    change: Annotated[str, Doc(choices=tuple(c.value for c in Change))]


class BeliefSummaryJSON(TypedDict):
    """A belief as a plan item and a prompt show it."""

    id: int
    source: Annotated[str, Doc(choices=SOURCES)]
    recorded_via: Annotated[
        str,
        Doc(
            "who put it on record: the runtime (whatever its source says) or the person, "
            "answering in the console",
            choices=tuple(RecordedVia.values),
        ),
    ]
    runtime: Annotated[str | None, Doc("the runtime whose instance acquired the value")]
    instance: Annotated[str, UUID]
    run_number: int
    turn: int
    acquired_at: Annotated[str, TIME]
    carried: Annotated[bool, Doc("acquired by an earlier instance")]
    world_ref: dict[str, Any] | None


class PromptRefJSON(TypedDict):
    id: int
    version: int
    state: Annotated[str, Doc(choices=PROMPT_STATES)]
    blocking: bool


class PlanItemJSON(TypedDict):
    """How one slot routes and why, and the value it binds."""

    slot: str
    label: str
    route: Annotated[str, Doc(choices=ROUTES)]
    rule: Annotated[str, Doc(choices=RULES)]
    reason: str
    effective_risk: Annotated[str, Doc(choices=RISKS)]
    risk_reason: str
    value: Annotated[Any, Doc("null for an ASK slot")]
    belief: BeliefSummaryJSON | None
    world_diff: list[WorldDiffJSON]
    prompt: PromptRefJSON | None


class PromptFormJSON(TypedDict):
    """The fresh form of a prompt, sent with a refused response: what a new answer needs."""

    id: int
    slot: str
    route: Annotated[str, Doc(choices=ROUTES)]
    rule: Annotated[str, Doc(choices=RULES)]
    version: int
    state: Annotated[str, Doc(choices=PROMPT_STATES)]
    blocking: bool
    prefill: Any
    world_diff: list[WorldDiffJSON]


class PromptJSON(TypedDict):
    id: int
    instance: Annotated[str, UUID]
    slot: str
    label: str
    route: Annotated[str, Doc(choices=ROUTES)]
    rule: Annotated[str, Doc(choices=RULES)]
    reason: str
    effective_risk: Annotated[str, Doc(choices=RISKS)]
    risk_reason: str
    blocking: bool
    state: Annotated[str, Doc(choices=PROMPT_STATES)]
    version: Annotated[int, Doc("send it back with your response")]
    prefill: Any
    context_value: Annotated[Any, Doc("an earlier grant, shown read-only")]
    belief: BeliefSummaryJSON | None
    world_ref: dict[str, Any] | None
    world_now: dict[str, Any] | None
    world_diff: list[WorldDiffJSON]
    action: Annotated[str | None, Doc(choices=tuple(a.value for a in Action))]
    response_value: Any
    reason_given: str | None
    expires_at: Annotated[str | None, TIME]
    shown_at: Annotated[str | None, TIME]
    responded_at: Annotated[str | None, TIME]


class SignatureEvidenceJSON(TypedDict):
    """A WebAuthn assertion over SHA-256 of the canonical JSON {"instance", "bindings_digest",
    "worlds_digest", "nonce"} (without worlds_digest for a signature made before the console
    bound worlds), in base64url as WebAuthn's JSON gives it."""

    instance: Annotated[str, UUID]
    bindings_digest: str
    worlds_digest: NotRequired[str]
    nonce: str
    challenge: Annotated[str, Doc("base64url SHA-256 of the canonical JSON")]
    credential_id: str
    authenticator_data: str
    client_data_json: str
    signature: str
    user_handle: str | None
    rp_id: str
    origin: str
    by: Annotated[str, Doc("the person who signed")]
    signed_at: Annotated[str, TIME]


class SignatureJSON(TypedDict):
    required: bool
    signed: bool
    assertion: SignatureEvidenceJSON | None


class ApprovalClaimJSON(TypedDict):
    """One approval, as the receipt, the instance read and the events name it."""

    by: Annotated[str, Doc("the approver's username")]
    at: Annotated[str, TIME]
    bindings_digest: Annotated[str, Doc("the bindings approved")]
    worlds_digest: str | None
    via: Annotated[
        str,
        Doc(
            "answers: the principal's own answers (the principal is an approver); "
            "approve: an approver's Approve",
            choices=("answers", "approve"),
        ),
    ]


class QuorumRequirementJSON(TypedDict):
    decision: str
    approvers_group: str
    approvals_required: int
    approved: int
    missing: int


class AwayJSON(TypedDict):
    approver: str
    marked_by: str
    at: Annotated[str, TIME]


class QuorumJSON(TypedDict):
    """While an instance awaits approvals: where they stand. Never a value."""

    bindings_digest: Annotated[str | None, Doc("the bindings being approved")]
    worlds_digest: str | None
    missing: Annotated[int, Doc("approvals still missing, over every decision")]
    requirements: list[QuorumRequirementJSON]
    approvals: list[ApprovalClaimJSON]
    away: Annotated[list[AwayJSON], Doc("approvers marked away: not waited for")]
    reset: Annotated[
        list[ApprovalClaimJSON],
        Doc("approvals an edit voided: they were for other values, or another world"),
    ]
    expires_at: Annotated[str | None, TIME]


class BoundJSON(TypedDict):
    """How one slot's value was bound, and who vouched for it."""

    route: Annotated[str, Doc(choices=ROUTES)]
    rule: Annotated[str, Doc(choices=RULES)]
    source: Annotated[str | None, Doc(choices=SOURCES)]
    via: Annotated[str, Doc(choices=VIAS)]


class InstanceSummaryJSON(TypedDict):
    """An instance in a list; read it whole at its own URL."""

    id: Annotated[str, UUID]
    task_class: str
    principal: str
    run_number: int
    status: Annotated[str, Doc(choices=INSTANCE_STATUSES)]
    status_reason: str | None
    created_at: Annotated[str, TIME]
    updated_at: Annotated[str, TIME]


class InstanceJSON(TypedDict):
    id: Annotated[str, UUID]
    task_class: str
    principal: str
    run_number: int
    slots: Annotated[list[str], Doc("the action's slots")]
    status: Annotated[str, Doc(choices=INSTANCE_STATUSES)]
    status_reason: str | None
    blocking: Annotated[int, Doc("open blocking prompts")]
    world: dict[str, Any]
    bindings: Annotated[dict[str, Any] | None, Doc("final once the status is ready")]
    bindings_digest: Annotated[str | None, Doc("SHA-256 of the canonical JSON of bindings")]
    worlds_digest: Annotated[
        str | None,
        Doc(
            "SHA-256 of the canonical JSON of {slot: world_ref} over the bound irreversible "
            "slots: the world the values were bound with"
        ),
    ]
    bound: Annotated[
        dict[str, BoundJSON] | None,
        Doc(
            "once the values are settled, per bound slot: route, rule, source and via "
            "(console: the person gave or confirmed it in the console; runtime: bound on the "
            "runtime's report; policy: cosmetic)"
        ),
    ]
    vouched_by_runtime: Annotated[
        list[str] | None,
        Doc(
            "the irreversible slots bound on the runtime's report alone: no person confirmed "
            "them in the console (verifiers refuse such receipts unless told otherwise)"
        ),
    ]
    receipt: Annotated[
        str | None,
        Doc(
            "once ready, and while valid: the signed receipt (compact JWS) a tool server "
            "verifies against /.well-known/jwks.json and the arguments it executes"
        ),
    ]
    receipt_state: Annotated[str | None, Doc(choices=RECEIPT_STATES)]
    signature: Annotated[
        SignatureJSON | None,
        Doc(
            "once the instance waits for a passkey signature: whether the bindings are "
            "signed, and the assertion"
        ),
    ]
    plan: list[PlanItemJSON]
    prompts: list[PromptJSON]
    quorum: Annotated[
        QuorumJSON | None,
        Doc(
            "while awaiting_approval: who approved these exact bindings, how many are missing "
            "per decision, who is marked away, approvals an edit reset, and when it expires"
        ),
    ]
    planned_at: Annotated[str | None, TIME]
    created_at: Annotated[str, TIME]
    updated_at: Annotated[str, TIME]


class RespondJSON(TypedDict):
    """The answer to a person's response: the prompt and its instance as they now are."""

    prompt: PromptJSON
    instance: InstanceJSON
    replayed: Annotated[
        bool, Doc("true when this repeats an answer already taken: nothing new was written")
    ]


class BeliefJSON(TypedDict):
    """A belief as recording it answers."""

    id: int
    instance: Annotated[str, UUID]
    slot: str
    value: Any
    source: Annotated[str, Doc(choices=SOURCES)]
    turn: int
    acquired_at: Annotated[str, TIME]
    world_ref: dict[str, Any] | None
    status: Annotated[str, Doc(choices=tuple(BeliefStatus.values))]


class RedeemJSON(TypedDict):
    jti: Annotated[str, UUID]
    instance: Annotated[str, UUID]
    bindings_digest: str
    redeemed_at: Annotated[str, TIME]


class ApprovalWorldJSON(TypedDict):
    slot: str
    label: str
    world_ref: dict[str, Any] | None
    changes: list[WorldDiffJSON]
    acknowledge: Annotated[list[str], Doc("the changed keys an approver must tick")]


class ApprovalJSON(TypedDict):
    instance: Annotated[str, UUID]
    status: Annotated[str, Doc(choices=INSTANCE_STATUSES)]
    status_reason: str | None
    bindings: Annotated[dict[str, Any] | None, Doc("the values to approve")]
    bindings_digest: str | None
    worlds_digest: Annotated[
        str | None, Doc("the digest of the bound irreversible values' world references")
    ]
    worlds: Annotated[
        list[ApprovalWorldJSON],
        Doc(
            "each bound irreversible value's world reference and what changed in it since the "
            "value was first given"
        ),
    ]
    quorum: QuorumJSON | None
    replayed: Annotated[
        bool, Doc("true when you had already approved these bindings: counted once")
    ]


class PasskeyPublicJSON(TypedDict):
    credential_id: Annotated[str, Doc("base64url")]
    public_key_cose: Annotated[str, Doc("base64url COSE_Key")]
    public_key_jwk: Annotated[dict[str, Any] | None, Doc("the same key as a JWK")]
    created_at: Annotated[str, TIME]
    last_used_at: Annotated[str | None, TIME]
    removed_at: Annotated[str | None, TIME]
    active: bool


class PersonPasskeysJSON(TypedDict):
    username: str
    passkeys: list[PasskeyPublicJSON]


# --- proposals' validations ------------------------------------------------------------------


class FindingJSON(TypedDict):
    code: Annotated[str, Doc(choices=tuple(FINDING_CODES))]
    message: str
    path: Annotated[str, Doc("JSON pointer into the proposal")]


class ValidateJSON(TypedDict):
    """A proposal's validation, as storing it answers."""

    id: int
    verdict: Annotated[str, Doc(choices=tuple(VERDICTS))]
    decided_by: str | None
    policy: Annotated[str, Doc(choices=tuple(TRANSITION_POLICIES))]
    declared: bool | None
    meaningful_change: bool | None
    counts: dict[str, int | None]
    errors: list[FindingJSON]
    warnings: list[FindingJSON]


class SourceJSON(TypedDict):
    provider: str
    model: str
    run: str


class AgreementCountsJSON(TypedDict):
    agree: int | None
    disagree: int | None


class ValidationSummaryJSON(ValidateJSON):
    """A stored validation, as the list shows it."""

    created_at: Annotated[str, TIME]
    codes: list[str]
    source: SourceJSON
    submitted_by: str
    annotations: AgreementCountsJSON


class PlanJSON(TypedDict):
    """The answer to a plan: the instance's id and state, and the plan's items."""

    id: Annotated[str, UUID]
    slots: Annotated[list[str], Doc("the action's slots")]
    status: Annotated[str, Doc(choices=INSTANCE_STATUSES)]
    blocking: int
    bindings: dict[str, Any] | None
    bindings_digest: str | None
    items: list[PlanItemJSON]
