"""Verify a Standard Webhooks request (https://www.standardwebhooks.com/) from the console.

Headers `webhook-id`, `webhook-timestamp` (Unix seconds) and `webhook-signature`, a
space-separated list of `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`; the secret is
`whsec_<base64 key>`. Any one matching signature passes; timestamps more than `tolerance`
seconds from now are refused, so a captured request cannot be replayed later.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from console_client.errors import WebhookVerificationError

DEFAULT_TOLERANCE_SECONDS = 5 * 60


@dataclass(frozen=True)
class WebhookEvent:
    """A verified event: `type` (e.g. "instance.ready"), when it happened, and its data."""

    id: str  # the webhook-id, the same on every retry of one event: deduplicate on it
    type: str
    timestamp: datetime | str
    data: dict[str, Any]


def _secret_key(secret: str) -> bytes:
    encoded = secret.removeprefix("whsec_")
    try:
        return base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise WebhookVerificationError("the secret is not whsec_<base64>") from exc


def _header(headers: Mapping[str, str], name: str) -> str:
    for key, value in headers.items():
        if key.lower() == name:
            return value
    raise WebhookVerificationError(f"missing header {name}")


def sign(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """The `v1,<base64>` signature of a message (what the console sends)."""
    content = f"{msg_id}.{timestamp}.".encode() + body
    digest = hmac.new(_secret_key(secret), content, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


def verify_webhook(
    body: bytes | str,
    headers: Mapping[str, str],
    secret: str,
    *,
    tolerance: float = DEFAULT_TOLERANCE_SECONDS,
    now: float | None = None,
) -> WebhookEvent:
    """Check the signature and timestamp of a webhook request and return its event.

    Pass the body exactly as received (bytes), before any JSON parsing. Raises
    `WebhookVerificationError` on a missing header, a stale or future timestamp, or when no
    signature matches.
    """
    raw = body.encode("utf-8") if isinstance(body, str) else bytes(body)
    msg_id = _header(headers, "webhook-id")
    try:
        timestamp = int(_header(headers, "webhook-timestamp"))
    except ValueError:
        raise WebhookVerificationError("webhook-timestamp is not a whole number") from None
    current = time.time() if now is None else now
    if abs(current - timestamp) > tolerance:
        raise WebhookVerificationError(
            f"webhook-timestamp is {int(current - timestamp)} s from now; at most "
            f"{int(tolerance)} s allowed"
        )
    expected = sign(secret, msg_id, timestamp, raw).split(",", 1)[1]
    signatures = _header(headers, "webhook-signature").split()
    if not any(
        version == "v1" and hmac.compare_digest(value, expected)
        for version, _, value in (sig.partition(",") for sig in signatures)
    ):
        raise WebhookVerificationError("no signature matches")
    try:
        payload = json.loads(raw)
    except ValueError:
        raise WebhookVerificationError("the body is not JSON") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("type"), str):
        raise WebhookVerificationError("the body is not a {type, timestamp, data} event")
    stamp = payload.get("timestamp")
    when: datetime | str = stamp if isinstance(stamp, str) else ""
    if isinstance(stamp, str):
        try:
            when = datetime.fromisoformat(stamp)
        except ValueError:
            when = stamp
    data = payload.get("data")
    return WebhookEvent(
        id=msg_id, type=payload["type"], timestamp=when, data=data if isinstance(data, dict) else {}
    )
