"""A decision's own guards, set by classifiers: how many approvals its actions need
(`approvals_required`, at least 1) and from which group (`approvers`, a Django group; none: the
principal alone, as before); and whether the person must sign them with a passkey
(`requires_signature`).

Like a risk class, every change carries a reason and writes its audit event (before and after).
A change that tightens (more approvals, a group where there was none, a signature required)
takes effect at once and re-plans the open instances of the task class (their next settle asks
for it). One that may loosen (fewer approvals, another or no group, no signature) lowers a
guard: it follows the four-eyes rule of risk downgrades, a pending `RiskChangeRequest` that
another classifier approves or refuses (`risk_change_request_approve` hands such requests
here). Nothing is lowered retroactively for an instance already ready (or already waiting for
its signature); fewer approvals, once approved, re-plan the instances waiting for approvers,
so that one already holding enough is ready at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from django.contrib.auth.models import Group, User
from django.db import transaction
from django.utils import timezone

from beliefs.domain.classes import EffectiveChange
from beliefs.domain.vocabulary import MAX_TEXT_LENGTH, AuditKind
from beliefs.errors import Conflict, PermissionDenied, field_error
from beliefs.models import Decision, InstanceStatus, RiskChangeRequest, Slot, TaskClass
from beliefs.roles import is_classifier
from beliefs.services.audit import SYSTEM, Actor, audit
from beliefs.services.planning import instances_replan_for_task_class

REQUESTED_KIND = AuditKind.CLASSIFICATION_CHANGE_REQUESTED


@dataclass(frozen=True)
class ChangeResult:
    """What a classification service did: applied, requested (waiting for a second
    classifier) or unchanged, said for the classifier; with the request, how many open
    instances re-planned, and for a risk change what it did to effective risks."""

    outcome: Literal["applied", "requested", "unchanged"]
    message: str
    request: RiskChangeRequest | None = None
    replanned: int = 0
    effective: tuple[EffectiveChange, ...] = field(default_factory=tuple)


def require_classifier(
    actor: Actor, what: str = "set a decision's approvals and signature"
) -> User:
    """Only a signed-in classifier classifies; a runtime key never can."""
    if actor.user is None or not is_classifier(actor.user):
        raise PermissionDenied(f"Only classifiers {what}.", code="not_a_classifier")
    return actor.user


def checked_reason(value: Any, name: str = "reason") -> str:
    if not isinstance(value, str) or not value.strip():
        raise field_error(name, "give a reason: it is kept in the audit log with the change")
    if len(value) > MAX_TEXT_LENGTH:
        raise field_error(name, f"must be at most {MAX_TEXT_LENGTH} characters")
    return value.strip()


def decide_request(change_request: RiskChangeRequest, state: str, user: User, reason: str) -> None:
    """Record a second classifier's decision (or a withdrawal) on a pending request."""
    change_request.state = state
    change_request.decided_by = user
    change_request.decision_reason = reason
    change_request.decided_at = timezone.now()
    change_request.save(update_fields=["state", "decided_by", "decision_reason", "decided_at"])


def lock_task_class(task_class: TaskClass) -> TaskClass:
    """Classification changes of one task class queue behind each other."""
    return TaskClass.objects.select_for_update(no_key=True).get(pk=task_class.pk)


# --- the four-eyes requests: risk changes (services/classification.py) and the settings here
# open, audit and decide them with these.


def change_data(target: str, field: str, before: Any, after: Any, reason: str) -> dict[str, Any]:
    """What every audit event of a classification change records of it: which field of which
    kind of target, its value before and after, and the reason given."""
    return {"target": target, "field": field, "before": before, "after": after, "reason": reason}


