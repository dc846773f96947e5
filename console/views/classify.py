"""The classifier console: task classes, slot and decision classes, four-eyes
approvals and the routing matrix (the audit log is `console.views.activity`).

Views parse a form (`console.forms.classify`), call the services in
`beliefs.services.classification` and render what `console.presenters.classification` puts
together. An htmx request gets the fragment it swaps (`classify/_classification.html`,
`classify/_impact.html`); a plain form post gets a redirect or the whole page, so everything
works without JavaScript.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from django import forms
from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from beliefs.domain import policy
from beliefs.domain.classes import Change, impact_of
from beliefs.domain.vocabulary import MAX_TEXT_LENGTH
from beliefs.errors import ServiceError
from beliefs.models import Decision, RiskChangeRequest, Slot, TaskClass
from beliefs.roles import is_classifier
from beliefs.selectors import unclassified
from beliefs.selectors.classification import awaiting_approval_by, impact_snapshot
from beliefs.services.audit import Actor
from beliefs.services.classification import (
    ChangeResult,
    classification_save,
    risk_change_request_approve,
    risk_change_request_refuse,
)
from beliefs.services.decision_settings import (
    decision_set_approvals,
    decision_set_requires_signature,
)
from console.forms.classify import DecisionForm, RequestDecisionForm, SlotForm
from console.http import AuthedHttpRequest, role_required
from console.presenters.classification import Bound, class_context

QUEUE_LIMIT = 100


# Signed-in people without the classifier permission get 403.
classifier_required = role_required(
    is_classifier, "Only classifiers may use the classifier console."
)


# --- the task class page ----------------------------------------------------------------------


def _task_class(key: str) -> TaskClass:
    task_class = TaskClass.objects.filter(key=key).first()
    if task_class is None:
        raise Http404("No such task class.")
    return task_class


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
    context = class_context(request, task_class, bound, focus)
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


def _announce(request: AuthedHttpRequest, results: Sequence[ChangeResult]) -> None:
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
    """Every task class with its counts; first the changes that wait for this classifier's
    approval, then the queue of unclassified slots and decisions."""
    rows = list(unclassified.task_classes_counted())
    queue_list = unclassified.unclassified_slots(QUEUE_LIMIT + 1)
    decision_list = unclassified.unclassified_decisions(QUEUE_LIMIT + 1)
    mine = awaiting_approval_by(request.user.pk, QUEUE_LIMIT + 1)
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
            "awaiting_me": mine[:QUEUE_LIMIT],
            "awaiting_me_more": len(mine) > QUEUE_LIMIT,
        },
    )


@dataclass(frozen=True)
class MatrixGroup:
    risk: str
    monotonic: bool
    cells: list[policy.MatrixCell]


@dataclass(frozen=True)
class MatrixFilter:
    """One of the matrix's filters: a query parameter, its choices (value, words)."""

    name: str
    label: str
    choices: list[tuple[str, str]]
    selected: str

    @property
    def dom_id(self) -> str:
        return f"matrix-{self.name}"


NO_BELIEF = "none"


def _matrix_filters(request: AuthedHttpRequest) -> list[MatrixFilter]:
    """The matrix's filters as asked (`?risk=&route=&source=&carried=`); a value that is not
    one of a filter's choices filters nothing."""
    choices = {
        "risk": ("Effective risk", [(r.value, r.value) for r in policy.RISK_ORDER]),
        "route": ("Route", [(r.value, r.value) for r in policy.Route]),
        "source": (
            "Source",
            [(NO_BELIEF, "no belief"), *((s.value, s.value) for s in policy.Source)],
        ),
        "carried": ("Current / carried", [("current", "current"), ("carried", "carried")]),
    }
    filters = []
    for name, (label, options) in choices.items():
        asked = request.GET.get(name, "")
        selected = asked if asked in {value for value, _ in options} else ""
        filters.append(MatrixFilter(name, label, options, selected))
    return filters


