"""The pages' name for `beliefs.domain.reveal`, where the detection lives (pure, so that the
models' `__str__` can reveal too)."""

from __future__ import annotations

from beliefs.domain.reveal import (
    KEPT,
    LOOKALIKE_SCRIPTS,
    REVEALED_CATEGORIES,
    code,
    display_text,
    has_hidden,
    hidden_characters,
    is_hidden,
    mixed_script_note,
    mixed_script_words,
    plain_text,
    reveal,
    reveal_parts,
    script_of,
    word_scripts,
)

__all__ = [
    "KEPT",
    "LOOKALIKE_SCRIPTS",
    "REVEALED_CATEGORIES",
    "code",
    "display_text",
    "has_hidden",
    "hidden_characters",
    "is_hidden",
    "mixed_script_note",
    "mixed_script_words",
    "plain_text",
    "reveal",
    "reveal_parts",
    "script_of",
    "word_scripts",
]
