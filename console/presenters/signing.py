"""The review-and-sign page: every binding of the action as it would be signed, with
what changed marked: a value the person edited, and world details that changed since a carried
value was acquired."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from beliefs.domain.worlddiff import current_value
from beliefs.models import Prompt, PromptState, TaskInstance
from console.templatetags.reveal import hidden_characters


@dataclass
class BindingRow:
    slot: str
    label: str
    value: Any
    edited: bool = False  # the person typed a new value over the one offered
    before: Any = None  # the value offered, when edited
    world_changes: list[dict[str, Any]] = field(default_factory=list)
    source: str = ""
    flagged: bool = False
    # The world's current value where a changed detail stated this value itself (the
    # registry's new LEI): what "use the current value" asks with. None: there is none.
    world_value: Any = None

    @property
    def changed(self) -> bool:
        return self.edited or bool(self.world_changes)


def binding_rows(instance: TaskInstance, prompts: list[Prompt]) -> list[BindingRow]:
    """One row per binding, in the plan's order. The prompt a slot was settled by (answered,
    or the open assumption) tells what changed."""
    settled: dict[str, Prompt] = {}
    for prompt in prompts:  # in slot order, oldest first: the last one of a slot wins
        if prompt.state in (PromptState.ANSWERED, PromptState.OPEN):
            settled[prompt.slot.key] = prompt
    bindings = instance.bindings or {}
    rows = []
    for item in instance.plan_items or []:
        key = item["slot"]
        value = bindings.get(key, item.get("value"))
        row = BindingRow(slot=key, label=item.get("label") or key, value=value)
        belief = item.get("belief") or {}
        row.source = str(belief.get("source") or "")
        by = settled.get(key)
        if by is not None:
            if by.action == "edit":
                row.edited, row.before = True, by.prefill
            row.world_changes = [e for e in by.world_diff or [] if e.get("change") != "unchanged"]
            if by.state == PromptState.ANSWERED:
                row.world_value = current_value(value, row.world_changes)
        row.flagged = bool(hidden_characters([row.label, value]))
        rows.append(row)
    return rows