def _matches(cell: policy.MatrixCell, chosen: dict[str, str]) -> bool:
    source = cell.source.value if cell.source is not None else NO_BELIEF
    carried = "" if cell.source is None else "carried" if cell.carried else "current"
    facts = {
        "risk": cell.risk.value,
        "route": cell.routing.route.value,
        "source": source,
        "carried": carried,
    }
    if cell.any_belief:  # a row for every belief: any source, current or carried
        return all(
            (name == "source" and value != NO_BELIEF)
            or name == "carried"
            or (name not in ("source", "carried") and facts[name] == value)
            for name, value in chosen.items()
            if value
        )
    return all(facts[name] == value for name, value in chosen.items() if value)


@require_GET
@classifier_required
def matrix(request: AuthedHttpRequest) -> HttpResponse:
    """The routing table, rendered from `policy.routing_matrix()` itself, filtered as asked."""
    filters = _matrix_filters(request)
    chosen = {f.name: f.selected for f in filters}
    every = policy.routing_matrix()
    cells = [cell for cell in every if _matches(cell, chosen)]
    groups: list[MatrixGroup] = []
    for cell in cells:
        if not groups or (groups[-1].risk, groups[-1].monotonic) != (
            cell.risk.value,
            cell.monotonic,
        ):
            groups.append(MatrixGroup(cell.risk.value, cell.monotonic, []))
        groups[-1].cells.append(cell)
    return render(
        request,
        "classify/matrix.html",
        {
            "groups": groups,
            "filters": filters,
            "filtered": any(chosen.values()),
            "shown": len(cells),
            "total": len(every),
        },
    )


# --- a decision's passkey signature requirement ---------------------------------------------


class FlagSettingForm(forms.Form):
    """An on/off setting and the reason for changing it."""

    flag = forms.BooleanField(required=False)
    reason = forms.CharField(max_length=MAX_TEXT_LENGTH, required=False)


def flag_save(
    request: AuthedHttpRequest,
    task_class: TaskClass,
    focus: str,
    name: str,
    save: Callable[[bool, str], ChangeResult],
) -> HttpResponse:
    """Save an on/off setting posted as checkbox `name` with a reason, through `save` (a service
    that applies it at once or files a four-eyes request), and go back to `focus`."""
    form = FlagSettingForm({"flag": request.POST.get(name), "reason": request.POST.get("reason")})
    form.is_valid()  # a checkbox and a text: nothing to refuse before the service
    data = form.cleaned_data
    try:
        result = save(bool(data.get("flag")), data.get("reason", ""))
    except ServiceError as exc:
        words = [p for problems in exc.fields.values() for p in problems]
        messages.error(request, f"Not saved: {words[0] if words else exc.detail}")
        return _after_change(request, task_class, focus)
    _announce(request, [result])
    return _after_change(request, task_class, focus)


@require_POST
@classifier_required
def decision_signature_save(request: AuthedHttpRequest, key: str, decision_id: int) -> HttpResponse:
    """Turn a decision's passkey signature requirement on (at once) or off (four eyes)."""
    task_class = _task_class(key)
    decision = _decision(task_class, decision_id)
    return flag_save(
        request,
        task_class,
        f"decision-{decision.pk}",
        "requires_signature",
        lambda on, reason: decision_set_requires_signature(
            decision=decision, requires_signature=on, reason=reason, actor=Actor(user=request.user)
        ),
    )


# --- end passkey signature requirement ---


# --- M-of-N approval: a decision's approvals setting ------------------------------------------


@require_POST
@classifier_required
def decision_approvals_save(request: AuthedHttpRequest, key: str, decision_id: int) -> HttpResponse:
    """How many approvals the decision's actions need and from which group; a plain form post,
    answered with the page and its message (a refusal says what was wrong)."""
    task_class = _task_class(key)
    decision = _decision(task_class, decision_id)
    try:
        results = decision_set_approvals(
            decision=decision,
            approvals_required=request.POST.get("approvals_required", ""),
            approvers=request.POST.get("approvers", ""),
            reason=request.POST.get("reason", ""),
            actor=Actor(user=request.user),
        )
    except ServiceError as exc:
        problems = [p for ps in exc.fields.values() for p in ps]
        messages.error(request, f"Not saved: {problems[0] if problems else exc.detail}.")
        return redirect(reverse("classify-task-class", args=[key]) + f"#approvals-{decision.pk}")
    _announce(request, results)
    return redirect(reverse("classify-task-class", args=[key]) + f"#approvals-{decision.pk}")