def request_open(
    *,
    task_class: TaskClass,
    target: Slot | Decision,
    field: str,
    before: Any,
    after: Any,
    reason: str,
    why: str,
    requested_by: User,
    actor: Actor,
) -> ChangeResult:
    """A change that lowers a guard, for `why`: the pending request a second classifier
    decides (one per field of a target at a time), and its audit event. No value (no group) is
    stored as "", the columns taking JSON, not NULL; the audit event keeps None."""
    kind = "slot" if isinstance(target, Slot) else "decision"
    if RiskChangeRequest.objects.filter(
        state=RiskChangeRequest.State.PENDING, field=field, **{kind: target}
    ).exists():
        raise Conflict(
            f"A change of {field.replace('_', ' ')} for {kind} {target.key} is already "
            "waiting for approval; approve or refuse it first.",
            code="change_already_pending",
        )
    change_request = RiskChangeRequest.objects.create(
        task_class=task_class,
        **{kind: target},
        field=field,
        before="" if before is None else before,
        after="" if after is None else after,
        reason=reason,
        requested_by=requested_by,
    )
    _audit_request(
        REQUESTED_KIND, change_request, before, after, reason, actor, task_class, why=why
    )
    return ChangeResult(
        "requested",
        f"Not applied yet: {why}, so a second classifier must approve it. "
        "The request is listed under pending approvals.",
        request=change_request,
    )


def forbid_own_approval(change_request: RiskChangeRequest, user: User) -> None:
    """Four eyes: a requester may withdraw a request, never approve it."""
    if change_request.requested_by_id == user.pk:
        raise PermissionDenied(
            "You asked for this change, so you cannot approve it: another classifier must "
            "(four eyes). You may withdraw it instead.",
            code="own_request",
        )


def _audit_request(
    kind: AuditKind,
    change_request: RiskChangeRequest,
    before: Any,
    after: Any,
    reason: str,
    actor: Actor,
    task_class: TaskClass,
    **extra: Any,
) -> None:
    """An audit event about a request: the request, the change it asks for (its target, field,
    before and after) with `reason`, and `extra`."""
    target = change_request.slot or change_request.decision
    assert target is not None  # a request names a slot or a decision
    audit(
        kind,
        actor=actor,
        task_class=task_class,
        subject=target.key,
        data={
            "request": change_request.pk,
            **change_data(
                "slot" if change_request.slot is not None else "decision",
                change_request.field,
                before,
                after,
                reason,
            ),
            **extra,
        },
    )


def audit_request_decided(
    kind: AuditKind,
    change_request: RiskChangeRequest,
    reason: str,
    actor: Actor,
    task_class: TaskClass,
    **extra: Any,
) -> None:
    """The audit event of a second classifier's approval or refusal of a request (or its
    requester's withdrawal)."""
    _audit_request(
        kind,
        change_request,
        change_request.before,
        change_request.after,
        reason,
        actor,
        task_class,
        requested_by=change_request.requested_by.get_username(),
        request_reason=change_request.reason,
        **extra,
    )


def approved_extra(change_request: RiskChangeRequest, user: User) -> dict[str, Any]:
    """What the audit event of a change applied on approval adds: the request, its requester
    and the classifier who approved it."""
    return {
        "request": change_request.pk,
        "requested_by": change_request.requested_by.get_username(),
        "approved_by": user.get_username(),
    }


# --- a decision's own settings ------------------------------------------------------------


