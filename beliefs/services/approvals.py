"""M-of-N approval: what approvers do (approve, reject, mark another member away). The rules
are services/quorum.py's docstring; the gate planning settles through is there too."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from beliefs.domain.vocabulary import MAX_TEXT_LENGTH, AuditKind
from beliefs.errors import Conflict, InvalidInput, NotFound, PermissionDenied, field_error
from beliefs.models import (
    Approval,
    ApprovalRound,
    ApproverAway,
    InstanceStatus,
    PromptState,
    TaskInstance,
)
from beliefs.selectors.quorum import (
    Quorum,
    bound_world_changes,
    instance_for_approver,
    quorum_of,
)
from beliefs.services.audit import Actor, audit
from beliefs.services.lifecycle import close_instance, lock_instance
from beliefs.services.notify import approval_recorded
from beliefs.services.planning import plan_locked
from beliefs.services.quorum import record_approval
from beliefs.services.retry import retry_on_race

# --- what approvers do ----------------------------------------------------------------------


@dataclass(frozen=True)
class ApprovalResult:
    instance: TaskInstance
    quorum: Quorum
    replayed: bool = False  # the person had already approved these bindings: counted once


def _locked_for(
    instance_id: Any, user: User, doing: str, digest: Any, worlds: Any = None
) -> tuple[TaskInstance, Quorum]:
    """The instance, locked, if `user` is its principal or one of its approvers (404 for
    anyone else), still waiting for approvals of the digests the person saw: the bindings'
    and (where the instance binds any irreversible value) their worlds'."""
    found = instance_for_approver(instance_id, user)
    if found is None:
        raise NotFound("No such instance.")
    instance = lock_instance(found)
    status = InstanceStatus(instance.status)
    if status != InstanceStatus.AWAITING_APPROVAL:
        words = {
            InstanceStatus.READY: "it already has every approval it needs and is ready",
            InstanceStatus.AWAITING_USER: "its person has not answered everything yet",
            InstanceStatus.OPEN: "it is not planned yet",
        }
        raise Conflict(
            f"Cannot {doing}: {words.get(status, f'it is {status}')}.",
            code=f"instance_{instance.status}",
        )
    stale_values = not isinstance(digest, str) or digest != instance.bindings_digest
    stale_worlds = bool(instance.worlds_digest) and worlds != instance.worlds_digest
    if stale_values or stale_worlds:
        raise Conflict(
            f"Cannot {doing}: the values changed since you saw them (an edit), so this was "
            "not recorded. Look at them again."
            if stale_values
            else f"Cannot {doing}: what the values refer to (their world) changed since you "
            "saw them, or you did not say which world you saw (worlds_digest), so this was "
            "not recorded. Look at them again.",
            code="stale_digest",
            extra={
                "bindings_digest": instance.bindings_digest,
                "worlds_digest": instance.worlds_digest or None,
            },
        )
    quorum = quorum_of(instance, instance.bindings_digest)
    if user.pk not in quorum.approvers:
        raise PermissionDenied(
            "You are not one of this action's approvers: your answers are the principal's "
            "part; the approvers group approves the same values after you."
            if user.pk == instance.principal_id
            else "You are not one of this action's approvers.",
            code="not_an_approver",
        )
    return instance, quorum


@retry_on_race
@transaction.atomic
def instance_approve(
    *,
    instance_id: Any,
    user: User,
    bindings_digest: Any,
    worlds_digest: Any = None,
    acknowledged: Any = (),
) -> ApprovalResult:
    """`user` approves the instance's exact bindings (`bindings_digest`, as they saw them)
    bound with their worlds (`worlds_digest`), naming in `acknowledged` each changed detail of
    those worlds ("slot:key", as `bound_world_changes` lists them), as the principal did.
    Counted once however often it is sent; the last approval needed makes the instance ready
    (planning settles it, under the lock), and only that one."""
    instance, quorum = _locked_for(instance_id, user, "approve", bindings_digest, worlds_digest)
    if quorum.approved_by(user.pk):
        return ApprovalResult(instance, quorum, replayed=True)
    _require_acknowledged(instance, acknowledged)
    now = timezone.now()
    round_ = quorum.round or ApprovalRound.objects.get(
        instance=instance,
        bindings_digest=instance.bindings_digest,
        worlds_digest=instance.worlds_digest,
    )
    if not record_approval(instance, round_, user.pk, Approval.Via.APPROVE, now):
        return ApprovalResult(instance, quorum_of(instance, instance.bindings_digest), True)
    ApproverAway.objects.filter(instance=instance, approver=user).delete()  # back: not away
    after = quorum_of(instance, instance.bindings_digest)
    audit(
        AuditKind.APPROVAL_APPROVED,
        actor=Actor(user=user),
        instance=instance,
        data={
            "bindings_digest": instance.bindings_digest,
            "worlds_digest": instance.worlds_digest,
            "missing": after.missing,
        },
    )
    plan_locked(instance, Actor(user=user))
    if instance.status == InstanceStatus.AWAITING_APPROVAL:
        approval_recorded(instance, after)
    return ApprovalResult(instance, after)


