"""What the tool adapters (OpenAI Agents, Pydantic AI) share: a call's Idempotency-Key, the
receipt's hidden parameter, and what the model reads of the person's answer."""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Callable, Mapping
from typing import Any

from console_client.digest import bindings_digest
from console_client.models import REDEEM_TOOL, Resolution, check_redeem

MAX_KEY_LENGTH = 200
# A wrapped function's parameter that receives the receipt (hidden from the model).
RECEIPT_PARAMETER = "receipt"
# What the model reads when a call's confirmation was already used (a run resumed twice).
ALREADY_DONE = (
    "This call was already confirmed in the console and carried out once; it was not run "
    "again. Do not retry it."
)


def hands_receipt(func: Callable[..., Any], redeem: str, audience: str | None) -> bool:
    """Whether `func` takes the receipt (its `receipt` parameter); ValueError for a `redeem`
    that is no mode, or `redeem="tool"` without that parameter and an `audience`."""
    check_redeem(redeem)
    takes = RECEIPT_PARAMETER in inspect.signature(func).parameters
    if redeem == REDEEM_TOOL and not (takes and audience):
        raise ValueError(
            'redeem="tool" leaves the receipt to the service the function calls: the function '
            "needs a `receipt` parameter to pass it on, and audience= names that service"
        )
    return takes


def call_key(framework: str, tool_name: str, call_id: str, arguments: Mapping[str, Any]) -> str:
    """A call's Idempotency-Key: its arguments' digest is part of it, so another set of
    arguments under the same call id can never find (and replay) this confirmation."""
    key = f"{framework}:{tool_name}:{call_id}:{bindings_digest(arguments)}"
    if len(key) > MAX_KEY_LENGTH:
        key = f"{framework}:" + hashlib.sha256(key.encode("utf-8")).hexdigest()
    return key


def changes_message(arguments: Mapping[str, Any], bindings: Mapping[str, Any]) -> str | None:
    """What the model reads when the person changed its values; None when they did not."""
    changed = [
        f"{slot}: {json.dumps(arguments.get(slot), ensure_ascii=False)} → "
        f"{json.dumps(value, ensure_ascii=False)}"
        for slot, value in bindings.items()
        if slot not in arguments or arguments[slot] != value
    ]
    if not changed:
        return None
    return (
        "The person changed values in the confirmation console; the tool ran with theirs, "
        "not yours: " + "; ".join(changed)
    )


def rejection_message(resolution: Resolution) -> str:
    """What the model reads when the person rejected the call."""
    reason = resolution.reason or "no reason given"
    return f"The person rejected this call in the confirmation console. Their reason: {reason}"
