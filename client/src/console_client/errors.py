"""Typed errors: one class per HTTP status the console answers with, each carrying its JSON.

The console's errors are `{"error": code, "detail": text, "fields": {field: [messages]}}`;
`ConsoleError.error`, `.detail` and `.fields` hold them, `.body` the whole object.
"""

from __future__ import annotations

from typing import Any


class ConsoleError(Exception):
    """Base of every error this client raises."""


class ApiError(ConsoleError):
    """The console answered with an error status."""

    status: int = 0

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        self.status = status
        self.body = body
        self.error: str = str(body.get("error", f"http_{status}"))
        self.detail: str = str(body.get("detail", ""))
        fields = body.get("fields")
        self.fields: dict[str, list[str]] = fields if isinstance(fields, dict) else {}
        super().__init__(f"{status} {self.error}: {self.detail}")


class BadRequest(ApiError):
    """400: the input was refused; `fields` names what was wrong."""


class Unauthorized(ApiError):
    """401: no key, or an unknown or revoked one."""


class Forbidden(ApiError):
    """403: this key may not do this (e.g. a runtime answering a prompt)."""


class NotFound(ApiError):
    """404: no such instance or task class, or not this key's."""


class Conflict(ApiError):
    """409: the instance's state forbids it, or an Idempotency-Key was reused with another body."""


class PayloadTooLarge(ApiError):
    """413: the request body is over the console's limit."""


class ServerError(ApiError):
    """Any other error status (5xx, 429, ...)."""


ERRORS_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: PayloadTooLarge,
}


class ConsoleUnavailable(ConsoleError):
    """The console could not be reached, or closed the connection before it answered
    (refused, reset, no route, a name that does not resolve). `url` is where the client
    asked; the transport's own error is the `__cause__`. A write is never sent again on its
    own: read the instance to see whether it took effect, or send it again with the same
    Idempotency-Key."""

    def __init__(self, message: str, url: str) -> None:
        super().__init__(message)
        self.url = url


class ConsoleTimeout(ConsoleError):
    """The console took longer than the client's timeout to connect or to answer. `url` is
    where the client asked; the transport's own error is the `__cause__`. As with
    `ConsoleUnavailable`, a write may or may not have taken effect."""

    def __init__(self, message: str, url: str) -> None:
        super().__init__(message)
        self.url = url


class WaitEnded(ConsoleError):
    """A wait ended without bindings; `instance` is the instance as last read."""

    def __init__(self, message: str, instance: dict[str, Any]) -> None:
        super().__init__(message)
        self.instance = instance
        self.instance_id: str = str(instance.get("id", ""))


class InstanceExpired(WaitEnded):
    """The person did not answer before the prompt's time to live: nothing of it binds."""


class Rejected(WaitEnded):
    """The person rejected the action in the console; `reason` is what they said."""

    def __init__(self, message: str, instance: dict[str, Any], reason: str | None) -> None:
        super().__init__(message, instance)
        self.reason = reason


class WaitTimeout(WaitEnded):
    """The caller's own timeout passed while the instance still awaited the person."""


class DigestMismatch(ConsoleError):
    """The bindings do not hash to the digest the console sent: do not act on them."""


class NotReady(ConsoleError):
    """Bindings were asked for, but the instance is not ready (cancelled, rejected, open)."""


class WebhookVerificationError(ConsoleError):
    """A webhook's signature, timestamp or headers did not check out: drop the request."""


class ReceiptError(ConsoleError):
    """Base of every refusal of a receipt: do not execute the action."""


class ReceiptInvalid(ReceiptError):
    """Malformed, the wrong type or algorithm, a claim missing, or issued in the future."""


class ReceiptKeyUnknown(ReceiptError):
    """The header names a key (`kid`) the console's JWKS does not list."""


class ReceiptSignatureInvalid(ReceiptError):
    """The signature does not verify: the token was changed, or signed by someone else."""


class ReceiptExpired(ReceiptError):
    """The receipt's `exp` has passed."""


class ReceiptAudienceMismatch(ReceiptError):
    """The receipt was issued for another audience (`aud`)."""


class ReceiptIssuerMismatch(ReceiptError):
    """The receipt was issued by another console (`iss`)."""


class ReceiptDigestMismatch(ReceiptError, DigestMismatch):
    """The arguments about to be executed are not the ones the person approved."""


class ReceiptNotApprovedByPerson(ReceiptError):
    """Irreversible values the receipt covers were bound on a runtime's report alone (its
    `vouched_by_runtime` slots, in `slots`): no person confirmed them in the console. Accept
    such a receipt only knowingly, with `verify_receipt(..., person_required=False)`."""

    def __init__(self, message: str, slots: tuple[str, ...]) -> None:
        super().__init__(message)
        self.slots = slots


class ReceiptRedeemed(Conflict, ReceiptError):
    """409 receipt_redeemed: this confirmation was already used; do not execute it again."""


class ReceiptRevoked(Conflict, ReceiptError):
    """409 receipt_revoked: the person vetoed after approving, or the instance was cancelled."""


# 409s that refuse a receipt, raised as their own type (still a Conflict) so that an adapter
# can tell "already used" from any other conflict.
CONFLICTS_BY_CODE: dict[str, type[ApiError]] = {
    "receipt_redeemed": ReceiptRedeemed,
    "receipt_revoked": ReceiptRevoked,
}


def error_for(status: int, body: dict[str, Any]) -> ApiError:
    if status == 409 and str(body.get("error")) in CONFLICTS_BY_CODE:
        return CONFLICTS_BY_CODE[str(body["error"])](status, body)
    return ERRORS_BY_STATUS.get(status, ServerError)(status, body)
