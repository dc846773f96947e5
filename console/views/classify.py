"""The classifier console: task classes, slot and decision classes, four-eyes
approvals, the routing matrix and the audit log.

Views parse a form, call the services in `beliefs.services.classification` and render. An
htmx request gets the fragment it swaps (`classify/_classification.html`,
`classify/_impact.html`); a plain form post gets a redirect or the whole page, so everything
works without JavaScript.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, cast

from django import forms
from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import Count, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from beliefs.domain import policy
from beliefs.domain.classes import CHOOSABLE_RISKS, Change, DecisionClass, Impact, impact_of
from beliefs.domain.policy import RiskClass
from beliefs.domain.vocabulary import AuditKind
from beliefs.errors import InvalidInput, ServiceError
from beliefs.models import (
    AuditEvent,
    Decision,
    RiskChangeRequest,
    Slot,
    TaskClass,
)
from beliefs.roles import is_classifier
from beliefs.selectors.classification import (
    classes_from,
    impact_snapshot,
    open_instances_of,
    pending_requests,
    request_change,
    request_is_current,
)
from beliefs.services import Actor
from beliefs.services.classification import (
    ChangeResult,
    classification_save,
    parse_scope_order,
    risk_change_request_approve,
    risk_change_request_refuse,
)
from console.http import AuthedHttpRequest, role_required

UNCLASSIFIED = RiskClass.UNCLASSIFIED.value
QUEUE_LIMIT = 100
ACTIVITY_PAGE_SIZE = 50


# Signed-in people without the classifier permission get 403.
classifier_required = role_required(
    is_classifier, "Only classifiers may use the classifier console."
)


# --- forms -----------------------------------------------------------------------------------

REASON_REQUIRED = "Give a reason for this change: it is kept in the audit log."


def _risk_choices(current: str) -> list[tuple[str, str]]:
    choices = [(r.value, r.value) for r in CHOOSABLE_RISKS]
    if current == UNCLASSIFIED:
        # Keeping the slot unclassified is "no change", not a class one can choose.
        choices.insert(0, ("", "unclassified (choose a class)"))
    return choices


def _reason_field() -> forms.CharField:
    return forms.CharField(
        max_length=2000,
        required=True,
        strip=True,
        error_messages={"required": REASON_REQUIRED},
    )


class SlotForm(forms.Form):
    risk_class = forms.ChoiceField(required=False, label="Own risk class")
    monotonic = forms.BooleanField(required=False, label="Monotonic")
    scope_order = forms.CharField(required=False, max_length=2000, label="Scope order")
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


# --- the task class page ----------------------------------------------------------------------


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


def _target_label(change_request: RiskChangeRequest) -> str:
    if change_request.slot is not None:
        return f"slot {change_request.slot.key}"
    assert change_request.decision is not None  # a request names a slot or a decision
    return f"decision {change_request.decision.key}"


def _task_class(key: str) -> TaskClass:
    task_class = TaskClass.objects.filter(key=key).first()
    if task_class is None:
        raise Http404("No such task class.")
    return task_class


def _class_context(
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
                if snapshot is not None and current
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
        # The element an htmx swap hands the keyboard focus to (static/console/console.js).
        "focus": focus,
    }


def _render_class(
    request: AuthedHttpRequest,
    task_class: TaskClass,
    *,
    bound: Bound | None = None,
    status: int = 200,
    focus: str = "",
) -> HttpResponse:
    if not focus and bound is not None:
        focus = "pending" if bound.kind == "request" else f"{bound.kind}-{bound.pk}"
    context = _class_context(request, task_class, bound, focus)
    template = "classify/_classification.html" if request.htmx else "classify/task_class.html"
    return render(request, template, context, status=status)


def _after_change(request: AuthedHttpRequest, task_class: TaskClass, anchor: str) -> HttpResponse:
    if request.htmx:
        return _render_class(request, task_class, focus=anchor)
    url = reverse("classify-task-class", args=[task_class.key])
    return redirect(f"{url}#{anchor}")


def _attach(form: forms.Form, exc: ServiceError) -> None:
    placed = False
    for name, problems in exc.fields.items():
        if name in form.fields:
            for problem in problems:
                form.add_error(name, problem)
            placed = True
    if not placed or exc.code == "needs_second_classifier":
        form.add_error(None, exc.detail)


def _announce(request: AuthedHttpRequest, results: list[ChangeResult]) -> None:
    for result in results:
        if result.outcome == "requested":
            messages.warning(request, result.message)
        elif result.outcome == "applied":
            messages.success(request, result.message)
        else:
            messages.info(request, result.message)


def _previewed(form: SlotForm | DecisionForm) -> list[Change]:
    return form.previewed() if isinstance(form, SlotForm) else form.changes()


def _keep_impact(task_class: TaskClass, bound: Bound, form: SlotForm | DecisionForm) -> None:
    """A refused save keeps the row's impact preview in view."""
    if form.is_valid() and (changes := _previewed(form)):
        bound.impact = impact_of(impact_snapshot(task_class), changes)


