"""Make characters that could deceive a reader visible, as ⟨U+202E⟩.

Pure Python, no Django: the pages use it through the `console` template library and the API can
use it to flag values too.

What is revealed, and why:
- format characters (Unicode category Cf): the bidirectional overrides, embeddings and isolates
  (U+202A-U+202E, U+2066-U+2069), the marks (U+200E, U+200F, U+061C), the zero-width characters
  (U+200B-U+200D, U+2060, U+FEFF), the soft hyphen and the tag characters. None of them shows a
  glyph of its own; several reorder or hide what a person reads;
- control characters (Cc, C0 and C1) except newline and tab, which a multi-line value (an
  address) uses legitimately and which the pages show as line breaks and indents;
- the line and paragraph separators (U+2028, U+2029) and lone surrogates (which could not even
  be written out as UTF-8).
"""

from __future__ import annotations

import json
import unicodedata
from typing import Any

KEPT = frozenset("\n\t")
REVEALED_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})


def is_hidden(char: str) -> bool:
    """Is this one character invisible or deceptive when printed as it is?"""
    return char not in KEPT and unicodedata.category(char) in REVEALED_CATEGORIES


def code(char: str) -> str:
    return f"U+{ord(char):04X}"


def reveal(text: str) -> str:
    """The text with every hidden character replaced by ⟨U+XXXX⟩."""
    return "".join(f"⟨{part}⟩" if hidden else part for part, hidden in reveal_parts(text))


def reveal_parts(text: str) -> list[tuple[str, bool]]:
    """The text cut into (plain text, False) and (code "U+XXXX", True) parts, so that a page can
    mark the revealed characters apart from text that merely looks like a marker."""
    parts: list[tuple[str, bool]] = []
    plain: list[str] = []
    for char in text:
        if is_hidden(char):
            if plain:
                parts.append(("".join(plain), False))
                plain = []
            parts.append((code(char), True))
        else:
            plain.append(char)
    if plain:
        parts.append(("".join(plain), False))
    return parts


def hidden_characters(value: Any) -> list[str]:
    """The hidden characters in a JSON value (strings and object keys, at any depth), as
    sorted "U+XXXX" codes without repeats; [] when there is none."""
    found: set[str] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found.update(code(c) for c in item if is_hidden(c))
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return sorted(found)


def has_hidden(value: Any) -> bool:
    return bool(hidden_characters(value))


def plain_text(value: Any, *, compact: bool = False) -> str:
    """A JSON value as text, hidden characters still in it: text as it is (no quotes), objects and
    lists as JSON (indented, or on one line when `compact`), numbers, booleans and null as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict | list):
        if compact:
            return json.dumps(value, ensure_ascii=False, sort_keys=True)
        return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)
    return json.dumps(value)


def display_text(value: Any, *, compact: bool = False) -> str:
    """A JSON value as a person should read it, hidden characters revealed as ⟨U+XXXX⟩."""
    return reveal(plain_text(value, compact=compact))
