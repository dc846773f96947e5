"""The action in plain words at the top of the instance page: one sentence per decision, each
value as it would bind if the person agreed now."""

from __future__ import annotations

from dataclasses import dataclass

from beliefs.domain.policy import Route
from beliefs.domain.reveal import value_text
from beliefs.models import InstanceStatus, TaskInstance
from beliefs.selectors.pages import DecisionView
from console.templatetags.reveal import hidden_characters, mixed_script_note

RESTATEMENT_VALUE_LIMIT = 60


@dataclass(frozen=True)
class Part:
    """One value in the restatement; label and text are untrusted, shown with `|shown`."""

    label: str
    text: str
    pending: bool
    flagged: bool  # hidden characters
    mixed: str = ""  # mixed-script words, explained


@dataclass(frozen=True)
class Sentence:
    action: str
    parts: list[Part]


def value_parts(
    instance: TaskInstance, keys: set[str] | None = None, limit: int = RESTATEMENT_VALUE_LIMIT
) -> dict[str, Part]:
    """Each slot's value as it would bind if the person agreed now (the last plan, or the final
    bindings), clamped to `limit` characters, by slot key in plan order (only `keys`, given)."""
    items = {item["slot"]: item for item in instance.plan_items or []}
    bindings = instance.bindings if instance.status == InstanceStatus.READY else None

    def part(key: str) -> Part:
        item = items[key]
        value = bindings[key] if bindings and key in bindings else item.get("value")
        pending = value is None and item.get("route") == Route.ASK
        text = "" if pending else value_text(value, compact=True)
        if len(text) > limit:
            text = text[: limit - 1] + "…"
        flagged = bool(hidden_characters([item.get("label"), value]))
        mixed = mixed_script_note([item.get("label"), value])
        return Part(item.get("label") or key, text, pending, flagged, mixed)

    return {k: part(k) for k in items if keys is None or k in keys}


def restatement(instance: TaskInstance, decisions: list[DecisionView]) -> list[Sentence]:
    """The action in plain words, one sentence per decision: "Send transfer: amount 250, …".

    Values come from the last plan (or the final bindings): what would bind if the person
    agreed now. Values that feed no decision close with "Also: …".
    """
    parts = value_parts(instance)
    sentences = []
    fed: set[str] = set()
    for decision in decisions:
        keys = [k for k in parts if k in decision.slot_keys]
        fed.update(keys)
        sentences.append(Sentence(decision.label, [parts[k] for k in keys]))
    rest = [k for k in parts if k not in fed]
    if rest:
        action = "Also" if sentences else instance.task_class.name
        sentences.append(Sentence(action, [parts[k] for k in rest]))
    return sentences


SUBJECT_CHARS = 40


def subject_text(instance: TaskInstance) -> str:
    """What this run acts on, as people tell its runs apart ("order 1043"): its task class's
    subject key in words, and that slot's value as it would bind, else the world's entry of
    that key when it is a plain value; "" when the class names no subject or it is unknown."""
    key = instance.task_class.subject_key
    if not key:
        return ""
    item = next((i for i in instance.plan_items or [] if i.get("slot") == key), None)
    value = item.get("value") if item is not None else None
    if value is None:
        stated = (instance.world or {}).get(key)
        value = stated if isinstance(stated, str | int | float) else None
    if value is None or isinstance(value, bool):
        return ""
    text = value_text(value, compact=True)
    if len(text) > SUBJECT_CHARS:
        text = text[: SUBJECT_CHARS - 1] + "…"
    return f"{key.replace('_', ' ')} {text}"