Field = RiskChangeRequest.Field
# The settings decided here, and the audit event each change writes.
KINDS = {
    Field.APPROVALS_REQUIRED: AuditKind.CLASSIFICATION_DECISION_APPROVALS,
    Field.APPROVERS: AuditKind.CLASSIFICATION_DECISION_APPROVALS,
    Field.REQUIRES_SIGNATURE: AuditKind.CLASSIFICATION_DECISION_REQUIRES_SIGNATURE,
    Field.PERSON_CONFIRMS: AuditKind.CLASSIFICATION_DECISION_PERSON_CONFIRMS,
    Field.FUTURE: AuditKind.CLASSIFICATION_SLOT_FUTURE,
}
# The on/off guards: turning one on takes effect at once, turning it off waits.
FLAGS = frozenset({Field.REQUIRES_SIGNATURE, Field.PERSON_CONFIRMS, Field.FUTURE})
DECISION_SETTING_FIELDS = frozenset(KINDS)
MAX_APPROVALS = 20
# Why a change of each waits for a second classifier, and what an approved one leaves alone.
_WHY = {
    Field.APPROVALS_REQUIRED: "fewer approvals lower a guard",
    Field.APPROVERS: "another or no approvers group may lower a guard",
    Field.REQUIRES_SIGNATURE: "it stops requiring a passkey signature",
    Field.PERSON_CONFIRMS: "it lets a runtime's report of the person's answer bind by itself",
    Field.FUTURE: "it lets a date before today bind",
}
_LEFT_ALONE = {
    Field.APPROVALS_REQUIRED: "Instances already ready stay as they are; those waiting for "
    "approvers that now have enough are ready now.",
    Field.APPROVERS: "Instances already ready stay as they are.",
    Field.REQUIRES_SIGNATURE: "Instances already waiting for a signature still need it.",
    Field.PERSON_CONFIRMS: "What a person was already asked to confirm stays asked.",
    Field.FUTURE: "What a person was already asked stays asked.",
}
Target = Slot | Decision


def _count(value: Any) -> int:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_APPROVALS:
        raise field_error("approvals_required", f"a whole number from 1 to {MAX_APPROVALS}")
    return value


def _group(value: Any) -> Group | None:
    if value in (None, ""):
        return None
    group = Group.objects.filter(name=value).first() if isinstance(value, str) else None
    if group is None:
        raise field_error("approvers", "no such group")
    return group


def _current(decision: Target, field: str) -> Any:
    if field in FLAGS:
        return bool(getattr(decision, field))
    assert isinstance(decision, Decision)
    if field == Field.REQUIRES_SIGNATURE:
        return decision.requires_signature
    if field == Field.APPROVALS_REQUIRED:
        return decision.approvals_required
    return decision.approvers.name if decision.approvers is not None else None


def _write(decision: Target, field: str, value: Any) -> None:
    if field in FLAGS:
        setattr(decision, field, bool(value))
        decision.save(update_fields=[field])
    elif not isinstance(decision, Decision):
        raise AssertionError(f"{field} is a decision's setting")
    elif field == Field.APPROVALS_REQUIRED:
        decision.approvals_required = value
        decision.save(update_fields=["approvals_required"])
    else:
        decision.approvers = _group(value)
        decision.save(update_fields=["approvers"])


def _describe(decision: Target, field: str, value: Any) -> str:
    if field == Field.REQUIRES_SIGNATURE:
        verb = "now requires" if value else "no longer requires"
        return f"decision {decision.key} {verb} a passkey signature"
    if field == Field.PERSON_CONFIRMS:
        verb = "now needs" if value else "no longer needs"
        return f"decision {decision.key} {verb} the person's own confirmation in the console"
    if field == Field.FUTURE:
        verb = "now takes only" if value else "no longer takes only"
        return f"slot {decision.key} {verb} dates from today on"
    if field == Field.APPROVALS_REQUIRED:
        return f"decision {decision.key} now needs {value} approval{'' if value == 1 else 's'}"
    if value is None:
        return f"decision {decision.key} no longer needs an approvers group"
    return f"decision {decision.key} is now approved by the group {value}"


def _apply(
    task_class: TaskClass,
    decision: Target,
    field: str,
    after: Any,
    reason: str,
    actor: Actor,
    *,
    tightens: bool,
    extra: dict[str, Any] | None = None,
) -> ChangeResult:
    before = _current(decision, field)
    _write(decision, field, after)
    if tightens:
        replanned = instances_replan_for_task_class(task_class=task_class, actor=actor)
    elif field == Field.APPROVALS_REQUIRED:
        # Fewer approvals asked: an instance waiting for its approvers may now have enough.
        # It settles here, as the approval that completes it would have settled it (ready,
        # receipt, events), not at the runtime's next plan. Planned as the system: the
        # classifier's act is no approval of any instance.
        replanned = instances_replan_for_task_class(
            task_class=task_class, actor=SYSTEM, statuses=[InstanceStatus.AWAITING_APPROVAL]
        )
    else:
        replanned = 0
    audit(
        KINDS[Field(field)],
        actor=actor,
        task_class=task_class,
        subject=decision.key,
        data={
            **change_data(
                "slot" if isinstance(decision, Slot) else "decision", field, before, after, reason
            ),
            "replanned": replanned,
            **(extra or {}),
        },
    )
    return ChangeResult(
        "applied", f"Saved: {_describe(decision, field, after)}.", replanned=replanned
    )


