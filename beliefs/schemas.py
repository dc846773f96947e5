"""Every input the console reads, typed: the JSON API's bodies and queries, a card's answer
and the proposal filters. The API and the pages both import them from here, so the two faces of
the console refuse the same things with the same words.

Inputs are validated here, at the edge, and turned into the typed arguments the services take
(`SlotSpec`, `BeliefSpec`, ...): a service never parses untrusted data. Every input refuses
fields it does not know, the same way everywhere (`unknown_field`). A refusal becomes the
`InvalidInput` the services raise (`invalid_input`), one shape for the API and the pages.

The respond form of the web page takes what the API's respond takes; it uses `RespondFormIn`,
the same fields read from a form post.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from django import forms
from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail, ValidationError

from beliefs.domain.canonical import canonical_json
from beliefs.domain.classes import parse_scope_order
from beliefs.domain.contract import FINDING_CODES
from beliefs.domain.meaning import check_valid_until
from beliefs.domain.policy import RiskClass, Source
from beliefs.domain.problems import VERSION_MESSAGE, Problem, ProblemCode
from beliefs.domain.vocabulary import (
    MAX_KEY_LENGTH,
    MAX_LABEL_LENGTH,
    MAX_TEXT_LENGTH,
    VERDICTS,
    Action,
)
from beliefs.errors import InvalidInput
from beliefs.models import InstanceStatus, PromptState, Slot
from beliefs.services import limits
from beliefs.services.instances import BeliefSpec
from beliefs.services.limits import Limit
from beliefs.services.task_classes import DecisionSpec, SlotSpec

MAX_INT = 2**31 - 1  # the database's integer columns
MAX_PAGE = 1000
RISK_FIELDS = ("risk_class", "risk", "effective_risk")
# Choice sets the OpenAPI document names once each (settings.SPECTACULAR_SETTINGS).
RISKS = [r.value for r in RiskClass]
RISK_MESSAGE = "risk classes are set by classifiers, not runtimes"

# --- fields --------------------------------------------------------------------------------


class TextField(serializers.CharField):
    """Text, and only text: a number or a boolean is refused rather than turned into a string.
    (DRF's CharField also refuses NUL and lone surrogates, should a caller skip the edge guard.)"""

    default_error_messages = {
        "invalid": "must be text",
        "max_length": "must be at most {max_length} characters",
    }

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class ReasonField(TextField):
    """The reason a person gives (for a reject, a veto, a cancel, an away): optional, and may
    be blank."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("max_length", MAX_TEXT_LENGTH)
        kwargs.setdefault("allow_blank", True)
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)


class KeyField(TextField):
    """A task class, slot or decision key, or a username: non-empty text, trimmed."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("max_length", MAX_KEY_LENGTH)
        kwargs.setdefault(
            "error_messages",
            {"blank": "must be a non-empty string", "invalid": "must be a non-empty string"},
        )
        super().__init__(**kwargs)


class WholeNumberField(serializers.IntegerField):
    """A JSON integer, and only that: "3", 1.5 and true are refused (JSON has a number type)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("max_value", MAX_INT)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class JSONBooleanField(serializers.BooleanField):
    """A JSON true or false, and only that: 0, 1, "true" and "yes" are refused (JSON has a
    boolean type, and the document says boolean)."""

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


class AnyJSONField(serializers.JSONField):
    """Any JSON value (a belief value, a world statement's leaf, a proposal document)."""


class ObjectField(serializers.DictField):
    """A JSON object whose values may be anything."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("child", AnyJSONField(allow_null=True))
        super().__init__(**kwargs)


class WorldField(serializers.DictField):
    """The world as a runtime states it: {slot_key: {...}}, each slot's statement an object."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("child", ObjectField())
        kwargs.setdefault(
            "help_text",
            "{slot_key: {...}}: the world now, one object per slot; a statement's valid_until "
            "(ISO 8601), if any, is when its meaning expires",
        )
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        world: dict[str, Any] = super().to_internal_value(data)
        problems = {key: check_valid_until(ref) for key, ref in world.items()}
        refused = {key: [problem] for key, problem in problems.items() if problem}
        if refused:
            raise ValidationError(refused)
        return world


class ScopeOrderField(serializers.ListField):
    """A monotonic slot's scopes, lowest first: the rule the classifier form applies too."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("child", TextField(max_length=MAX_LABEL_LENGTH))
        kwargs.setdefault("min_length", 2)
        kwargs.setdefault("help_text", "at least two distinct scopes, lowest first")
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> list[str] | None:
        if not isinstance(data, list) or not all(isinstance(s, str) for s in data):
            raise ValidationError(self._message())
        try:
            return parse_scope_order(data)
        except ValueError:
            raise ValidationError(self._message()) from None

    @staticmethod
    def _message() -> str:
        return "must be a list of at least two distinct non-empty strings, lowest first"


# --- the strict base -----------------------------------------------------------------------


class StrictSerializer(serializers.Serializer):
    """An input that refuses what it does not know instead of ignoring it.

    `refused` names fields that are refused with a message of their own (a runtime sending a
    risk class is told who sets risk classes). A missing required field says "required".
    """

    refused: ClassVar[Mapping[str, str]] = {}

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        for field in fields.values():
            if str(field.error_messages.get("required")) == "This field is required.":
                field.error_messages["required"] = "required"
        return fields

    def to_internal_value(self, data: Any) -> Any:
        errors: dict[str, list[ErrorDetail]] = {}
        if isinstance(data, Mapping):
            for name in data:
                if name in self.fields:
                    continue
                message = self.refused.get(str(name))
                errors[str(name)] = (
                    [ErrorDetail(message, code="invalid")]
                    if message
                    else [ErrorDetail("unknown field", code="unknown_field")]
                )
        try:
            value = super().to_internal_value(data)
        except ValidationError as exc:
            if not errors or not isinstance(exc.detail, dict):
                raise
            raise ValidationError({**errors, **exc.detail}) from None
        if errors:
            raise ValidationError(errors)
        return value


class LimitedSerializer(StrictSerializer):
    """A strict input whose lists are refused by their length before any element is read:
    `list_limits` maps each list field to its limit (20,000 slots cost seconds to validate)."""

    list_limits: ClassVar[Mapping[str, Limit]] = {}

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, Mapping):
            problems = limits.body_problems(data, self.list_limits)
            if problems:
                raise ValidationError(
                    {
                        field: [ErrorDetail(m, code="limit_exceeded") for m in messages]
                        for field, messages in problems.items()
                    }
                )
        return super().to_internal_value(data)


# --- task classes --------------------------------------------------------------------------


class SlotIn(StrictSerializer):
    refused = {
        **dict.fromkeys(RISK_FIELDS, f"{RISK_MESSAGE}; send suggested_risk instead"),
    }

    key = KeyField()
    label = TextField(max_length=MAX_LABEL_LENGTH, allow_blank=True, required=False)
    value_type = serializers.ChoiceField(choices=Slot.ValueType.values, required=False)
    choices = serializers.ListField(
        child=AnyJSONField(allow_null=True),
        allow_empty=False,
        required=False,
        allow_null=True,
        help_text="the values the slot may take, each distinct",
    )
    scope_order = ScopeOrderField(required=False, allow_null=True)
    suggested_risk = serializers.ChoiceField(
        choices=RISKS,
        required=False,
        allow_null=True,
        help_text="a hint for classifiers; never a risk class",
    )
    future = serializers.BooleanField(
        required=False,
        help_text="a date slot that takes only dates from today on (a date before today is "
        "asked, never bound); a runtime may turn it on, only a classifier off",
    )

    def validate_choices(self, value: list[Any] | None) -> list[Any] | None:
        if value is not None and len(set(map(canonical_json, value))) != len(value):
            raise ValidationError("must be a non-empty list of distinct values")
        return value

    def validate(self, attrs: dict[str, Any]) -> SlotSpec:
        fields = dict(attrs)
        key = fields.pop("key")
        if "suggested_risk" in fields:
            fields["suggested_risk"] = fields["suggested_risk"] or ""
        if "value_type" in fields and fields["value_type"] is None:
            fields["value_type"] = Slot.ValueType.STRING
        if fields.get("future") and fields.get("value_type") != Slot.ValueType.DATE:
            raise ValidationError({"future": "only a date slot (value_type date) takes it"})
        return SlotSpec.stated(key, **fields)


class DecisionIn(StrictSerializer):
    refused = dict.fromkeys(RISK_FIELDS, RISK_MESSAGE)

    key = KeyField()
    label = TextField(max_length=MAX_LABEL_LENGTH, allow_blank=True, required=False)
    slots = serializers.ListField(child=KeyField(), required=False, help_text="slot keys")

    def validate(self, attrs: dict[str, Any]) -> DecisionSpec:
        return DecisionSpec(
            key=attrs["key"], label=attrs.get("label", ""), slots=tuple(attrs.get("slots", ()))
        )


def _no_duplicate_keys(specs: list[Any]) -> list[Any]:
    keys = [spec.key for spec in specs]
    dupes = sorted({k for k in keys if keys.count(k) > 1})
    if dupes:
        raise ValidationError(f"duplicate key {dupes[0]!r}")
    return specs


class TaskClassIn(LimitedSerializer):
    list_limits = {"slots": limits.SLOTS, "decisions": limits.DECISIONS}

    key = KeyField(required=False, help_text="if sent, must equal the key in the URL")
    name = TextField(max_length=MAX_LABEL_LENGTH, allow_blank=True, allow_null=True, required=False)
    open_slots = JSONBooleanField(
        required=False,
        help_text="a tool passthrough: an action may name slots the class does not have, each "
        "registered unclassified and in play only for the actions that name it",
    )
    slots = SlotIn(many=True, required=False)
    decisions = DecisionIn(many=True, required=False)
    subject_key = KeyField(
        required=False,
        help_text="the world key that names the thing a run acts on (a slot's key, or an entry "
        "of the world), as a refund's `order`: people see runs with different subjects as "
        'separate tasks ("Refund a customer — order 1043"), not as attempts of one. Carrying '
        "and routing are unchanged",
    )

    def validate_key(self, value: str) -> str:
        if value != self.context.get("key"):
            raise ValidationError("differs from the key in the URL")
        return value

    def validate_slots(self, value: list[SlotSpec]) -> list[SlotSpec]:
        return _no_duplicate_keys(value)

    def validate_decisions(self, value: list[DecisionSpec]) -> list[DecisionSpec]:
        return _no_duplicate_keys(value)


class ShareIn(StrictSerializer):
    history = JSONBooleanField(
        required=False,
        default=False,
        help_text="also pool the values of the class's people with this runtime: the owner and "
        "every runtime with history carry each other's values",
    )


# --- instances and beliefs -----------------------------------------------------------------


class BeliefIn(StrictSerializer):
    slot = KeyField(help_text="an unknown slot is registered, unclassified")
    value = AnyJSONField(allow_null=True)
    source = serializers.ChoiceField(choices=[s.value for s in Source])
    turn = WholeNumberField(min_value=0, required=False)
    world_ref = ObjectField(
        required=False,
        allow_null=True,
        help_text="what the value referred to; its valid_until (ISO 8601), if any, is when "
        "that meaning expires",
    )

    def validate_world_ref(self, value: dict[str, Any] | None) -> dict[str, Any] | None:
        problem = check_valid_until(value)
        if problem is not None:
            raise ValidationError(problem)
        return value

    def validate(self, attrs: dict[str, Any]) -> BeliefSpec:
        return BeliefSpec(
            slot=attrs["slot"],
            value=attrs["value"],
            source=Source(attrs["source"]),
            turn=attrs.get("turn", 0),
            world_ref=attrs.get("world_ref"),
        )


class InstanceIn(LimitedSerializer):
    list_limits = {"beliefs": limits.OPENING_BELIEFS}

    task_class = KeyField()
    principal = KeyField(help_text="the username of the end user")
    slots = serializers.ListField(
        child=KeyField(),
        required=False,
        allow_null=True,
        help_text="the slots this action uses (default: every declared slot of the class); "
        "planning, prompts and bindings cover exactly these",
    )
    audience = TextField(
        max_length=MAX_LABEL_LENGTH,
        required=False,
        allow_blank=True,
        help_text="whom the receipt is for (its aud; default: your runtime's name): your "
        "runtime's name or an audience registered for it in the console's admin, else 400 "
        "unknown_audience",
    )
    world = WorldField(required=False, allow_null=True)
    beliefs = BeliefIn(many=True, required=False)


class WorldIn(StrictSerializer):
    world = WorldField()


class CancelIn(StrictSerializer):
    reason = ReasonField(allow_null=True)


# The actions on a prompt, and an approver's: two enums named apart in the OpenAPI schema.
PROMPT_ACTIONS = [a.value for a in Action]
APPROVAL_ACTIONS = ["approve", "reject", "away"]


MAX_ACKNOWLEDGED = 1000


class ApprovalIn(StrictSerializer):
    """M-of-N approval: an approver's approve, reject or mark-away, for the exact bindings
    they saw. There is no "on behalf of": a person approves only for themself."""

    action = serializers.ChoiceField(
        choices=APPROVAL_ACTIONS,
        error_messages=dict.fromkeys(
            ("invalid_choice", "required", "null"), "one of approve, reject, away"
        ),
    )
    bindings_digest = TextField(
        max_length=64, help_text="the bindings_digest of the values you saw and approve"
    )
    worlds_digest = TextField(
        max_length=64,
        required=False,
        allow_blank=True,
        help_text="the worlds_digest of the world references you saw with them (required "
        "where the instance has one: 409 stale_digest otherwise)",
    )
    acknowledged = serializers.ListField(
        child=TextField(max_length=MAX_TEXT_LENGTH, allow_blank=True),
        max_length=MAX_ACKNOWLEDGED,
        required=False,
        help_text="for approve: each changed detail of the values' worlds, as 'slot:key' "
        "(the instance read's world_changes lists them); 400 not_acknowledged otherwise",
    )
    reason = ReasonField(help_text="required for reject; optional for away")
    approver = TextField(
        max_length=MAX_LABEL_LENGTH,
        required=False,
        help_text="for away: the username of the member you mark away",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs.get("approver") and attrs["action"] != "away":
            raise serializers.ValidationError(
                {"approver": "only for away: a person approves or rejects only for themself"}
            )
        return attrs


class RedeemIn(StrictSerializer):
    receipt = TextField(max_length=16384, help_text="the compact JWS, as the instance read gave it")
    bindings_digest = TextField(
        max_length=64,
        required=False,
        help_text="the digest of the arguments you are about to execute: refused unless it is "
        "the receipt's",
    )


# --- prompts and responses -----------------------------------------------------------------

ACTION_MESSAGE = f"must be one of {', '.join(a.value for a in Action)}"
_VERSION_ERRORS: dict[str, Any] = dict.fromkeys(
    ("required", "invalid", "null", "min_value", "max_value", "max_string_length"),
    VERSION_MESSAGE,
)


# The most changed details one confirm acknowledges (a world statement has far fewer keys).


class RespondIn(StrictSerializer):
    action = serializers.ChoiceField(
        choices=[a.value for a in Action],
        error_messages=dict.fromkeys(("invalid_choice", "required", "null"), ACTION_MESSAGE),
    )
    version = WholeNumberField(
        min_value=1, error_messages=_VERSION_ERRORS, help_text="the prompt version you saw"
    )
    value = AnyJSONField(allow_null=True, required=False, help_text="for edit and answer")
    value_confirmation = AnyJSONField(
        allow_null=True,
        required=False,
        help_text="the value typed a second time: for a scope escalation, and for an edit or "
        "answer that changes the value on record of an irreversible prompt (`prefill`, or an "
        "ASK's `context_value`)",
    )
    reason = ReasonField(allow_null=True, help_text="for reject and veto")
    acknowledged = serializers.ListField(
        child=TextField(max_length=MAX_TEXT_LENGTH, allow_blank=True),
        max_length=MAX_ACKNOWLEDGED,
        required=False,
        help_text=(
            "for a confirm of an irreversible value whose world diff shows changes: the key of "
            "every changed entry, each acknowledged as read"
        ),
    )
    typed_tail = TextField(
        max_length=MAX_TEXT_LENGTH,
        allow_blank=True,
        allow_null=True,
        required=False,
        help_text=(
            "for a confirm while friction is raised (your recent confirmations were fast and "
            "kept every value): the last 4 characters of the value on record"
        ),
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs["reason"] = attrs.get("reason") or ""
        attrs["acknowledged"] = attrs.get("acknowledged") or []
        return attrs


class RespondFormIn(serializers.Serializer):
    """What a card's form posts: the respond fields as text (the value is read by the page,
    which knows the slot's type); other form fields (the CSRF token) are the page's own."""

    action = serializers.ChoiceField(
        choices=[a.value for a in Action],
        error_messages=dict.fromkeys(("invalid_choice", "required", "null"), ACTION_MESSAGE),
    )
    version = serializers.IntegerField(
        min_value=1, max_value=MAX_INT, error_messages=_VERSION_ERRORS
    )
    reason = ReasonField()


class PageQuery(StrictSerializer):
    limit = serializers.IntegerField(min_value=1, max_value=MAX_PAGE, required=False)
    offset = serializers.IntegerField(min_value=0, max_value=MAX_INT, required=False)


class PromptQuery(PageQuery):
    state = serializers.ChoiceField(choices=PromptState.values, required=False)


class InstanceQuery(PageQuery):
    status = serializers.ChoiceField(choices=InstanceStatus.values, required=False)
    principal = serializers.CharField(max_length=150, required=False)


# --- proposals -----------------------------------------------------------------------------


class SourceIn(StrictSerializer):
    provider = TextField(
        max_length=MAX_LABEL_LENGTH, allow_blank=True, allow_null=True, required=False
    )
    model = TextField(
        max_length=MAX_LABEL_LENGTH, allow_blank=True, allow_null=True, required=False
    )
    run = TextField(max_length=MAX_LABEL_LENGTH, allow_blank=True, allow_null=True, required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, str]:
        return {name: text for name, text in attrs.items() if text is not None}


class ValidateIn(StrictSerializer):
    graph = AnyJSONField(
        allow_null=True,
        help_text="{nodes: [...], edges: [...]}: the graph before; anything else is judged",
    )
    update = AnyJSONField(
        allow_null=True,
        help_text="the model's proposal; its schema is GET proposals/contract-schema/",
    )
    source = SourceIn(required=False, allow_null=True)


class ProposalFilterForm(forms.Form):
    """The filters of the list, the export, the statistics and the API (all GET parameters)."""

    verdict = forms.ChoiceField(
        required=False, choices=[("", "Any verdict"), *((v, v) for v in VERDICTS)]
    )
    code = forms.ChoiceField(
        required=False,
        label="Finding",
        choices=[("", "Any finding"), *((c, c) for c in FINDING_CODES)],
    )
    provider = forms.CharField(required=False, max_length=MAX_LABEL_LENGTH)
    model = forms.CharField(required=False, max_length=MAX_LABEL_LENGTH)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # "from" is a Python keyword, so these two cannot be class attributes.
        date_widget = forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d")
        self.fields["from"] = forms.DateField(
            required=False, label="From", input_formats=["%Y-%m-%d"], widget=date_widget
        )
        self.fields["to"] = forms.DateField(
            required=False, label="To", input_formats=["%Y-%m-%d"], widget=date_widget
        )
        for name in ("from", "to"):
            self.fields[name].error_messages["invalid"] = "Enter a date as YYYY-MM-DD."

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        start, end = data.get("from"), data.get("to")
        if start and end and start > end:
            self.add_error("to", "must not be before 'from'.")
        return data


def filter_errors(form: forms.Form) -> InvalidInput:
    """The form's errors as the API's 400."""
    fields = {name: [str(m) for m in messages] for name, messages in form.errors.items()}
    first_name, first = next(iter(fields.items()))
    return InvalidInput(f"{first_name}: {first[0]}", code="invalid_filter", fields=fields)


# --- refusals ------------------------------------------------------------------------------


def _flatten(detail: Any, prefix: str = "", codes: set[str] | None = None) -> dict[str, list[str]]:
    """DRF's nested errors as {"slots[0].risk_class": [messages]}; `codes` collects their codes.

    An object's own error (DRF's "non_field_errors") is named by the object's path.
    """
    fields: dict[str, list[str]] = {}
    if isinstance(detail, dict):
        for key, value in detail.items():
            if key == "non_field_errors" and prefix:
                name = prefix
            elif isinstance(key, int):  # a list's errors, keyed by index
                name = f"{prefix}[{key}]"
            else:
                name = f"{prefix}.{key}" if prefix else str(key)
            for path, messages in _flatten(value, name, codes).items():
                fields.setdefault(path, []).extend(messages)
    elif isinstance(detail, list):
        if all(not isinstance(item, dict | list) for item in detail):
            fields[prefix or "non_field_errors"] = [str(item) for item in detail]
            if codes is not None:
                codes.update(getattr(item, "code", "invalid") for item in detail)
        else:
            for index, item in enumerate(detail):
                fields.update(_flatten(item, f"{prefix}[{index}]", codes))
    else:
        fields[prefix or "non_field_errors"] = [str(detail)]
        if codes is not None:
            codes.add(getattr(detail, "code", "invalid"))
    return fields


def invalid_input(exc: ValidationError) -> InvalidInput:
    """A serializer's refusal as the error the services raise (one shape for API and pages).

    The code says what kind of refusal it is when all of its parts agree: only unknown fields
    (`unknown_field`), only missing ones (`missing_field`), only lists over a limit
    (`limit_exceeded`); anything else is `invalid`.
    """
    codes: set[str] = set()
    fields = _flatten(exc.detail, codes=codes)
    first_field, first_messages = next(iter(fields.items()), ("", ["invalid input"]))
    code = "invalid"
    if codes == {"unknown_field"}:
        code = "unknown_field"
    elif codes == {"required"}:
        code = "missing_field"
    elif codes == {"limit_exceeded"}:
        code = "limit_exceeded"
    return InvalidInput(f"{first_field}: {first_messages[0]}", code=code, fields=fields)


def parse(serializer: type[serializers.Serializer], data: Any, **context: Any) -> Any:
    """Validated data for a caller outside an API view (a page, the demo seed), or the
    InvalidInput a service would raise, with the API's field paths."""
    checked = serializer(data=data, context=context)
    if not checked.is_valid():
        refused = invalid_input(ValidationError(checked.errors))
        refused.problems = _problems(checked)
        raise refused
    return checked.validated_data


def _problems(checked: serializers.Serializer) -> dict[str, list[Problem]]:
    """The refusals of `checked`'s own fields that a `Problem` says in the same words, as
    problems (a page says them in its own words); the others stay messages only."""
    found: dict[str, list[Problem]] = {}
    for name, details in checked.errors.items():
        field = checked.fields.get(name)
        if field is None or not isinstance(details, list):
            continue
        for detail in details:
            candidates = [Problem(ProblemCode.REQUIRED), Problem(ProblemCode.NOT_TEXT)]
            limit = getattr(field, "max_length", None)
            if limit is not None:
                candidates.append(Problem(ProblemCode.TOO_LONG, {"limit": limit}))
            if isinstance(field, serializers.ChoiceField):
                choices = [str(c) for c in field.choices]
                candidates.append(Problem(ProblemCode.NOT_A_CHOICE, {"choices": choices}))
            if name == "version":
                candidates.append(Problem(ProblemCode.NOT_A_VERSION))
            said = [p for p in candidates if p.message == str(detail)]
            if said:
                found.setdefault(name, []).append(said[0])
    return found
