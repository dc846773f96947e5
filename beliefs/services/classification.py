"""Classifying slots and decisions.

Only classifiers change a risk class, a monotonic flag, a scope order or which slots feed a
decision. Every change carries a non-empty reason and writes its audit event, with who, before,
after and reason, in the same transaction.

Four eyes. A change *lowers a guard* and needs a second classifier when:

1. it clears `monotonic` on a slot; or
2. it sets a slot's or a decision's own class from `irreversible` or `unclassified` (which counts
   as irreversible) to `cosmetic`, `reversible` or `policy`; or
3. after it, some slot whose effective risk is `irreversible` now would have a lower one (a
   decision lowered, or a slot unlinked from an irreversible decision); or
4. it weakens a slot's scope order, the ranking that decides which answers are escalations a
   person must type twice: clearing it, removing a scope, reversing two scopes, or adding a
   scope below an existing one (`classes.scope_order_weakening`). Setting an order where there
   was none, or adding scopes above the highest, takes effect at once.

Such a change does not take effect: it becomes a pending `RiskChangeRequest` that another
classifier approves or refuses. Its requester may withdraw it (a refusal) but never approve it.
Unlinking slots from a decision cannot be a request (a request holds one risk class or one
flag), so an unlink that trips rule 3 is refused with the way round it.

Everything else takes effect at once. A change that tightens routing for some slot (a higher
effective risk, or monotonic set) re-plans the open instances of the task class, so affected
prompts become blocking now. No other change re-plans anything: a downgrade, immediate or
approved, binds nothing retroactively; prompts already planned stay as they are, and only plans
made afterwards use the new class.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from beliefs.domain import classes
from beliefs.domain.classes import (
    CHOOSABLE_RISKS,
    Change,
    ChangeField,
    Classes,
    Impact,
    Value,
    approval_reason,
    effective_changes,
    held_risks,
    impact_of,
    plural,
    tightens,
)
from beliefs.domain.policy import RiskClass
from beliefs.domain.vocabulary import AuditKind
from beliefs.errors import Conflict, InvalidInput, field_error
from beliefs.models import (
    Decision,
    RiskChangeRequest,
    Slot,
    TaskClass,
)
from beliefs.selectors.classification import (
    classes_of,
    impact_snapshot,
    request_change,
    request_is_current,
)
from beliefs.services.audit import Actor, audit
from beliefs.services.decision_settings import (
    DECISION_SETTING_FIELDS,
    ChangeResult,
    approved_extra,
    audit_request_decided,
    change_data,
    checked_reason,
    decide_request,
    decision_request_decide,
    forbid_own_approval,
    lock_task_class,
    request_open,
    require_classifier,
)
from beliefs.services.planning import instances_replan_for_task_class

# --- the services ---------------------------------------------------------------------------


def _require_classifier(actor: Actor) -> User:
    return require_classifier(actor, "set risk classes; runtimes may only suggest one")


def _risk(value: Any) -> RiskClass:
    if isinstance(value, RiskClass):
        value = value.value
    allowed = [r.value for r in CHOOSABLE_RISKS]
    if value not in allowed:
        raise field_error("risk_class", f"must be one of {', '.join(allowed)}")
    return RiskClass(value)


def _bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise field_error(name, "must be true or false")
    return value


def _json(value: Value) -> Any:
    if isinstance(value, RiskClass):
        return value.value
    if isinstance(value, frozenset):
        return sorted(value)
    if isinstance(value, tuple):
        return list(value)
    return value


AUDIT_KINDS = {
    ("slot", "risk_class"): AuditKind.CLASSIFICATION_SLOT_RISK,
    ("slot", "monotonic"): AuditKind.CLASSIFICATION_SLOT_MONOTONIC,
    ("decision", "risk_class"): AuditKind.CLASSIFICATION_DECISION_RISK,
    ("decision", "slots"): AuditKind.CLASSIFICATION_DECISION_SLOTS,
    ("slot", "scope_order"): AuditKind.CLASSIFICATION_SLOT_SCOPE_ORDER,
}
SCOPE_ORDER_KIND = AUDIT_KINDS[("slot", "scope_order")]
APPROVED_KIND = AuditKind.CLASSIFICATION_CHANGE_APPROVED
REFUSED_KIND = AuditKind.CLASSIFICATION_CHANGE_REFUSED


def _describe(change: Change) -> str:
    value = _json(change.value)
    if change.field == "slots":
        shown = ", ".join(value) or "no slots"
        return f"decision {change.key} is now fed by {shown}"
    if change.field == "monotonic":
        return f"slot {change.key} is {'now' if value else 'no longer'} monotonic"
    if change.field == "scope_order":
        return f"the scope order of {change.key} is now {', '.join(value) if value else 'none'}"
    return f"{change.target} {change.key} is now {value}"


def _write(change: Change, target: Slot | Decision, task_class: TaskClass) -> None:
    if change.field == "slots":
        assert isinstance(target, Decision) and isinstance(change.value, frozenset)
        target.slots.set(task_class.slots.filter(key__in=change.value))
    elif change.field == "monotonic":
        assert isinstance(target, Slot)
        target.monotonic = bool(change.value)
        target.save(update_fields=["monotonic"])
    elif change.field == "scope_order":
        assert isinstance(target, Slot)
        target.scope_order = _json(change.value)
        target.save(update_fields=["scope_order"])
    else:
        target.risk_class = _json(change.value)
        target.save(update_fields=["risk_class"])


def _apply(
    *,
    task_class: TaskClass,
    classes: Classes,
    change: Change,
    target: Slot | Decision,
    reason: str,
    actor: Actor,
    extra: dict[str, Any] | None = None,
) -> ChangeResult:
    """Write a change that may take effect now, audit it, re-plan if it tightens routing."""
    after = classes.apply(change)
    _write(change, target, task_class)
    replanned = 0
    if tightens(classes, after):
        replanned = instances_replan_for_task_class(task_class=task_class, actor=actor)
    changes = tuple(effective_changes(classes, after))
    audit(
        AUDIT_KINDS[(change.target, change.field)],
        actor=actor,
        task_class=task_class,
        subject=change.key,
        data={
            **change_data(
                change.target,
                change.field,
                _json(classes.current(change)),
                _json(change.value),
                reason,
            ),
            "effective": [c.__dict__ for c in changes],
            "replanned": replanned,
            **(extra or {}),
        },
    )
    message = f"Saved: {_describe(change)}."
    for held in held_risks(classes, after, [change]):
        message += f" {held}."
    if replanned:
        message += f" Re-planned {plural(replanned, 'open instance')}."
    return ChangeResult("applied", message, replanned=replanned, effective=changes)


def _change(
    *,
    task_class: TaskClass,
    change: Change,
    target: Slot | Decision,
    reason: str,
    actor: Actor,
) -> ChangeResult:
    classes = classes_of(task_class)
    if classes.current(change) == change.value:
        return ChangeResult("unchanged", f"Nothing to change: {_describe(change)} already.")
    why = approval_reason(classes, change)
    if why is None:
        return _apply(
            task_class=task_class,
            classes=classes,
            change=change,
            target=target,
            reason=reason,
            actor=actor,
        )
    if change.field == "slots":
        raise InvalidInput(
            f"Not saved: {why}, which needs a second classifier, and a change of linked slots "
            "cannot wait for one. Raise the slot's own class to irreversible first (that takes "
            "effect at once), unlink it, then request the lower class for the slot.",
            code="needs_second_classifier",
            fields={"slots": [f"{why}: raise the slot's own class first"]},
        )
    before, after = _json(classes.current(change)), _json(change.value)
    if change.field == "scope_order":
        before, after = before or [], after or []  # no order is [] here: NULL is not JSON
    return request_open(
        task_class=task_class,
        target=target,
        field=change.field,
        before=before,
        after=after,
        reason=reason,
        why=why,
        requested_by=_require_classifier(actor),
        actor=actor,
    )


def _set(
    target: Slot | Decision,
    field: ChangeField,
    value: Value,
    reason: str,
    actor: Actor,
) -> ChangeResult:
    """One field of one slot or decision, with its task class locked first."""
    task_class = lock_task_class(target.task_class)
    locked: Slot | Decision
    if isinstance(target, Slot):
        locked = Slot.objects.get(pk=target.pk)
        change = Change("slot", locked.key, field, value)
    else:
        locked = Decision.objects.get(pk=target.pk)
        change = Change("decision", locked.key, field, value)
    return _change(task_class=task_class, change=change, target=locked, reason=reason, actor=actor)


@transaction.atomic
def slot_set_risk(*, slot: Slot, risk_class: Any, reason: Any, actor: Actor) -> ChangeResult:
    """Set a slot's own risk class; out of irreversible/unclassified it waits for approval."""
    _require_classifier(actor)
    reason, risk = checked_reason(reason), _risk(risk_class)
    return _set(slot, "risk_class", risk, reason, actor)


