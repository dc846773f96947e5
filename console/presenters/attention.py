"""Attention on a card: each changed detail a confirm must acknowledge, as the
sentence a person ticks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from beliefs.domain.attention import ChangedDetail
from console.templatetags.reveal import plain_text

# An acknowledgement names a changed detail's values up to this many characters (the world
# diff above it shows them whole).
ACK_VALUE_CHARS = 120


def _short(value: Any) -> str:
    text = plain_text(value, compact=True)
    return text if len(text) <= ACK_VALUE_CHARS else text[:ACK_VALUE_CHARS].rstrip() + "…"


@dataclass(frozen=True)
class Acknowledgement:
    """One changed detail as the sentence a person ticks: "The holder is now ‘B. Exampel
    Holdings’ (was ‘Bob Example’)"; its parts stay apart, for the template to escape."""

    detail: ChangedDetail
    ticked: bool

    @property
    def key(self) -> str:
        return self.detail.key

    @property
    def added(self) -> bool:
        return self.detail.change == "added"

    @property
    def removed(self) -> bool:
        return self.detail.change == "removed"

    @property
    def old(self) -> str:
        return _short(self.detail.old)

    @property
    def new(self) -> str:
        return _short(self.detail.new)
