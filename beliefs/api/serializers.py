"""Every output of the JSON API, typed, so that the OpenAPI document describes every response.
The inputs the API reads are in `beliefs.schemas`, which the pages read too.

An instance, its plan and its prompts are written once, as the TypedDicts of
`beliefs.selectors.shapes` that their builders return; `serializer_for` makes their serializers
from those classes, for the document. The other bodies are declared here, as serializers.
"""

from __future__ import annotations

import types
from functools import cache
from typing import (
    Annotated,
    Any,
    NotRequired,
    Union,
    get_args,
    get_origin,
    get_type_hints,
    is_typeddict,
)

from rest_framework import serializers

from beliefs.domain.contract import FINDING_CODES
from beliefs.domain.policy import Source
from beliefs.domain.vocabulary import TRANSITION_POLICIES
from beliefs.domain.vocabulary import VERDICTS as VERDICT_NAMES
from beliefs.models import BeliefStatus, Slot
from beliefs.schemas import RISKS, AnyJSONField, ObjectField
from beliefs.selectors import shapes
from beliefs.selectors.shapes import Doc

# Choice sets the OpenAPI document names once each (settings.SPECTACULAR_SETTINGS).
INSTANCE_STATUSES = list(shapes.INSTANCE_STATUSES)
BELIEF_STATUSES = list(BeliefStatus.values)

_TEXT_FORMATS: dict[str | None, type[serializers.Field]] = {
    None: serializers.CharField,
    "uuid": serializers.UUIDField,
    "date-time": serializers.DateTimeField,
}
_PLAIN: dict[Any, type[serializers.Field]] = {
    int: serializers.IntegerField,
    bool: serializers.BooleanField,
}


def _field(hint: Any) -> serializers.Field:
    """The serializer field that documents a TypedDict key of type `hint`."""
    doc = Doc()
    # (Read from the hint: with postponed annotations, Python 3.11's `__required_keys__` misses
    # it.)
    required = get_origin(hint) is not NotRequired
    if not required:
        hint = get_args(hint)[0]
    if get_origin(hint) is Annotated:
        hint, doc = hint.__origin__, next(m for m in hint.__metadata__ if isinstance(m, Doc))
    options: dict[str, Any] = {} if required else {"required": False}
    if doc.help:
        options["help_text"] = doc.help
    if get_origin(hint) in (Union, types.UnionType) and type(None) in get_args(hint):
        (hint,) = [arg for arg in get_args(hint) if arg is not type(None)]
        options["allow_null"] = True
    origin, args = get_origin(hint), get_args(hint)
    if hint is Any:  # any JSON value, null included
        return AnyJSONField(**{"allow_null": True, **options})
    if is_typeddict(hint):
        return serializer_for(hint)(**options)
    if origin is list and is_typeddict(args[0]):
        return serializer_for(args[0])(many=True, **options)
    if origin is list:
        return serializers.ListField(child=_field(args[0]), **options)
    if origin is dict and args[1] is Any:
        return ObjectField(**options)
    if origin is dict:
        return serializers.DictField(child=_field(args[1]), **options)
    if hint is str and doc.choices:
        return serializers.ChoiceField(choices=list(doc.choices), **options)
    if hint is str:
        return _TEXT_FORMATS[doc.format](**options)
    return _PLAIN[hint](**options)


@cache
def serializer_for(shape: type) -> type[serializers.Serializer]:
    """A serializer whose fields are the keys of the TypedDict `shape`, each documented by its
    type and `Doc`, named as the document names it (`InstanceJSON`: `InstanceOut`). Made once
    per shape, so that every body that nests it refers to one component."""
    hints = get_type_hints(shape, include_extras=True)
    fields = {key: _field(hint) for key, hint in hints.items()}
    name = shape.__name__.removesuffix("JSON") + "Out"
    return type(
        name,
        (serializers.Serializer,),
        {"__doc__": shape.__doc__, "__module__": __name__, **fields},
    )


WorldDiffOut = serializer_for(shapes.WorldDiffJSON)
BeliefSummaryOut = serializer_for(shapes.BeliefSummaryJSON)
PlanItemOut = serializer_for(shapes.PlanItemJSON)
PromptOut = serializer_for(shapes.PromptJSON)
PromptFormOut = serializer_for(shapes.PromptFormJSON)
SignatureOut = serializer_for(shapes.SignatureJSON)
InstanceOut = serializer_for(shapes.InstanceJSON)
PlanOut = serializer_for(shapes.PlanJSON)
RespondOut = serializer_for(shapes.RespondJSON)


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
    limit = serializers.IntegerField(
        required=False, help_text="with too_many_endpoints: the most a runtime may have"
    )


class ConflictOut(ErrorOut):
    prompt = PromptFormOut(required=False, help_text="the fresh prompt, when one was answered")
    bindings_digest = serializers.CharField(
        required=False,
        help_text="with stale_digest, refusing an approval: the digest of the values now",
    )
    worlds_digest = serializers.CharField(
        required=False,
        allow_null=True,
        help_text="with stale_digest, refusing an approval: the digest of their worlds now",
    )
