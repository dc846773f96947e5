"""The proposal contract's outcomes in words, for the reviewer pages and the glossary.

Each invariant and check stage that can decide a verdict is explained here once; the detail
page's "Decided by" line and the glossary both read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Explanation:
    code: str
    title: str
    text: str


DECIDERS: tuple[Explanation, ...] = (
    Explanation(
        "schema",
        "Schema",
        "the proposal does not have the contract's shape, so nothing else was checked.",
    ),
    Explanation(
        "references",
        "References",
        "the proposal names nodes that do not exist, or adds what already exists.",
    ),
    Explanation(
        "identity",
        "Identity rule",
        "an added unknown repeats an existing unresolved one; reuse that node.",
    ),
    Explanation("V1", "V1", "declared true but no meaningful change, so REJECT."),
    Explanation(
        "V2", "V2", "declared false but the graph changes, so ACCEPT with a diagnostic note."
    ),
    Explanation(
        "V3",
        "V3",
        "userSupportedMeaning is present but the declaration is missing: REJECT under the "
        "strict policy; under lenient, REJECT only when nothing changes.",
    ),
    Explanation("V4", "V4", "declared false and no meaningful change, so PASS."),
)
BY_CODE = {e.code: e for e in DECIDERS}
INVARIANTS = tuple(e for e in DECIDERS if e.code.startswith("V"))


def decided_by_text(decided_by: str | None, update: Any) -> str:
    """What decided a validation's verdict, in one sentence."""
    if decided_by:
        found = BY_CODE.get(decided_by)
        return f"{found.title}: {found.text}" if found else decided_by
    update = update if isinstance(update, dict) else {}
    if update.get("answerMeaning") is None:
        return "No invariant applies: the update has no answerMeaning."
    return "No invariant fired: declared true and the proposal changes the graph."
