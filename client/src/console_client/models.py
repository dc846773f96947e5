"""What a runtime gets back: a `Resolution` of an instance, and a plan's answer."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from console_client.digest import verify_bindings
from console_client.errors import (
    NotReady,
    ReceiptExpired,
    ReceiptInvalid,
    ReceiptRedeemed,
    ReceiptRevoked,
)

# Instance statuses.
OPEN = "open"
AWAITING_USER = "awaiting_user"
# The principal has answered; the decision's approvers group still has to approve (M-of-N).
AWAITING_APPROVAL = "awaiting_approval"
# Every answer is in; the person's passkey signature of the bindings is awaited (the person
# goes to `url` to review and sign).
AWAITING_SIGNATURE = "awaiting_signature"
READY = "ready"
CANCELLED = "cancelled"
EXPIRED = "expired"
# Statuses a wait waits through: people still have to act.
WAITING = frozenset({AWAITING_USER, AWAITING_APPROVAL, AWAITING_SIGNATURE})


@dataclass(frozen=True)
class Resolution:
    """Where an instance stands: its status, and once `ready` its final bindings and digest.

    `status` is "ready" (bindings final), "awaiting_user" (send the person to `url`),
    "cancelled" (`rejected` is True when the person rejected it; `reason` says why), or "open"
    (never planned). An expired instance is never returned by a wait: it raises
    `InstanceExpired`.
    """

    instance_id: str
    status: str
    bindings: dict[str, Any] | None
    digest: str | None
    url: str
    blocking: int = 0
    reason: str | None = None
    rejected: bool = False
    instance: dict[str, Any] = field(default_factory=dict, repr=False)
    # Once ready: the signed receipt (verify it with `verify_receipt`, use it once with
    # `redeem`) and its state (valid, redeemed, revoked, expired).
    receipt: str | None = field(default=None, repr=False)
    receipt_state: str | None = None
    slots: tuple[str, ...] = ()

    @property
    def ready(self) -> bool:
        return self.status == READY

    @property
    def awaiting_user(self) -> bool:
        """The person must act (answer, or sign with a passkey) at `url`."""
        return self.status in WAITING

    @property
    def awaiting_signature(self) -> bool:
        return self.status == AWAITING_SIGNATURE

    def verified_bindings(self) -> dict[str, Any]:
        """The bindings after checking their digest; `NotReady` unless the status is ready."""
        if not self.ready or self.bindings is None:
            why = f": {self.reason}" if self.reason else ""
            raise NotReady(f"instance {self.instance_id} is {self.status}{why}")
        return verify_bindings(self.bindings, self.digest)

    def usable_receipt(self) -> str:
        """The receipt, while it can still be used; else the `ReceiptError` of its state
        (the console stops handing out a receipt once it is redeemed, revoked or expired)."""
        if self.receipt:
            return self.receipt
        body = {"error": f"receipt_{self.receipt_state}", "fields": {}}
        where = f"the receipt of instance {self.instance_id}"
        if self.receipt_state == "redeemed":
            raise ReceiptRedeemed(409, body | {"detail": f"{where} was already used"})
        if self.receipt_state == "revoked":
            raise ReceiptRevoked(409, body | {"detail": f"{where} was revoked"})
        if self.receipt_state == "expired":
            raise ReceiptExpired(f"{where} has expired")
        raise ReceiptInvalid(f"instance {self.instance_id} is {self.status} and has no receipt")

    @classmethod
    def from_payload(cls, payload: Mapping[str, Any], base_url: str) -> Resolution:
        """From an instance payload (GET/POST instances) or a plan payload (POST plan)."""
        instance_id = str(payload.get("id"))
        rejections = [
            p
            for p in payload.get("prompts") or []
            if isinstance(p, dict) and p.get("action") == "reject"
        ]
        reason = payload.get("status_reason")
        if rejections:
            reason = rejections[-1].get("reason_given") or reason
        return cls(
            instance_id=instance_id,
            status=str(payload.get("status")),
            bindings=payload.get("bindings"),
            digest=payload.get("bindings_digest"),
            url=page_url(base_url, instance_id),
            blocking=int(payload.get("blocking") or 0),
            reason=reason,
            rejected=bool(rejections),
            instance=dict(payload),
            receipt=payload.get("receipt") or None,
            receipt_state=payload.get("receipt_state"),
            slots=tuple(str(s) for s in payload.get("slots") or ()),
        )


# Who uses a confirmation's receipt: the agent's process (`confirm()` and the adapters verify and
# redeem it before handing the bindings over), or the tool server the receipt is passed to (the
# adapters verify it and hand it on; the tool server verifies it again and redeems it).
REDEEM_AGENT = "agent"
REDEEM_TOOL = "tool"
REDEEM_MODES = (REDEEM_AGENT, REDEEM_TOOL)


def check_redeem(redeem: str) -> None:
    """ValueError unless `redeem` is one of REDEEM_MODES."""
    if redeem not in REDEEM_MODES:
        raise ValueError(f"redeem must be one of {', '.join(REDEEM_MODES)}, not {redeem!r}")


class Confirmation(dict[str, Any]):
    """The bindings the person confirmed, as a dict (pass it to the action as keyword
    arguments), and what vouches for them.

    `replayed` is True when this confirmation was already used: its receipt was redeemed
    before, by an earlier run of the same code (LangGraph runs a node again from its top when
    it resumes) or by the tool server it was handed to. The action it guards may have run
    then: do not run it again. `receipt` is the signed receipt (compact JWS) for the service
    the action calls to verify (and, with `redeem="tool"`, to redeem); None for a replay.
    `redeemed` says whether this call redeemed it."""

    def __init__(
        self,
        bindings: Mapping[str, Any],
        *,
        instance_id: str,
        receipt: str | None = None,
        replayed: bool = False,
        redeemed: bool = False,
    ) -> None:
        super().__init__(bindings)
        self.instance_id = instance_id
        self.receipt = receipt
        self.replayed = replayed
        self.redeemed = redeemed

    @property
    def bindings(self) -> dict[str, Any]:
        """The bindings as a plain dict."""
        return dict(self)

    def __repr__(self) -> str:
        state = "replayed" if self.replayed else ("redeemed" if self.redeemed else "unused")
        return f"Confirmation({dict(self)!r}, instance_id={self.instance_id!r}, {state})"


class PlanBody(dict[str, Any]):
    """The JSON of a plan's answer. Its instance is `id`; `instance`, the name the console
    also sent before, still reads as `id` for this release, with a DeprecationWarning: it goes
    in the next."""

    def __getitem__(self, key: str) -> Any:
        if key == "instance":
            _deprecated_instance()
            return super().__getitem__("id")
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        if key == "instance":
            _deprecated_instance()
            return super().get("id", default)
        return super().get(key, default)


def _deprecated_instance() -> None:
    warnings.warn(
        "a plan's `instance` is deprecated and goes in the next release: read `id`",
        DeprecationWarning,
        stacklevel=3,  # the caller of `plan["instance"]`
    )


def page_url(base_url: str, instance_id: str) -> str:
    """The instance's page, where its principal answers."""
    return f"{base_url.rstrip('/')}/instances/{instance_id}/"