def _require_acknowledged(instance: TaskInstance, acknowledged: Any) -> None:
    """An approver names each changed detail of the worlds the values were bound with, as the
    principal had to; else nothing is recorded (400 `not_acknowledged`)."""
    named = (
        {k for k in acknowledged if isinstance(k, str)}
        if isinstance(acknowledged, list | tuple | set | frozenset)
        else set()
    )
    changes = bound_world_changes(instance)
    missing = [key for shown in changes for key in shown.keys if key not in named]
    if missing:
        raise InvalidInput(
            "Not approved: the world these values refer to changed since they were first "
            "given; acknowledge each changed detail (acknowledged: "
            + ", ".join(missing)
            + ") to approve.",
            code="not_acknowledged",
            fields={"acknowledged": [f"acknowledge each changed detail: {', '.join(missing)}"]},
        )


def _reason(value: Any, required: bool = True) -> str:
    text = value.strip() if isinstance(value, str) else ""
    if required and not text:
        raise field_error("reason", "give a reason: the runtime and the principal read it")
    if len(text) > MAX_TEXT_LENGTH:
        raise field_error("reason", f"must be at most {MAX_TEXT_LENGTH} characters")
    return text


@retry_on_race
@transaction.atomic
def instance_reject_approval(
    *, instance_id: Any, user: User, bindings_digest: Any, reason: Any, worlds_digest: Any = None
) -> TaskInstance:
    """An approver rejects: the first rejection cancels the instance, with its reason."""
    checked = _reason(reason)
    instance, _ = _locked_for(instance_id, user, "reject", bindings_digest, worlds_digest)
    name = user.get_username()
    close_instance(
        instance,
        InstanceStatus.CANCELLED,
        PromptState.CANCELLED,
        f"rejected by approver {name}: {checked}",
    )
    audit(
        AuditKind.APPROVAL_REJECTED,
        actor=Actor(user=user),
        instance=instance,
        data={"bindings_digest": bindings_digest, "reason": checked},
    )
    return instance


@retry_on_race
@transaction.atomic
def approver_mark_away(
    *,
    instance_id: Any,
    user: User,
    approver: Any,
    bindings_digest: Any,
    reason: Any = "",
    worlds_digest: Any = None,
) -> Quorum:
    """A member marks another member away for this instance: not asked or reminded any
    more. It is not an approval and lowers no count."""
    checked = _reason(reason, required=False)
    instance, quorum = _locked_for(
        instance_id, user, "mark an approver away", bindings_digest, worlds_digest
    )
    other = User.objects.filter(username=approver).first() if isinstance(approver, str) else None
    if other is None or other.pk not in quorum.approvers:
        raise InvalidInput(
            "approver: not one of this action's approvers",
            fields={"approver": ["not one of this action's approvers"]},
            code="not_an_approver",
        )
    if other.pk == user.pk:
        raise InvalidInput(
            "approver: you cannot mark yourself away; simply do not approve",
            fields={"approver": ["you cannot mark yourself away"]},
        )
    if quorum.approved_by(other.pk):
        raise Conflict(f"{other.get_username()} has already approved.", code="already_approved")
    if not quorum.is_away(other.pk):
        ApproverAway.objects.create(
            instance=instance,
            approver=other,
            marked_by=user,
            reason=checked,
            created_at=timezone.now(),
        )
        audit(
            AuditKind.APPROVAL_AWAY_MARKED,
            actor=Actor(user=user),
            instance=instance,
            subject=other.get_username(),
            data={"approver": other.get_username(), "reason": checked},
        )
    return quorum_of(instance, instance.bindings_digest)
