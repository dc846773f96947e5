"""Registering a task class on first use, from a tool's signature or from an action's values.

    async def send_transfer(
        recipient_account: Annotated[str, Risk("irreversible")],  # a suggestion to classifiers
        amount: float,
        memo: str = "",
    ) -> str: ...

    console_tool(send_transfer, task_class="payments.transfer", principal="alice")

The adapters open an instance; when the console answers that the class (or one of the call's
slots) is unknown, they register it and open again. The slots come from the function's
parameters (or the values' keys), typed from the annotations (or the values), each with the
risk it suggests: `Annotated[..., Risk(...)]` or `risks={"slot": "..."}`. A suggestion is only
that: classifiers set the risks in the console, and until they do a slot is unclassified, so
treated as irreversible. The registration logs where they classify it (a WARNING of the
`console_client` logger).
"""

from __future__ import annotations

import datetime
import decimal
import inspect
import logging
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, get_args, get_origin
from urllib.parse import quote

from console_client.errors import ApiError, BadRequest, NotFound

logger = logging.getLogger("console_client")

RISKS = ("cosmetic", "reversible", "policy", "irreversible")
# The errors of an open that a registration answers: no such class, or a slot it lacks.
UNKNOWN = frozenset({"unknown_task_class", "unknown_slot"})
# Parameters that are never slots: the receipt the adapter hands over, the framework's context.
NOT_SLOTS = frozenset({"receipt", "self", "cls", "ctx", "context", "run_context"})


@dataclass(frozen=True)
class Risk:
    """The risk a parameter suggests to classifiers: `Annotated[str, Risk("irreversible")]`."""

    level: str

    def __post_init__(self) -> None:
        if self.level not in RISKS:
            raise ValueError(f"Risk must be one of {', '.join(RISKS)}, not {self.level!r}")


def needs_registration(error: ApiError) -> bool:
    """The open was refused because the class, or a slot of it, is not registered."""
    return isinstance(error, NotFound | BadRequest) and error.error in UNKNOWN


def _label(key: str) -> str:
    return key.replace("_", " ").replace("-", " ").strip().capitalize() or key


def _value_type(hint: Any) -> tuple[str, list[str] | None]:
    """The console's value type for an annotation, and the choices of a Literal of strings."""
    if get_origin(hint) in (typing.Union, types.UnionType):
        options = [a for a in get_args(hint) if a is not type(None)]
        hint = options[0] if len(options) == 1 else Any
    if get_origin(hint) is Literal:
        values = get_args(hint)
        if all(isinstance(v, str) for v in values):
            return "string", list(values)
        hint = type(values[0]) if values else Any
    if hint is bool:
        return "boolean", None
    if hint in (int, float, decimal.Decimal):
        return "number", None
    if hint in (datetime.date, datetime.datetime):
        return "date", None
    if hint is str:
        return "string", None
    return "json", None


def value_type_of(value: Any) -> str:
    """The console's value type for a JSON value."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "json"


def _slot(key: str, value_type: str, risk: str | None) -> dict[str, Any]:
    slot: dict[str, Any] = {"key": key, "label": _label(key), "value_type": value_type}
    if risk is not None:
        if risk not in RISKS:
            raise ValueError(f"risks[{key!r}] must be one of {', '.join(RISKS)}, not {risk!r}")
        slot["suggested_risk"] = risk
    return slot


def slots_from_signature(
    func: Callable[..., Any], risks: Mapping[str, str] | None = None
) -> list[dict[str, Any]]:
    """A slot per parameter of `func` (but the receipt and a framework's context), typed from
    its annotation, with the risk its `Risk` annotation or `risks` suggests."""
    hints = typing.get_type_hints(func, include_extras=True)
    slots = []
    for name, parameter in inspect.signature(func).parameters.items():
        if name in NOT_SLOTS or parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        hint = hints.get(name, Any)
        suggested = (risks or {}).get(name)
        if get_origin(hint) is Annotated:
            marks = [m for m in hint.__metadata__ if isinstance(m, Risk)]
            suggested = suggested or (marks[0].level if marks else None)
            hint = get_args(hint)[0]
        value_type, choices = _value_type(hint)
        slot = _slot(name, value_type, suggested)
        if choices:
            slot["choices"] = choices
        slots.append(slot)
    return slots


def slots_from_values(
    values: Mapping[str, Any], risks: Mapping[str, str] | None = None
) -> list[dict[str, Any]]:
    """A slot per key of `values`, typed from its value."""
    return [_slot(k, value_type_of(v), (risks or {}).get(k)) for k, v in values.items()]


def registration(
    task_class: str, slots: Sequence[Mapping[str, Any]], decision: str | None = None
) -> dict[str, Any]:
    """The keyword arguments of `register_task_class` for a class of these slots, with one
    decision (the action: the tool's or node's name) that every slot feeds."""
    decisions = []
    if decision:
        decisions = [{"key": decision, "slots": [s["key"] for s in slots]}]
    return {
        "key": task_class,
        "name": task_class,
        "slots": [dict(s) for s in slots],
        "decisions": decisions,
    }


def log_registered(base_url: str, task_class: str, body: Mapping[str, Any]) -> None:
    """Say where a classifier decides the new class's risks: until one does, an unclassified
    slot binds as irreversible."""
    slots = [s for s in body.get("slots") or [] if isinstance(s, Mapping)]
    waiting = [str(s.get("key")) for s in slots if s.get("risk_class") == "unclassified"]
    if not waiting:
        return
    logger.warning(
        "registered task class %s: its slots %s wait for a classifier at %s/classify/%s/ and "
        "are treated as irreversible until then",
        task_class,
        ", ".join(waiting),
        base_url.rstrip("/"),
        quote(task_class, safe="/"),
    )