@transaction.atomic
def slot_set_monotonic(*, slot: Slot, monotonic: Any, reason: Any, actor: Actor) -> ChangeResult:
    """Mark a slot monotonic (at once, re-plans) or clear it (waits for approval)."""
    _require_classifier(actor)
    reason, flag = checked_reason(reason), _bool("monotonic", monotonic)
    return _set(slot, "monotonic", flag, reason, actor)


def parse_scope_order(value: Any) -> list[str] | None:
    """ "read, write, admin" or ["read", "write", "admin"] -> a list, lowest first; "" -> None."""
    try:
        return classes.parse_scope_order(value)
    except ValueError as exc:
        raise field_error("scope_order", str(exc)) from None


@transaction.atomic
def slot_set_scope_order(
    *, slot: Slot, scope_order: Any, reason: Any, actor: Actor
) -> ChangeResult:
    """Set the ranking of a monotonic slot's values (lowest first). No routing depends on it:
    it decides when an answer is an escalation that must be typed twice, so a change that
    weakens it waits for a second classifier (rule 4)."""
    _require_classifier(actor)
    reason, order = checked_reason(reason), parse_scope_order(scope_order)
    return _set(slot, "scope_order", tuple(order) if order else None, reason, actor)


@transaction.atomic
def decision_set_risk(
    *, decision: Decision, risk_class: Any, reason: Any, actor: Actor
) -> ChangeResult:
    """Set a decision's risk class; the slots it feeds inherit it."""
    _require_classifier(actor)
    reason, risk = checked_reason(reason), _risk(risk_class)
    return _set(decision, "risk_class", risk, reason, actor)


