"""The task class page as a classifier reads it: a row per slot and per decision, each with its
change form, the requests waiting for a second classifier, and the impact previews."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import Group

from beliefs.domain import policy
from beliefs.domain.classes import DecisionClass, Impact, impact_of
from beliefs.domain.policy import RiskClass
from beliefs.models import Decision, RiskChangeRequest, Slot, TaskClass
from beliefs.selectors.classification import (
    classes_from,
    impact_snapshot,
    open_instances_of,
    pending_requests,
    request_change,
    request_is_current,
)
from console.forms.classify import DecisionForm, RequestDecisionForm, SlotForm
from console.http import AuthedHttpRequest

UNCLASSIFIED = RiskClass.UNCLASSIFIED.value


@dataclass(kw_only=True)
class ChangeRow:
    """What the slot and the decision rows share: their id on the page, the requests waiting
    for approval, and the impact preview of their change form."""

    dom_id: str
    pending: list[RiskChangeRequest]
    impact: Impact | None = None
    nothing: bool = False  # a preview found no risk change in the form


@dataclass(kw_only=True)
class SlotRow(ChangeRow):
    slot: Slot
    form: SlotForm
    effective: policy.EffectiveRisk
    decisions: list[DecisionClass]


@dataclass(kw_only=True)
class DecisionRow(ChangeRow):
    decision: Decision
    form: DecisionForm
    slots: list[str]


@dataclass
class PendingRow:
    request: RiskChangeRequest
    target: str
    impact: Impact | None
    current: bool
    own: bool
    form: RequestDecisionForm


@dataclass
class Bound:
    """A row whose form came from the request (errors, or a preview) instead of the database."""

    kind: str  # "slot" | "decision" | "request"
    pk: int
    form: SlotForm | DecisionForm | RequestDecisionForm
    impact: Impact | None = None
    nothing: bool = False  # a preview found no risk change in the form


def _is_quorum(change_request: RiskChangeRequest) -> bool:
    """M-of-N approval: a request about a decision's approvals, not a risk."""
    return change_request.field in (
        RiskChangeRequest.Field.APPROVALS_REQUIRED,
        RiskChangeRequest.Field.APPROVERS,
    )


def _target_label(change_request: RiskChangeRequest) -> str:
    if change_request.slot is not None:
        return f"slot {change_request.slot.key}"
    assert change_request.decision is not None  # a request names a slot or a decision
    return f"decision {change_request.decision.key}"


def class_context(
    request: AuthedHttpRequest,
    task_class: TaskClass,
    bound: Bound | None = None,
    focus: str = "",
) -> dict[str, Any]:
    """Everything the task class page shows, in a constant number of queries:
    slots, decisions, their links, pending requests, open instances (and their beliefs when a
    pending request needs an impact preview)."""
    slots = list(task_class.slots.order_by("position", "id"))
    decisions = list(task_class.decisions.order_by("id").prefetch_related("slots"))
    classes = classes_from(slots, decisions)
    effective = classes.effective()
    slot_keys = [s.key for s in slots]
    pending = pending_requests(task_class)
    snapshot = impact_snapshot(task_class, classes, slots) if pending else None
    open_instances = (
        snapshot.open_instances if snapshot is not None else open_instances_of(task_class).count()
    )

    def bound_for(kind: str, pk: int) -> Bound | None:
        return bound if bound is not None and bound.kind == kind and bound.pk == pk else None

    slot_rows = []
    for slot in slots:
        this = bound_for("slot", slot.pk)
        slot_rows.append(
            SlotRow(
                dom_id=f"slot-{slot.pk}",
                slot=slot,
                form=this.form if this else SlotForm(slot=slot),  # type: ignore[arg-type]
                effective=effective[slot.key],
                decisions=classes.decisions_fed_by(slot.key),
                pending=[r for r in pending if r.slot_id == slot.pk],
                impact=this.impact if this else None,
                nothing=bool(this and this.nothing),
            )
        )
    decision_rows = []
    for decision, facts in zip(decisions, classes.decisions, strict=True):
        linked = [k for k in slot_keys if k in facts.slots]
        this = bound_for("decision", decision.pk)
        decision_rows.append(
            DecisionRow(
                dom_id=f"decision-{decision.pk}",
                decision=decision,
                form=this.form  # type: ignore[arg-type]
                if this
                else DecisionForm(decision=decision, slot_keys=slot_keys, linked=linked),
                slots=linked,
                pending=[r for r in pending if r.decision_id == decision.pk],
                impact=this.impact if this else None,
                nothing=bool(this and this.nothing),
            )
        )
    pending_rows = []
    for change_request in pending:
        this = bound_for("request", change_request.pk)
        current = request_is_current(change_request, classes)
        pending_rows.append(
            PendingRow(
                request=change_request,
                target=_target_label(change_request),
                impact=impact_of(snapshot, [request_change(change_request)])
                if snapshot is not None
                and current
                and not _is_quorum(change_request)
                # An on/off guard's change is not a change of risk: no impact to preview.
                and change_request.field
                not in (
                    RiskChangeRequest.Field.REQUIRES_SIGNATURE,
                    RiskChangeRequest.Field.PERSON_CONFIRMS,
                    RiskChangeRequest.Field.FUTURE,
                )
                else None,
                current=current,
                own=change_request.requested_by_id == request.user.pk,
                form=this.form  # type: ignore[arg-type]
                if this
                else RequestDecisionForm(change_request=change_request),
            )
        )
    return {
        "task_class": task_class,
        "slot_rows": slot_rows,
        "decision_rows": decision_rows,
        "pending_rows": pending_rows,
        "open_instances": open_instances,
        "unclassified_count": sum(1 for s in slots if s.risk_class == UNCLASSIFIED),
        # M-of-N approval: the groups a decision's approvers may come from.
        "approver_groups": list(Group.objects.order_by("name").values_list("id", "name")),
        # The element an htmx swap hands the keyboard focus to (static/console/console.js).
        "focus": focus,
    }