def _run(
    request: AuthedHttpRequest,
    task_class: TaskClass,
    bound: Bound,
    save: Callable[[], list[ChangeResult]],
    anchor: str,
) -> HttpResponse:
    """Run one form submission's service (all or nothing), then answer."""
    form = bound.form
    assert isinstance(form, SlotForm | DecisionForm)
    if not form.changes() and not (isinstance(form, SlotForm) and form.scope_order_changed()):
        bound.form.add_error(None, "Nothing changed: change a value first, then save.")
        return _render_class(request, task_class, bound=bound, status=400)
    try:
        results = save()
    except ServiceError as exc:
        _attach(form, exc)
        _keep_impact(task_class, bound, form)
        return _render_class(request, task_class, bound=bound, status=exc.status)
    _announce(request, results)
    return _after_change(request, task_class, anchor)


@require_GET
@classifier_required
def task_class_page(request: AuthedHttpRequest, key: str) -> HttpResponse:
    return _render_class(request, _task_class(key))


def _slot(task_class: TaskClass, slot_id: int) -> Slot:
    slot = task_class.slots.filter(pk=slot_id).first()
    if slot is None:
        raise Http404("No such slot.")
    return slot


def _decision(task_class: TaskClass, decision_id: int) -> Decision:
    decision = task_class.decisions.prefetch_related("slots").filter(pk=decision_id).first()
    if decision is None:
        raise Http404("No such decision.")
    return decision


@require_POST
@classifier_required
def slot_save(request: AuthedHttpRequest, key: str, slot_id: int) -> HttpResponse:
    task_class = _task_class(key)
    slot = _slot(task_class, slot_id)
    form = SlotForm(request.POST, slot=slot)
    bound = Bound("slot", slot.pk, form)
    if not form.is_valid():
        _keep_impact(task_class, bound, SlotForm(request.POST, slot=slot, preview=True))
        return _render_class(request, task_class, bound=bound, status=400)
    actor, reason = Actor(user=request.user), form.cleaned_data["reason"]

    def save() -> list[ChangeResult]:
        # The scope order is sent only when it changed: an unchanged one writes no audit event.
        order = {"scope_order": form.cleaned_data["scope_order"]}
        return classification_save(
            target=slot,
            changes=form.changes(),
            reason=reason,
            actor=actor,
            **(order if form.scope_order_changed() else {}),
        )

    return _run(request, task_class, bound, save, f"slot-{slot.pk}")


@require_POST
@classifier_required
def decision_save(request: AuthedHttpRequest, key: str, decision_id: int) -> HttpResponse:
    task_class = _task_class(key)
    decision = _decision(task_class, decision_id)
    form = _decision_form(request, task_class, decision)
    bound = Bound("decision", decision.pk, form)
    if not form.is_valid():
        preview = _decision_form(request, task_class, decision, preview=True)
        _keep_impact(task_class, bound, preview)
        return _render_class(request, task_class, bound=bound, status=400)
    actor, reason = Actor(user=request.user), form.cleaned_data["reason"]

    def save() -> list[ChangeResult]:
        return classification_save(
            target=decision, changes=form.changes(), reason=reason, actor=actor
        )

    return _run(request, task_class, bound, save, f"decision-{decision.pk}")


@require_POST
@classifier_required
def row_preview(request: AuthedHttpRequest, key: str, kind: str, row_id: int) -> HttpResponse:
    """What saving the slot's or decision's row as it stands would do; writes nothing.

    `kind` ("slot" or "decision") comes from the URL pattern, not from the request."""
    task_class = _task_class(key)
    form: SlotForm | DecisionForm
    if kind == "slot":
        form = SlotForm(request.POST, slot=_slot(task_class, row_id), preview=True)
    else:
        decision = _decision(task_class, row_id)
        form = _decision_form(request, task_class, decision, preview=True)
    return _preview(request, task_class, Bound(kind, row_id, form))