@transaction.atomic
def decision_set_slots(
    *, decision: Decision, slot_keys: Any, reason: Any, actor: Actor
) -> ChangeResult:
    """Say which slots feed a decision. Linking tightens (at once, re-plans); an unlink that
    drops a slot out of irreversible is refused (see the module docstring)."""
    _require_classifier(actor)
    reason = checked_reason(reason)
    if not isinstance(slot_keys, list | tuple | set | frozenset) or not all(
        isinstance(k, str) for k in slot_keys
    ):
        raise field_error("slots", "must be a list of slot keys")
    known = set(
        Slot.objects.filter(task_class_id=decision.task_class_id).values_list("key", flat=True)
    )
    unknown = sorted(set(slot_keys) - known)
    if unknown:
        raise field_error("slots", f"unknown slot {unknown[0]!r}")
    return _set(decision, "slots", frozenset(slot_keys), reason, actor)


def _lock_request(change_request: RiskChangeRequest) -> tuple[TaskClass, RiskChangeRequest]:
    task_class = lock_task_class(change_request.task_class)
    locked = (
        RiskChangeRequest.objects.select_for_update(of=("self",))
        .select_related("slot", "decision", "requested_by", "decided_by")
        .get(pk=change_request.pk)
    )
    if locked.state != RiskChangeRequest.State.PENDING:
        who = locked.decided_by.get_username() if locked.decided_by else "someone"
        raise Conflict(
            f"This request was already {locked.state} by {who}.",
            code=f"request_{locked.state}",
        )
    return task_class, locked


def _decide(
    change_request: RiskChangeRequest, reason: Any, actor: Actor, *, approve: bool
) -> ChangeResult:
    """How an approval or a refusal goes: the classifier deciding, the reason checked, then the
    task class and the still pending request locked; a decision's own setting is decided in
    its module, a risk change here."""
    user = _require_classifier(actor)
    checked = checked_reason(reason)
    task_class, locked = _lock_request(change_request)
    if locked.field in DECISION_SETTING_FIELDS:  # approvals, signature (24, 23)
        return decision_request_decide(locked, user, checked, actor, task_class, approve=approve)
    decide = _approve if approve else _refuse
    return decide(locked, user, checked, actor, task_class)


