"""Every output of the JSON API, typed: the bodies the selectors build, documented so that the
OpenAPI document describes every response. The inputs the API reads are in `beliefs.schemas`,
which the pages read too.
"""

from __future__ import annotations

from rest_framework import serializers

from beliefs.domain.contract import FINDING_CODES
from beliefs.domain.policy import Route, Rule, Source
from beliefs.domain.vocabulary import TRANSITION_POLICIES, Action
from beliefs.domain.vocabulary import VERDICTS as VERDICT_NAMES
from beliefs.domain.worlddiff import Change
from beliefs.models import (
    BeliefStatus,
    InstanceStatus,
    PromptState,
    RecordedVia,
    Slot,
)
from beliefs.schemas import RISKS, AnyJSONField, ObjectField

# Choice sets the OpenAPI document names once each (settings.SPECTACULAR_SETTINGS).
INSTANCE_STATUSES = list(InstanceStatus.values)
BELIEF_STATUSES = list(BeliefStatus.values)


class SlotOut(serializers.Serializer):
    key = serializers.CharField()
    label = serializers.CharField()
    value_type = serializers.ChoiceField(choices=Slot.ValueType.values)
    choices = serializers.ListField(child=AnyJSONField(allow_null=True), allow_null=True)
    scope_order = serializers.ListField(child=serializers.CharField(), allow_null=True)
    monotonic = serializers.BooleanField()
    future = serializers.BooleanField(
        help_text="a date slot that takes only dates from today on: a date before today is asked"
    )
    risk_class = serializers.ChoiceField(choices=RISKS)
    suggested_risk = serializers.ChoiceField(choices=RISKS, allow_null=True)
    effective_risk = serializers.ChoiceField(choices=RISKS)
    risk_reason = serializers.CharField()
    decisions = serializers.ListField(child=serializers.CharField())
    declared = serializers.BooleanField(
        help_text="false for a slot an open-slots class grew from one action's arguments"
    )
    retired = serializers.BooleanField(help_text="a retired slot is no longer planned")


class DecisionOut(serializers.Serializer):
    key = serializers.CharField()
    label = serializers.CharField()
    risk_class = serializers.ChoiceField(choices=RISKS)
    slots = serializers.ListField(child=serializers.CharField())
    requires_signature = serializers.BooleanField(
        help_text="an action of this decision is ready only once its person signed the "
        "bindings with a passkey"
    )
    person_confirms = serializers.BooleanField(
        help_text="a `user` value a runtime recorded for a slot of this decision is confirmed "
        "by the person in the console (rule R10), never bound on the runtime's word"
    )


class TaskClassOut(serializers.Serializer):
    key = serializers.CharField()
    name = serializers.CharField()
    open_slots = serializers.BooleanField()
    subject_key = serializers.CharField(
        allow_null=True,
        help_text="the world key that names the thing a run acts on (people see runs with "
        "different subjects as separate tasks); null: none",
    )
    slots = SlotOut(many=True)
    decisions = DecisionOut(many=True)


class ShareOut(serializers.Serializer):
    runtime = serializers.CharField()
    history = serializers.BooleanField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class ShareListOut(serializers.Serializer):
    task_class = serializers.CharField()
    owner = serializers.CharField(allow_null=True)
    shares = ShareOut(many=True)


class BeliefSummaryOut(serializers.Serializer):
    id = serializers.IntegerField()
    source = serializers.ChoiceField(choices=[s.value for s in Source])
    recorded_via = serializers.ChoiceField(
        choices=RecordedVia.values,
        help_text="who put it on record: the runtime (whatever its source says) or the person, "
        "answering in the console",
    )
    runtime = serializers.CharField(
        allow_null=True, help_text="the runtime whose instance acquired the value"
    )
    instance = serializers.UUIDField()
    run_number = serializers.IntegerField()
    turn = serializers.IntegerField()
    acquired_at = serializers.DateTimeField()
    carried = serializers.BooleanField(help_text="acquired by an earlier instance")
    world_ref = ObjectField(allow_null=True)