def _request(
    task_class: TaskClass, decision: Target, field: str, after: Any, reason: str, actor: Actor
) -> ChangeResult:
    return request_open(
        task_class=task_class,
        target=decision,
        field=field,
        before=_current(decision, field),
        after=after,
        reason=reason,
        why=_WHY[Field(field)],
        requested_by=require_classifier(actor),
        actor=actor,
    )


@transaction.atomic
def decision_set_approvals(
    *, decision: Decision, approvals_required: Any, approvers: Any, reason: Any, actor: Actor
) -> list[ChangeResult]:
    """Set how many approvals a decision's actions need and from which group (see the module
    docstring for what takes effect at once and what waits for a second classifier)."""
    require_classifier(actor)
    checked, count, group = checked_reason(reason), _count(approvals_required), _group(approvers)
    task_class = lock_task_class(decision.task_class)
    locked = Decision.objects.select_related("approvers").get(pk=decision.pk)
    if count > 1 and group is None:
        raise field_error("approvers", "more than one approval needs a group to come from")
    results = []
    name = group.name if group is not None else None
    if name != _current(locked, Field.APPROVERS):
        if locked.approvers_id is None:
            results.append(
                _apply(task_class, locked, Field.APPROVERS, name, checked, actor, tightens=True)
            )
        else:
            results.append(_request(task_class, locked, Field.APPROVERS, name, checked, actor))
    if count != locked.approvals_required:
        if count > locked.approvals_required or locked.approvers_id is None:
            tightens = count > locked.approvals_required
            results.append(
                _apply(
                    task_class,
                    locked,
                    Field.APPROVALS_REQUIRED,
                    count,
                    checked,
                    actor,
                    tightens=tightens,
                )
            )
        else:
            results.append(
                _request(task_class, locked, Field.APPROVALS_REQUIRED, count, checked, actor)
            )
    if not results:
        return [ChangeResult("unchanged", "Nothing to change: the approvals are set so already.")]
    return results


def _stored(field: str, value: Any) -> Any:
    """A request's `before`/`after` as the setting takes it (no group is stored as "")."""
    if field in FLAGS:
        return bool(value)
    return value if value != "" else None


def request_is_current(change_request: RiskChangeRequest) -> bool:
    """Is the decision (or slot) still as it was when the change was requested?"""
    target = change_request.decision or change_request.slot
    assert target is not None
    before = _stored(change_request.field, change_request.before)
    return bool(_current(target, change_request.field) == before)


