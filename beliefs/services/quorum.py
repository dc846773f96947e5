"""M-of-N approval, the gate planning settles through; what approvers do is in
services/approvals.py.

- After the principal has answered, an instance whose decisions have an approvers group waits
  (`awaiting_approval`) until each decision has `approvals_required` approvals from its group,
  every one for the instance's exact `bindings_digest`. The principal's answers count as one
  approval when the principal is a member (recorded `via="answers"`); otherwise all k come
  from the group.
- An edit (anything that changes the bindings: the principal's veto and new answer, the
  runtime's new world or belief) gives a new digest, so a new round: the approvals of the
  earlier one were for other values and no longer count. The instance read lists them under
  `quorum.reset`, and the audit log says so (`approval.reset`). Approvers approve or reject;
  they do not edit (the values are the principal's to give).
- Nobody counts twice: one row per (instance, digest, person), a unique constraint. An
  approver approves only for themself (the API takes no "on behalf of"); a runtime key never
  approves (people only).
- The first rejection cancels the instance with its reason.
- Races: every write takes the instance's row lock first, and the transition to `ready` is
  planning's own (under that lock), so of any number of racing approvals exactly one makes
  the instance ready; the later ones find it ready (409).
- Away: a member may mark another member away for an instance. It approves nothing and
  lowers no count: the one marked is no longer asked or reminded, and the page says who
  marked them. Only a member of the group can do it (never the runtime, never the one
  marked).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction

from beliefs.domain.vocabulary import AuditKind
from beliefs.models import Approval, ApprovalRound, TaskInstance
from beliefs.selectors.quorum import Requirement, quorum_of, requirements_of
from beliefs.services.audit import Actor, audit


def approval_ttl() -> timedelta:
    """How long approvers have, from the round's start (the setting, default the prompts')."""
    ttl: timedelta = settings.CONSOLE_APPROVAL_TTL
    return ttl


# --- the gate planning settles through ----------------------------------------------------


def quorum_gate(
    instance: TaskInstance,
    digest: str,
    actor: Actor,
    now: datetime,
    requirements: tuple[Requirement, ...] | None = None,
    worlds: str = "",
) -> bool:
    """Planning's gate, under the instance's lock, once no blocking prompt is open: True when
    approvals are still missing for these exact bindings bound with these worlds (`worlds`,
    their `worlds_digest`): the instance awaits approval.

    Starts the digest's round, records the principal's answers as their approval when the
    principal is an approver and it is they who just answered, and marks the round reached
    when nothing is missing. `requirements`: the instance's, when the caller has read them."""
    if requirements is None:
        requirements = requirements_of(instance)
    if not requirements:
        return False
    round_, created = ApprovalRound.objects.get_or_create(
        instance=instance,
        bindings_digest=digest,
        worlds_digest=worlds,
        defaults={"started_at": now, "expires_at": now + approval_ttl()},
    )
    principal = instance.principal_id
    answered = actor.user is not None and actor.user.pk == principal
    if answered and any(principal in r.members for r in requirements):
        record_approval(instance, round_, principal, Approval.Via.ANSWERS, now)
    quorum = quorum_of(instance, digest, requirements, worlds)
    if created and quorum.voided:
        same_values = all(a.bindings_digest == digest for a in quorum.voided)
        audit(
            AuditKind.APPROVAL_RESET,
            actor=actor,
            instance=instance,
            data={
                "bindings_digest": digest,
                "worlds_digest": worlds,
                "voided": [a.approver.get_username() for a in quorum.voided],
                "reason": "the world the values refer to changed: earlier approvals were for "
                "another world"
                if same_values
                else "the bindings changed: earlier approvals were for other values",
            },
        )
    if quorum.met:
        if round_.reached_at is None:
            round_.reached_at = now
            round_.save(update_fields=["reached_at"])
        return False
    return True


def awaits_approval(instance: TaskInstance, digest: str, worlds: str = "") -> bool:
    """`quorum_gate` for a read that writes nothing (planning's unlocked path)."""
    requirements = requirements_of(instance)
    return bool(requirements) and not quorum_of(instance, digest, requirements, worlds).met


def record_approval(
    instance: TaskInstance, round_: ApprovalRound, user_id: int, via: str, now: datetime
) -> bool:
    """One approval row; False when the person had already approved these bindings (the unique
    constraint decides, in a savepoint so the transaction goes on)."""
    try:
        with transaction.atomic():
            Approval.objects.create(
                instance=instance,
                round=round_,
                bindings_digest=round_.bindings_digest,
                worlds_digest=round_.worlds_digest,
                approver_id=user_id,
                via=via,
                created_at=now,
            )
    except IntegrityError:
        return False
    return True
