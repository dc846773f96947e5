"""The classifier console's forms: a slot's row, a decision's row, and the answer to a pending
four-eyes request. Each form says which risk changes it asks for (`changes()`), in the order the
services take them."""

from __future__ import annotations

from typing import Any, cast

from django import forms

from beliefs.domain.classes import CHOOSABLE_RISKS, Change
from beliefs.domain.policy import RiskClass
from beliefs.domain.vocabulary import MAX_TEXT_LENGTH
from beliefs.errors import InvalidInput
from beliefs.models import Decision, RiskChangeRequest, Slot
from beliefs.services.classification import parse_scope_order

UNCLASSIFIED = RiskClass.UNCLASSIFIED.value

REASON_REQUIRED = "Give a reason for this change: it is kept in the audit log."
# Deciding another classifier's request: the refusal says what is missing for what.
DECISION_REASON_REQUIRED = {
    "refuse": "Give a reason for refusing this request: the classifier who asked reads it, "
    "and it is kept in the audit log.",
    "approve": "Give a reason for approving this request: it is kept in the audit log.",
}


def _risk_choices(current: str) -> list[tuple[str, str]]:
    choices = [(r.value, r.value) for r in CHOOSABLE_RISKS]
    if current == UNCLASSIFIED:
        # Keeping the slot unclassified is "no change", not a class one can choose.
        choices.insert(0, ("", "unclassified (choose a class)"))
    return choices


def _reason_field() -> forms.CharField:
    return forms.CharField(
        max_length=MAX_TEXT_LENGTH,
        required=True,
        strip=True,
        error_messages={"required": REASON_REQUIRED},
    )


class SlotForm(forms.Form):
    risk_class = forms.ChoiceField(required=False, label="Own risk class")
    monotonic = forms.BooleanField(required=False, label="Monotonic")
    scope_order = forms.CharField(required=False, max_length=MAX_TEXT_LENGTH, label="Scope order")
    reason = _reason_field()

    def __init__(self, *args: Any, slot: Slot, preview: bool = False, **kwargs: Any) -> None:
        kwargs.setdefault("auto_id", f"slot-{slot.pk}-%s")
        kwargs.setdefault(
            "initial",
            {
                "risk_class": "" if slot.risk_class == UNCLASSIFIED else slot.risk_class,
                "monotonic": slot.monotonic,
                "scope_order": ", ".join(slot.scope_order or []),
            },
        )
        super().__init__(*args, **kwargs)
        self.slot = slot
        cast(forms.ChoiceField, self.fields["risk_class"]).choices = _risk_choices(slot.risk_class)
        self.fields["reason"].required = not preview

    def clean_scope_order(self) -> Any:
        if "scope_order" not in self.data:
            return None  # the field is shown for monotonic slots only: absent means unchanged
        try:
            return parse_scope_order(self.cleaned_data["scope_order"])
        except InvalidInput as exc:
            raise forms.ValidationError(exc.fields["scope_order"][0]) from None

    def changes(self) -> list[Change]:
        """The risk changes the form asks for, in the order the services take them."""
        slot, data = self.slot, self.cleaned_data
        changes = []
        if data["risk_class"] and data["risk_class"] != slot.risk_class:
            changes.append(Change("slot", slot.key, "risk_class", RiskClass(data["risk_class"])))
        if data["monotonic"] != slot.monotonic:
            changes.append(Change("slot", slot.key, "monotonic", data["monotonic"]))
        return changes

    def scope_order_changed(self) -> bool:
        return "scope_order" in self.data and self.cleaned_data["scope_order"] != (
            self.slot.scope_order or None
        )

    def previewed(self) -> list[Change]:
        """The changes a preview weighs: the risk changes, and a changed scope order (which
        re-routes nothing, but may wait for a second classifier)."""
        changes = self.changes()
        if self.scope_order_changed():
            order = self.cleaned_data["scope_order"]
            changes.append(
                Change("slot", self.slot.key, "scope_order", tuple(order) if order else None)
            )
        return changes


class DecisionForm(forms.Form):
    risk_class = forms.ChoiceField(required=False, label="Risk class")
    slots = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple, label="Slots it is fed by"
    )
    reason = _reason_field()

    def __init__(
        self,
        *args: Any,
        decision: Decision,
        slot_keys: list[str],
        linked: list[str],
        preview: bool = False,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("auto_id", f"decision-{decision.pk}-%s")
        kwargs.setdefault(
            "initial",
            {
                "risk_class": "" if decision.risk_class == UNCLASSIFIED else decision.risk_class,
                "slots": linked,
            },
        )
        super().__init__(*args, **kwargs)
        self.decision = decision
        self.linked = linked
        cast(forms.ChoiceField, self.fields["risk_class"]).choices = _risk_choices(
            decision.risk_class
        )
        cast(forms.ChoiceField, self.fields["slots"]).choices = [(k, k) for k in slot_keys]
        self.fields["reason"].required = not preview

    def changes(self) -> list[Change]:
        decision, data = self.decision, self.cleaned_data
        changes = []
        if data["risk_class"] and data["risk_class"] != decision.risk_class:
            changes.append(
                Change("decision", decision.key, "risk_class", RiskClass(data["risk_class"]))
            )
        if set(data["slots"]) != set(self.linked):
            changes.append(Change("decision", decision.key, "slots", frozenset(data["slots"])))
        return changes


class RequestDecisionForm(forms.Form):
    action = forms.ChoiceField(choices=[("approve", "Approve"), ("refuse", "Refuse")])
    reason = _reason_field()

    def __init__(self, *args: Any, change_request: RiskChangeRequest, **kwargs: Any) -> None:
        kwargs.setdefault("auto_id", f"request-{change_request.pk}-%s")
        super().__init__(*args, **kwargs)
        action = self.data.get("action") if self.is_bound else None
        if action in DECISION_REASON_REQUIRED:
            self.fields["reason"].error_messages["required"] = DECISION_REASON_REQUIRED[action]
