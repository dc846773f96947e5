"""Every output of the JSON API, typed, so that the OpenAPI document describes every response.
The inputs the API reads are in `beliefs.schemas`, which the pages read too.

The bodies the selectors and views build (a task class, an instance, its plan and prompts, a
belief, an approval...) are written once, as the TypedDicts of `beliefs.selectors.shapes` that
their builders return; `serializer_for` makes their serializers from those classes, for the
document. The rest (the proposals' validations, the pages of prompts, the errors) are declared
here, as serializers.
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

from beliefs.models import BeliefStatus
from beliefs.schemas import AnyJSONField, ObjectField
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
    # Whether the key may be left out is read from the hint: under postponed annotations,
    # Python 3.11's `__required_keys__` counts a NotRequired key as required.
    required = get_origin(hint) is not NotRequired
    if not required:
        hint = get_args(hint)[0]
    if get_origin(hint) is Annotated:
        hint, doc = hint.__origin__, next((m for m in hint.__metadata__ if isinstance(m, Doc)), doc)
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
    if hint in _PLAIN:
        return _PLAIN[hint](**options)
    raise TypeError(f"no field documents {hint!r}: add it to `_field`")


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
TaskClassOut = serializer_for(shapes.TaskClassJSON)
ShareOut = serializer_for(shapes.ShareJSON)
ShareListOut = serializer_for(shapes.ShareListJSON)
BeliefOut = serializer_for(shapes.BeliefJSON)
RedeemOut = serializer_for(shapes.RedeemJSON)
ApprovalOut = serializer_for(shapes.ApprovalJSON)
PersonPasskeysOut = serializer_for(shapes.PersonPasskeysJSON)
ValidateOut = serializer_for(shapes.ValidateJSON)
ValidationSummaryOut = serializer_for(shapes.ValidationSummaryJSON)
InstanceSummaryOut = serializer_for(shapes.InstanceSummaryJSON)
TaskClassSummaryOut = serializer_for(shapes.TaskClassSummaryJSON)


# --- prompts and responses -----------------------------------------------------------------


class PromptPageOut(serializers.Serializer):
    count = serializers.IntegerField()
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = PromptOut(many=True)


class InstanceSummaryPageOut(serializers.Serializer):
    count = serializers.IntegerField()
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = InstanceSummaryOut(many=True)


class TaskClassSummaryPageOut(serializers.Serializer):
    count = serializers.IntegerField()
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = TaskClassSummaryOut(many=True)


# --- proposals -----------------------------------------------------------------------------


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