def decision_request_decide(
    change_request: RiskChangeRequest,
    user: User,
    reason: str,
    actor: Actor,
    task_class: TaskClass,
    *,
    approve: bool,
) -> ChangeResult:
    """A second classifier's approval (or a refusal, or the requester's withdrawal) of a
    lowered decision setting; the caller holds the task class and the pending request."""
    decision: Target
    if change_request.slot_id is not None:  # a slot's own guard (future dates)
        decision = Slot.objects.get(pk=change_request.slot_id)
    else:
        assert change_request.decision_id is not None  # a request names a slot or a decision
        decision = Decision.objects.select_related("approvers").get(pk=change_request.decision_id)
    requester = change_request.requested_by.get_username()
    own = change_request.requested_by_id == user.pk
    if approve:
        forbid_own_approval(change_request, user)
        if not request_is_current(change_request):
            raise Conflict(
                "The decision changed since this was requested, so approving it would apply "
                "more than was asked for. Refuse it; its requester can ask again.",
                code="request_out_of_date",
            )
    state = RiskChangeRequest.State.APPROVED if approve else RiskChangeRequest.State.REFUSED
    decide_request(change_request, state, user, reason)
    audit_request_decided(
        AuditKind.CLASSIFICATION_CHANGE_APPROVED
        if approve
        else AuditKind.CLASSIFICATION_CHANGE_REFUSED,
        change_request,
        reason,
        actor,
        task_class,
        **({} if approve else {"withdrawn": own}),
    )
    if not approve:
        verb = "Withdrew" if own else "Refused"
        return ChangeResult(
            "unchanged",
            f"{verb} the request; {'slot' if isinstance(decision, Slot) else 'decision'} "
            f"{decision.key} stays as it was.",
            request=change_request,
        )
    after = _stored(change_request.field, change_request.after)
    applied = _apply(
        task_class,
        decision,
        change_request.field,
        after,
        change_request.reason,
        actor,
        tightens=False,
        extra=approved_extra(change_request, user),
    )
    return ChangeResult(
        "applied",
        f"Approved {requester}'s request: "
        f"{_describe(decision, change_request.field, after)}. "
        + _LEFT_ALONE[Field(change_request.field)],
        request=change_request,
        replanned=applied.replanned,
    )


@transaction.atomic
def decision_set_requires_signature(
    *, decision: Decision, requires_signature: Any, reason: Any, actor: Actor
) -> ChangeResult:
    """Turn a decision's signature requirement on (at once: open instances re-plan) or off
    (a guard lowered: it waits for a second classifier, as a risk downgrade does)."""
    require_classifier(actor)
    checked = checked_reason(reason)
    if not isinstance(requires_signature, bool):
        raise field_error("requires_signature", "must be true or false")
    task_class = lock_task_class(decision.task_class)
    locked = Decision.objects.get(pk=decision.pk)
    field = Field.REQUIRES_SIGNATURE
    if locked.requires_signature == requires_signature:
        described = _describe(locked, field, requires_signature)
        return ChangeResult("unchanged", f"Nothing to change: {described} already.")
    if requires_signature:
        return _apply(task_class, locked, field, True, checked, actor, tightens=True)
    return _request(task_class, locked, field, False, checked, actor)


def _set_flag(target: Target, field: str, value: Any, reason: Any, actor: Actor) -> ChangeResult:
    """Turn one of a target's on/off guards on (at once: open instances re-plan) or off (a
    guard lowered: it waits for a second classifier, as a risk downgrade does)."""
    require_classifier(actor)
    checked = checked_reason(reason)
    if not isinstance(value, bool):
        raise field_error(field, "must be true or false")
    task_class = lock_task_class(target.task_class)
    locked: Target = (
        Slot.objects.get(pk=target.pk)
        if isinstance(target, Slot)
        else Decision.objects.get(pk=target.pk)
    )
    if bool(getattr(locked, field)) == value:
        return ChangeResult("unchanged", f"Nothing to change: {_describe(locked, field, value)}.")
    if value:
        return _apply(task_class, locked, field, True, checked, actor, tightens=True)
    return _request(task_class, locked, field, False, checked, actor)


@transaction.atomic
def decision_set_person_confirms(
    *, decision: Decision, person_confirms: Any, reason: Any, actor: Actor
) -> ChangeResult:
    """Whether a `user` value that a runtime recorded for a slot of this decision must be
    confirmed by the person in the console (R10) instead of binding on the runtime's word."""
    return _set_flag(decision, Field.PERSON_CONFIRMS, person_confirms, reason, actor)


@transaction.atomic
def slot_set_future(*, slot: Slot, future: Any, reason: Any, actor: Actor) -> ChangeResult:
    """Whether a date slot takes only dates from today on (R9): a date slot only."""
    if future is True and slot.value_type != Slot.ValueType.DATE:
        raise field_error("future", "only a date slot can take only dates from today on")
    return _set_flag(slot, Field.FUTURE, future, reason, actor)