@transaction.atomic
def risk_change_request_approve(
    *, change_request: RiskChangeRequest, reason: Any, actor: Actor
) -> ChangeResult:
    """A second classifier lets a downgrade take effect. It re-plans nothing."""
    return _decide(change_request, reason, actor, approve=True)


@transaction.atomic
def risk_change_request_refuse(
    *, change_request: RiskChangeRequest, reason: Any, actor: Actor
) -> ChangeResult:
    """Refuse a pending request (its requester may refuse it too: a withdrawal)."""
    return _decide(change_request, reason, actor, approve=False)


def _approve(
    change_request: RiskChangeRequest, user: User, reason: str, actor: Actor, task_class: TaskClass
) -> ChangeResult:
    forbid_own_approval(change_request, user)
    classes = classes_of(task_class)
    if not request_is_current(change_request, classes):
        raise Conflict(
            "The target changed since this was requested, so approving it would apply more "
            "than was asked for. Refuse it; its requester can ask again.",
            code="request_out_of_date",
        )
    change = request_change(change_request)
    target = change_request.slot or change_request.decision
    assert target is not None  # a request names a slot or a decision
    decide_request(change_request, RiskChangeRequest.State.APPROVED, user, reason)
    audit_request_decided(APPROVED_KIND, change_request, reason, actor, task_class)
    # A downgrade cannot tighten anything, so `_apply` re-plans nothing here.
    result = _apply(
        task_class=task_class,
        classes=classes,
        change=change,
        target=target,
        reason=change_request.reason,
        actor=actor,
        extra=approved_extra(change_request, user),
    )
    requester = change_request.requested_by.get_username()
    return replace(
        result,
        message=f"Approved {requester}'s request: {_describe(change)}. "
        + "".join(f"{h}. " for h in held_risks(classes, classes.apply(change), [change]))
        + "Prompts already planned stay as they are.",
        request=change_request,
    )


def _refuse(
    change_request: RiskChangeRequest, user: User, reason: str, actor: Actor, task_class: TaskClass
) -> ChangeResult:
    change = request_change(change_request)
    withdrawn = change_request.requested_by_id == user.pk
    decide_request(change_request, RiskChangeRequest.State.REFUSED, user, reason)
    audit_request_decided(
        REFUSED_KIND, change_request, reason, actor, task_class, withdrawn=withdrawn
    )
    verb = "Withdrew" if withdrawn else "Refused"
    return ChangeResult(
        "unchanged",
        f"{verb} the request; {change.target} {change.key} stays as it was.",
        request=change_request,
    )


# --- a decision's own settings (approvals, signature) are decided in their own module ---


def classification_impact(*, task_class: TaskClass, changes: Iterable[Change]) -> Impact:
    """The impact preview of changes: reads, never writes (five queries)."""
    return impact_of(impact_snapshot(task_class), changes)


_KEEP = object()


@transaction.atomic
def classification_save(
    *,
    target: Slot | Decision,
    changes: Iterable[Change],
    reason: Any,
    actor: Actor,
    scope_order: Any = _KEEP,
) -> list[ChangeResult]:
    """Everything one save of a slot's or a decision's row asks for, all or nothing. A scope
    order is passed only when it changed, so an unchanged one writes no audit event."""
    results = []
    for change in changes:
        results.append(_save_one(target, change, reason, actor))
    if scope_order is not _KEEP:
        assert isinstance(target, Slot)  # only slots are ranked
        results.append(
            slot_set_scope_order(slot=target, scope_order=scope_order, reason=reason, actor=actor)
        )
    return results


def _save_one(target: Slot | Decision, change: Change, reason: Any, actor: Actor) -> ChangeResult:
    if isinstance(target, Slot):
        if change.field == "risk_class":
            return slot_set_risk(slot=target, risk_class=change.value, reason=reason, actor=actor)
        return slot_set_monotonic(slot=target, monotonic=change.value, reason=reason, actor=actor)
    if change.field == "risk_class":
        return decision_set_risk(
            decision=target, risk_class=change.value, reason=reason, actor=actor
        )
    assert isinstance(change.value, frozenset)
    return decision_set_slots(
        decision=target, slot_keys=sorted(change.value), reason=reason, actor=actor
    )
