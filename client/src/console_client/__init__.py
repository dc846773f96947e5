"""Python client for the confirmation console: `Console`, `AsyncConsole`, and their helpers.

from console_client import Console
with Console("http://127.0.0.1:8000", api_key) as console:
    resolution = console.resolve("payments.refund", "alice", {"iban": "NL91..."})
    bindings = resolution.verified_bindings()
    receipt = console.verify_receipt(resolution.receipt, bindings=bindings)  # signature, digest,
                                                   # and that a person approved it in the console
    console.redeem(receipt.token)                                           # once only
"""

from console_client.client import AsyncConsole, Console
from console_client.digest import (
    CANONICALIZATION,
    bindings_digest,
    canonical_json,
    verify_bindings,
    worlds_digest,
)
from console_client.errors import (
    ApiError,
    BadRequest,
    Conflict,
    ConsoleError,
    ConsoleTimeout,
    ConsoleUnavailable,
    DigestMismatch,
    Forbidden,
    InstanceExpired,
    NotFound,
    NotReady,
    PayloadTooLarge,
    ReceiptAudienceMismatch,
    ReceiptDigestMismatch,
    ReceiptError,
    ReceiptExpired,
    ReceiptInvalid,
    ReceiptIssuerMismatch,
    ReceiptKeyUnknown,
    ReceiptNotApprovedByPerson,
    ReceiptRedeemed,
    ReceiptRevoked,
    ReceiptSignatureInvalid,
    Rejected,
    ServerError,
    Unauthorized,
    WaitEnded,
    WaitTimeout,
    WebhookVerificationError,
)
from console_client.models import Confirmation, Resolution
from console_client.passkeys import SignatureInvalid, signature_challenge, verify_signature
from console_client.receipts import Approval, Bound, Receipt, Redemption, verify_receipt
from console_client.registration import Risk
from console_client.webhooks import WebhookEvent, verify_webhook

__all__ = [
    "CANONICALIZATION",
    "ApiError",
    "Approval",
    "AsyncConsole",
    "BadRequest",
    "Bound",
    "Confirmation",
    "Conflict",
    "Console",
    "ConsoleError",
    "ConsoleTimeout",
    "ConsoleUnavailable",
    "DigestMismatch",
    "Forbidden",
    "InstanceExpired",
    "NotFound",
    "NotReady",
    "PayloadTooLarge",
    "Receipt",
    "ReceiptAudienceMismatch",
    "ReceiptDigestMismatch",
    "ReceiptError",
    "ReceiptExpired",
    "ReceiptInvalid",
    "ReceiptIssuerMismatch",
    "ReceiptKeyUnknown",
    "ReceiptNotApprovedByPerson",
    "ReceiptRedeemed",
    "ReceiptRevoked",
    "ReceiptSignatureInvalid",
    "Redemption",
    "Rejected",
    "Resolution",
    "Risk",
    "ServerError",
    "SignatureInvalid",
    "Unauthorized",
    "WaitEnded",
    "WaitTimeout",
    "WebhookEvent",
    "WebhookVerificationError",
    "bindings_digest",
    "canonical_json",
    "signature_challenge",
    "verify_bindings",
    "verify_receipt",
    "verify_signature",
    "verify_webhook",
    "worlds_digest",
]
