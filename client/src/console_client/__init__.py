"""Python client for the confirmation console: `Console`, `AsyncConsole`, and their helpers.

from console_client import Console
with Console("http://127.0.0.1:8000", api_key) as console:
    resolution = console.resolve("payments.refund", "alice", {"iban": "NL91..."})
    bindings = resolution.verified_bindings()
"""

from console_client.client import AsyncConsole, Console
from console_client.digest import bindings_digest, canonical_json, verify_bindings
from console_client.errors import (
    ApiError,
    BadRequest,
    Conflict,
    ConsoleError,
    DigestMismatch,
    Forbidden,
    InstanceExpired,
    NotFound,
    NotReady,
    PayloadTooLarge,
    Rejected,
    ServerError,
    Unauthorized,
    WaitEnded,
    WaitTimeout,
    WebhookVerificationError,
)
from console_client.models import Resolution
from console_client.webhooks import WebhookEvent, verify_webhook

__all__ = [
    "ApiError",
    "AsyncConsole",
    "BadRequest",
    "Conflict",
    "Console",
    "ConsoleError",
    "DigestMismatch",
    "Forbidden",
    "InstanceExpired",
    "NotFound",
    "NotReady",
    "PayloadTooLarge",
    "Rejected",
    "Resolution",
    "ServerError",
    "Unauthorized",
    "WaitEnded",
    "WaitTimeout",
    "WebhookEvent",
    "WebhookVerificationError",
    "bindings_digest",
    "canonical_json",
    "verify_bindings",
    "verify_webhook",
]
