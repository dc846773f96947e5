"""The instance's state at the top of its page: waiting, ready, cancelled or expired, how many
blocking cards still wait, and the final bindings once it is ready."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from beliefs.models import InstanceStatus, TaskInstance
from beliefs.selectors.quorum import Quorum, quorum_of
from console.presenters.instance import Card
from console.templatetags.reveal import hidden_characters, mixed_script_note


def _status_is(status: InstanceStatus) -> property:
    """A read-only flag: whether the instance is in `status`."""
    return property(lambda outcome: outcome.status == status)


@dataclass(frozen=True)
class Outcome:
    """The instance's state at the top of its page."""

    status: str
    blocking_count: int
    focus: bool = False
    # M-of-N approval: where the approvals stand while it awaits them.
    quorum: Quorum | None = None
    # A value was vetoed after the action was cleared: the agent may already have acted with
    # it, so what waits is a correction, not a first go-ahead.
    correction: bool = False

    # The flags the templates branch on, one a status.
    waiting = _status_is(InstanceStatus.AWAITING_USER)
    awaiting_signature = _status_is(InstanceStatus.AWAITING_SIGNATURE)
    ready = _status_is(InstanceStatus.READY)
    cancelled = _status_is(InstanceStatus.CANCELLED)
    expired = _status_is(InstanceStatus.EXPIRED)
    awaiting_approval = _status_is(InstanceStatus.AWAITING_APPROVAL)

    @property
    def finished(self) -> bool:
        return self.status in InstanceStatus.closed()


def banner_context(
    instance: TaskInstance, cards: list[Card], *, focus: bool = False
) -> dict[str, Any]:
    open_blocking = [c for c in cards if c.prompt.is_blocking_open]
    labels = {item["slot"]: item.get("label") or item["slot"] for item in instance.plan_items}
    bindings = [
        {"key": key, "label": labels.get(key, key), "value": value}
        for key, value in (instance.bindings or {}).items()
    ]
    return {
        "instance": instance,
        "outcome": Outcome(
            instance.status,
            len(open_blocking),
            focus,
            quorum_of(instance, instance.bindings_digest)
            if instance.status == InstanceStatus.AWAITING_APPROVAL
            else None,
            correction=instance.status == InstanceStatus.AWAITING_USER
            and any(c.vetoed_after_ready for c in cards),
        ),
        "blocking_count": len(open_blocking),
        "bindings": bindings,
        "bindings_flagged": bool(hidden_characters(instance.bindings or {})),
        "bindings_mixed": mixed_script_note([[row["label"], row["value"]] for row in bindings]),
    }