class WorldDiffOut(serializers.Serializer):
    key = serializers.CharField(help_text="a dotted path into the slot's world")
    old = AnyJSONField(allow_null=True)
    new = AnyJSONField(allow_null=True)
    change = serializers.ChoiceField(choices=[c.value for c in Change])


class PromptRefOut(serializers.Serializer):
    id = serializers.IntegerField()
    version = serializers.IntegerField()
    state = serializers.ChoiceField(choices=PromptState.values)
    blocking = serializers.BooleanField()


ROUTES = [r.value for r in Route]
RULES = [r.value for r in Rule]


class RoutedSlotOut(serializers.Serializer):
    """How one slot routes and why: shared by a plan item and a prompt."""

    slot = serializers.CharField()
    label = serializers.CharField()
    route = serializers.ChoiceField(choices=ROUTES)
    rule = serializers.ChoiceField(choices=RULES)
    reason = serializers.CharField()
    effective_risk = serializers.ChoiceField(choices=RISKS)
    risk_reason = serializers.CharField()


class PlanItemOut(RoutedSlotOut):
    value = AnyJSONField(allow_null=True, help_text="null for an ASK slot")
    belief = BeliefSummaryOut(allow_null=True)
    world_diff = WorldDiffOut(many=True)
    prompt = PromptRefOut(allow_null=True)


class PromptOut(RoutedSlotOut):
    id = serializers.IntegerField()
    instance = serializers.UUIDField()
    blocking = serializers.BooleanField()
    state = serializers.ChoiceField(choices=PromptState.values)
    version = serializers.IntegerField(help_text="send it back with your response")
    prefill = AnyJSONField(allow_null=True)
    context_value = AnyJSONField(allow_null=True, help_text="an earlier grant, shown read-only")
    belief = BeliefSummaryOut(allow_null=True)
    world_ref = ObjectField(allow_null=True)
    world_now = ObjectField(allow_null=True)
    world_diff = WorldDiffOut(many=True)
    action = serializers.ChoiceField(choices=[a.value for a in Action], allow_null=True)
    response_value = AnyJSONField(allow_null=True)
    reason_given = serializers.CharField(allow_null=True)
    expires_at = serializers.DateTimeField(allow_null=True)
    shown_at = serializers.DateTimeField(allow_null=True)
    responded_at = serializers.DateTimeField(allow_null=True)


RECEIPT_STATES = ["valid", "redeemed", "revoked", "expired"]


# --- passkey signatures ---


class SignatureEvidenceOut(serializers.Serializer):
    """A WebAuthn assertion over SHA-256 of the canonical JSON {"instance", "bindings_digest",
    "worlds_digest", "nonce"} (without worlds_digest for a signature made before the console
    bound worlds), in base64url as WebAuthn's JSON gives it."""

    instance = serializers.UUIDField()
    bindings_digest = serializers.CharField()
    worlds_digest = serializers.CharField(required=False)
    nonce = serializers.CharField()
    challenge = serializers.CharField(help_text="base64url SHA-256 of the canonical JSON")
    credential_id = serializers.CharField()
    authenticator_data = serializers.CharField()
    client_data_json = serializers.CharField()
    signature = serializers.CharField()
    user_handle = serializers.CharField(allow_null=True)
    rp_id = serializers.CharField()
    origin = serializers.CharField()
    by = serializers.CharField(help_text="the person who signed")
    signed_at = serializers.DateTimeField()


class SignatureOut(serializers.Serializer):
    required = serializers.BooleanField()
    signed = serializers.BooleanField()
    assertion = SignatureEvidenceOut(allow_null=True)