def _decision_form(
    request: AuthedHttpRequest, task_class: TaskClass, decision: Decision, *, preview: bool = False
) -> DecisionForm:
    slot_keys = list(task_class.slots.order_by("position", "id").values_list("key", flat=True))
    linked_keys = {s.key for s in decision.slots.all()}
    return DecisionForm(
        request.POST,
        decision=decision,
        slot_keys=slot_keys,
        linked=[k for k in slot_keys if k in linked_keys],
        preview=preview,
    )


def _preview(request: AuthedHttpRequest, task_class: TaskClass, bound: Bound) -> HttpResponse:
    form: SlotForm | DecisionForm = bound.form  # type: ignore[assignment]
    status = 400
    if form.is_valid():
        status = 200
        changes = _previewed(form)
        bound.nothing = not changes
        if changes:
            bound.impact = impact_of(impact_snapshot(task_class), changes)
    if request.htmx:
        context = {"impact": bound.impact, "form": form, "nothing": bound.nothing}
        return render(request, "classify/_impact.html", context, status=status)
    return _render_class(request, task_class, bound=bound, status=status)


@require_POST
@classifier_required
def request_decide(request: AuthedHttpRequest, key: str, request_id: int) -> HttpResponse:
    """Approve or refuse a pending four-eyes request."""
    task_class = _task_class(key)
    change_request = (
        RiskChangeRequest.objects.filter(pk=request_id, task_class=task_class)
        .select_related("slot", "decision", "requested_by", "task_class")
        .first()
    )
    if change_request is None:
        raise Http404("No such request.")
    form = RequestDecisionForm(request.POST, change_request=change_request)
    bound = Bound("request", change_request.pk, form)
    if not form.is_valid():
        return _render_class(request, task_class, bound=bound, status=400)
    service = (
        risk_change_request_approve
        if form.cleaned_data["action"] == "approve"
        else risk_change_request_refuse
    )
    actor, reason = Actor(user=request.user), form.cleaned_data["reason"]
    try:
        result = service(change_request=change_request, reason=reason, actor=actor)
    except ServiceError as exc:
        if change_request.state == RiskChangeRequest.State.PENDING:
            form.add_error(None, exc.detail)
            return _render_class(request, task_class, bound=bound, status=exc.status)
        messages.error(request, exc.detail)
        return _render_class(request, task_class, status=exc.status)
    _announce(request, [result])
    return _after_change(request, task_class, "pending")


# --- the index, the matrix ---------------------------------------------------------------------


@require_GET
@classifier_required
def index(request: AuthedHttpRequest) -> HttpResponse:
    """Every task class with its counts; the queue of unclassified slots and decisions first."""
    task_classes = TaskClass.objects.annotate(
        slot_count=Count("slots", distinct=True),
        unclassified_slots=Count("slots", filter=Q(slots__risk_class=UNCLASSIFIED), distinct=True),
        unclassified_decisions=Count(
            "decisions", filter=Q(decisions__risk_class=UNCLASSIFIED), distinct=True
        ),
        decision_count=Count("decisions", distinct=True),
        pending_count=Coalesce(
            Subquery(
                RiskChangeRequest.objects.filter(
                    task_class=OuterRef("pk"), state=RiskChangeRequest.State.PENDING
                )
                .values("task_class")
                .annotate(n=Count("id"))
                .values("n")
            ),
            0,
        ),
    ).order_by("key")
    queue = (
        Slot.objects.filter(risk_class=UNCLASSIFIED)
        .select_related("task_class")
        .order_by("task_class__key", "position", "id")
    )
    decision_queue = (
        Decision.objects.filter(risk_class=UNCLASSIFIED)
        .select_related("task_class")
        .order_by("task_class__key", "id")
    )
    rows = list(task_classes)
    queue_list = list(queue[: QUEUE_LIMIT + 1])
    decision_list = list(decision_queue[: QUEUE_LIMIT + 1])
    return render(
        request,
        "classify/index.html",
        {
            "task_classes": rows,
            "queue": queue_list[:QUEUE_LIMIT],
            "queue_more": len(queue_list) > QUEUE_LIMIT,
            "decision_queue": decision_list[:QUEUE_LIMIT],
            "decision_queue_more": len(decision_list) > QUEUE_LIMIT,
            "pending_total": sum(row.pending_count for row in rows),
        },
    )


@dataclass(frozen=True)
class MatrixGroup:
    risk: str
    monotonic: bool
    cells: list[policy.MatrixCell]


