"""Turning what a card's form posts into what `services.prompt_respond` takes, and back.

The cards are hand-written HTML (each input has its label and help text there); this module only
parses. Checks of the value itself (type, choices, scope order) stay in the service, so the page
and the API refuse the same things with the same words.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any

from beliefs.domain.problems import Problem, ProblemCode
from beliefs.domain.vocabulary import TYPED_ACTIONS, Action
from beliefs.errors import InvalidInput, field_error
from beliefs.models import Prompt, Slot
from beliefs.schemas import RespondFormIn, parse


def is_date_input_text(text: str) -> bool:
    """Whether a date input can hold `text` (`<input type="date">` shows only YYYY-MM-DD)."""
    if len(text) != len("2000-01-01") or text[4] != "-" or text[7] != "-":
        return False
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


def form_value(value: Any, value_type: str = Slot.ValueType.STRING) -> str:
    """A stored value as an input shows it, so that `parse_value` gives the same value back.

    Text stays as it is, unless it would read back as JSON in a JSON slot ("250"); everything
    else is written as JSON.
    """
    if value is None:
        return ""
    if isinstance(value, str):
        if value_type != Slot.ValueType.JSON:
            return value
        try:
            json.loads(value)
        except ValueError:
            return value
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool) and value_type == Slot.ValueType.BOOLEAN:
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)
    return json.dumps(value, ensure_ascii=False)


def parse_value(text: str, value_type: str) -> Any:
    """What a person typed, as the slot's value: JSON slots read JSON where it parses, plain
    text otherwise (an account number needs no quotes); other types are checked by the service."""
    if value_type != Slot.ValueType.JSON:
        return text
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            return json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise field_error("value", Problem(ProblemCode.NOT_JSON, {"detail": exc.msg})) from None
    try:
        return json.loads(stripped)
    except ValueError:
        return text


@dataclass(frozen=True)
class Response:
    action: str
    version: int
    value: Any
    value_confirmation: Any
    reason: str
    acknowledged: tuple[str, ...] = ()  # the changed details ticked as read
    typed_tail: str | None = None  # the value's last characters, under raised friction


def typed_values(post: Mapping[str, Any]) -> dict[str, str]:
    """What the person typed, to show again when the answer is refused."""
    return {
        name: str(post.get(name, ""))
        for name in ("value", "value_confirmation", "reason", "typed_tail")
        if name in post
    }


def parse_response(post: Mapping[str, Any], prompt: Prompt) -> Response:
    """Read a card's form. Raises InvalidInput with a field message when it cannot be read.

    Action, version and reason are checked as the API checks them (`RespondFormIn`); the value
    is read here, since only the page knows how a slot's value is typed into a text box."""
    fields = parse(
        RespondFormIn,
        {name: post[name] for name in ("action", "version", "reason") if name in post},
    )
    action = fields["action"]
    typed = typed_values(post)
    value_type = prompt.slot.value_type
    value: Any = None
    confirmation: Any = None
    if action in TYPED_ACTIONS:
        value = parse_value(typed.get("value", ""), value_type)
        if "value_confirmation" in typed:
            confirmation = parse_value(typed["value_confirmation"], value_type)
    elif action == Action.CONFIRM and typed.get("value", "").strip():
        # Confirm keeps the value on record. A changed input with Confirm would silently drop
        # the change: say so instead of guessing which one was meant. (An empty input is the
        # card that did not copy a value with hidden characters.)
        on_record = form_value(prompt.prefill, value_type).strip()
        if typed["value"].strip() != on_record:
            changed = Problem(ProblemCode.VALUE_CHANGED)
            raise InvalidInput(
                "You changed the value: press “Use this value instead” to keep your change, or "
                "put the value on record back and press “Confirm”.",
                code="changed_value_confirmed",
                fields={"value": [changed.message]},
                problems={"value": [changed]},
            )
    getlist = getattr(post, "getlist", None)
    ticked = getlist("acknowledged") if getlist is not None else post.get("acknowledged", [])
    return Response(
        action=action,
        version=fields["version"],
        value=value,
        value_confirmation=confirmation,
        reason=fields.get("reason", ""),
        acknowledged=tuple(str(k) for k in ticked),
        typed_tail=typed.get("typed_tail"),
    )