class PasskeyPublicOut(serializers.Serializer):
    credential_id = serializers.CharField(help_text="base64url")
    public_key_cose = serializers.CharField(help_text="base64url COSE_Key")
    public_key_jwk = ObjectField(allow_null=True, help_text="the same key as a JWK")
    created_at = serializers.DateTimeField()
    last_used_at = serializers.DateTimeField(allow_null=True)
    removed_at = serializers.DateTimeField(allow_null=True)
    active = serializers.BooleanField()


class PersonPasskeysOut(serializers.Serializer):
    username = serializers.CharField()
    passkeys = PasskeyPublicOut(many=True)


# --- end passkey signatures ---


class InstanceOut(serializers.Serializer):
    id = serializers.UUIDField()
    task_class = serializers.CharField()
    principal = serializers.CharField()
    run_number = serializers.IntegerField()
    slots = serializers.ListField(child=serializers.CharField(), help_text="the action's slots")
    status = serializers.ChoiceField(choices=INSTANCE_STATUSES)
    status_reason = serializers.CharField(allow_null=True)
    blocking = serializers.IntegerField(help_text="open blocking prompts")
    world = ObjectField()
    bindings = ObjectField(allow_null=True, help_text="final once the status is ready")
    bindings_digest = serializers.CharField(
        allow_null=True, help_text="SHA-256 of the canonical JSON of bindings"
    )
    worlds_digest = serializers.CharField(
        allow_null=True,
        help_text="SHA-256 of the canonical JSON of {slot: world_ref} over the bound "
        "irreversible slots: the world the values were bound with",
    )
    bound = serializers.DictField(
        child=ObjectField(),
        allow_null=True,
        help_text="once the values are settled, per bound slot: route, rule, source and via "
        "(console: the person gave or confirmed it in the console; runtime: bound on the "
        "runtime's report; policy: cosmetic)",
    )
    vouched_by_runtime = serializers.ListField(
        child=serializers.CharField(),
        allow_null=True,
        help_text="the irreversible slots bound on the runtime's report alone: no person "
        "confirmed them in the console (verifiers refuse such receipts unless told otherwise)",
    )
    receipt = serializers.CharField(
        allow_null=True,
        help_text="once ready, and while valid: the signed receipt (compact JWS) a tool server "
        "verifies against /.well-known/jwks.json and the arguments it executes",
    )
    receipt_state = serializers.ChoiceField(choices=RECEIPT_STATES, allow_null=True)
    signature = SignatureOut(
        allow_null=True,
        help_text="once the instance waits for a passkey signature: whether the "
        "bindings are signed, and the assertion",
    )
    plan = PlanItemOut(many=True)
    prompts = PromptOut(many=True)
    quorum = ObjectField(
        allow_null=True,
        help_text="while awaiting_approval: who approved these exact bindings, how many are "
        "missing per decision, who is marked away, approvals an edit reset, and when it expires",
    )
    planned_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class PlanOut(serializers.Serializer):
    id = serializers.UUIDField()
    instance = serializers.UUIDField(help_text="the same as id")
    slots = serializers.ListField(child=serializers.CharField(), help_text="the action's slots")
    status = serializers.ChoiceField(choices=INSTANCE_STATUSES)
    blocking = serializers.IntegerField()
    bindings = ObjectField(allow_null=True)
    bindings_digest = serializers.CharField(allow_null=True)
    items = PlanItemOut(many=True)


class BeliefOut(serializers.Serializer):
    id = serializers.IntegerField()
    instance = serializers.UUIDField()
    slot = serializers.CharField()
    value = AnyJSONField(allow_null=True)
    source = serializers.ChoiceField(choices=[s.value for s in Source])
    turn = serializers.IntegerField()
    acquired_at = serializers.DateTimeField()
    world_ref = ObjectField(allow_null=True)
    status = serializers.ChoiceField(choices=BELIEF_STATUSES)


class RedeemOut(serializers.Serializer):
    jti = serializers.UUIDField()
    instance = serializers.UUIDField()
    bindings_digest = serializers.CharField()
    redeemed_at = serializers.DateTimeField()