@require_GET
@classifier_required
def matrix(request: AuthedHttpRequest) -> HttpResponse:
    """The routing table, rendered from `policy.routing_matrix()` itself."""
    groups: list[MatrixGroup] = []
    for cell in policy.routing_matrix():
        if not groups or (groups[-1].risk, groups[-1].monotonic) != (
            cell.risk.value,
            cell.monotonic,
        ):
            groups.append(MatrixGroup(cell.risk.value, cell.monotonic, []))
        groups[-1].cells.append(cell)
    return render(request, "classify/matrix.html", {"groups": groups})


# --- the audit log -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ActivityFilter:
    """One of the audit log's filters: a query parameter chosen from a list."""

    name: str
    label: str
    blank: str  # what the choice that filters nothing says
    choices: list[str]
    selected: str

    @property
    def dom_id(self) -> str:
        return "filter-" + self.name.replace("_", "-")


@require_GET
@classifier_required
def activity(request: AuthedHttpRequest) -> HttpResponse:
    """The audit log, newest first, filterable by task class, actor and kind; one page at a
    time: a count, a page of events, and the three lists the filters offer."""
    events = AuditEvent.objects.select_related("task_class").order_by("-created_at", "-id")
    task_class_key = request.GET.get("task_class", "").strip()
    actor = request.GET.get("actor", "").strip()
    kind = request.GET.get("kind", "").strip()
    if task_class_key:
        events = events.filter(task_class__key=task_class_key)
    if actor:
        events = events.filter(actor=actor)
    if kind.endswith(".*"):
        events = events.filter(kind__startswith=kind[:-1])
    elif kind:
        events = events.filter(kind=kind)
    page = CappedPaginator(events, ACTIVITY_PAGE_SIZE).get_page(request.GET.get("page"))
    kinds = audit_kinds()
    families = sorted({k.split(".")[0] + ".*" for k in kinds if "." in k})
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "activity/index.html",
        {
            "page": page,
            "events": [_event_row(e) for e in page.object_list],
            "filters": [
                ActivityFilter(
                    "task_class",
                    "Task class",
                    "any",
                    list(TaskClass.objects.order_by("key").values_list("key", flat=True)),
                    task_class_key,
                ),
                ActivityFilter("actor", "Actor", "anyone", recent_actors(actor), actor),
                ActivityFilter("kind", "Kind", "any", families + kinds, kind),
            ],
            "query": query.urlencode(),
        },
    )


# The log only grows, so nothing on its page may read all of it: the count stops at this many
# events ("10000+"), and the actor filter offers the actors of this many latest events.
ACTIVITY_COUNT_CAP = 10_000
ACTIVITY_ACTORS_FROM = 2_000


class CappedPaginator(Paginator):
    """Counts at most ACTIVITY_COUNT_CAP + 1 rows; `capped` says the true count is higher."""

    capped = False

    @cached_property
    def count(self) -> int:
        counted: int = self.object_list[: ACTIVITY_COUNT_CAP + 1].count()  # type: ignore[attr-defined]  # a QuerySet here
        self.capped = counted > ACTIVITY_COUNT_CAP
        return min(counted, ACTIVITY_COUNT_CAP)


def audit_kinds() -> list[str]:
    """Every kind of audit event, in order: the kinds are an enum, so no read of the log."""
    return sorted(AuditKind)


def recent_actors(selected: str) -> list[str]:
    """The actors of the latest events, and the one selected (its filter must stay shown)."""
    # Read and deduplicated here: as a subquery, PostgreSQL would hash it and scan the log.
    actors = set(
        AuditEvent.objects.order_by("-created_at", "-id").values_list("actor", flat=True)[
            :ACTIVITY_ACTORS_FROM
        ]
    )
    if selected:
        actors.add(selected)
    return sorted(actors)


@dataclass(frozen=True)
class EventRow:
    event: AuditEvent
    before: str
    after: str
    reason: str
    has_change: bool
    other: dict[str, Any]


BRIEF_LENGTH = 80


def _brief(value: Any) -> str:
    """A before/after value on one line: text as it is, anything else as JSON, cut short."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return (
        text if len(text) <= BRIEF_LENGTH else text[: BRIEF_LENGTH - 1] + "\N{HORIZONTAL ELLIPSIS}"
    )


def _event_row(event: AuditEvent) -> EventRow:
    data = event.data if isinstance(event.data, dict) else {"data": event.data}
    shown = {"before", "after", "reason"}
    return EventRow(
        event=event,
        before=_brief(data.get("before")),
        after=_brief(data.get("after")),
        reason=str(data.get("reason") or ""),
        has_change="before" in data or "after" in data,
        other={k: v for k, v in data.items() if k not in shown},
    )