# --- prompts and responses -----------------------------------------------------------------


class PromptFormOut(serializers.Serializer):
    """The fresh form of a prompt, sent with a refused response."""

    id = serializers.IntegerField()
    slot = serializers.CharField()
    route = serializers.ChoiceField(choices=ROUTES)
    rule = serializers.ChoiceField(choices=RULES)
    version = serializers.IntegerField()
    state = serializers.ChoiceField(choices=PromptState.values)
    blocking = serializers.BooleanField()
    prefill = AnyJSONField(allow_null=True)
    world_diff = WorldDiffOut(many=True)


class RespondOut(serializers.Serializer):
    prompt = PromptOut()
    instance = InstanceOut()
    replayed = serializers.BooleanField(
        help_text="true when this repeats an answer already taken: nothing new was written"
    )


class ApprovalOut(serializers.Serializer):
    instance = serializers.UUIDField()
    status = serializers.ChoiceField(choices=INSTANCE_STATUSES)
    status_reason = serializers.CharField(allow_null=True)
    bindings = ObjectField(allow_null=True, help_text="the values to approve")
    bindings_digest = serializers.CharField(allow_null=True)
    worlds_digest = serializers.CharField(
        allow_null=True, help_text="the digest of the bound irreversible values' world references"
    )
    worlds = serializers.ListField(
        child=ObjectField(),
        help_text="each bound irreversible value's world reference and what changed in it since "
        "the value was first given ({slot, label, world_ref, changes, acknowledge})",
    )
    quorum = ObjectField(allow_null=True)
    replayed = serializers.BooleanField(
        help_text="true when you had already approved these bindings: counted once"
    )


class PromptPageOut(serializers.Serializer):
    count = serializers.IntegerField()
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = PromptOut(many=True)


# --- proposals -----------------------------------------------------------------------------


VERDICTS = list(VERDICT_NAMES)


class FindingOut(serializers.Serializer):
    code = serializers.ChoiceField(choices=list(FINDING_CODES))
    message = serializers.CharField()
    path = serializers.CharField(help_text="JSON pointer into the proposal")


class ValidateOut(serializers.Serializer):
    id = serializers.IntegerField()
    verdict = serializers.ChoiceField(choices=VERDICTS)
    decided_by = serializers.CharField(allow_null=True)
    policy = serializers.ChoiceField(choices=list(TRANSITION_POLICIES))
    declared = serializers.BooleanField(allow_null=True)
    meaningful_change = serializers.BooleanField(allow_null=True)
    counts = serializers.DictField(child=serializers.IntegerField(allow_null=True))
    errors = FindingOut(many=True)
    warnings = FindingOut(many=True)


class SourceOut(serializers.Serializer):
    provider = serializers.CharField(allow_blank=True)
    model = serializers.CharField(allow_blank=True)
    run = serializers.CharField(allow_blank=True)


class AgreementCountsOut(serializers.Serializer):
    agree = serializers.IntegerField(allow_null=True)
    disagree = serializers.IntegerField(allow_null=True)


class ValidationSummaryOut(ValidateOut):
    created_at = serializers.DateTimeField()
    codes = serializers.ListField(child=serializers.CharField())
    source = SourceOut()
    submitted_by = serializers.CharField()
    annotations = AgreementCountsOut()


class ValidationPageOut(serializers.Serializer):
    count = serializers.IntegerField()
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = ValidationSummaryOut(many=True)


# --- errors --------------------------------------------------------------------------------


class ErrorOut(serializers.Serializer):
    error = serializers.CharField(help_text="a stable code")
    detail = serializers.CharField(help_text="what went wrong, for a person")
    fields = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text="{field path: [messages]}, e.g. slots[0].risk_class",
    )


class ConflictOut(ErrorOut):
    prompt = PromptFormOut(required=False, help_text="the fresh prompt, when one was answered")
