"""Make characters that could deceive a reader visible, as ⟨U+202E⟩.

Pure Python, no Django: the pages use it through the `console` template library, the models'
`__str__` (what the admin shows of a runtime, a key, a task class, an endpoint) through it too,
and the API can use it to flag values.

What is revealed, and why:
- format characters (Unicode category Cf): the bidirectional overrides, embeddings and isolates
  (U+202A-U+202E, U+2066-U+2069), the marks (U+200E, U+200F, U+061C), the zero-width characters
  (U+200B-U+200D, U+2060, U+FEFF), the soft hyphen and the tag characters. None of them shows a
  glyph of its own; several reorder or hide what a person reads;
- control characters (Cc, C0 and C1) except newline and tab, which a multi-line value (an
  address) uses legitimately and which the pages show as line breaks and indents;
- the line and paragraph separators (U+2028, U+2029) and lone surrogates (which could not even
  be written out as UTF-8).

Mixed scripts are flagged, not changed: a word whose letters mix Latin with Cyrillic or Greek
(a Cyrillic "р" in "рayments", a Greek "ο" in "gοogle") reads as a Latin word it is not. A
word is a run of letters and marks; each letter's script is the first word of its Unicode name
("CYRILLIC SMALL LETTER ER"). Text in one script, accented Latin ("Müller"), CJK beside Latin
and words of different scripts side by side ("Müller Иванов") are not flagged; a whole word
spelt in look-alikes of one other script ("раура") cannot be told apart from that script's
own words this way, and is not flagged either.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterator
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


def texts_in(value: Any) -> Iterator[str]:
    """Every string in a JSON value: itself, or its objects' keys and values and its lists'
    items, however deep."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)


def hidden_characters(value: Any) -> list[str]:
    """The hidden characters in a JSON value (strings and object keys, at any depth), as
    sorted "U+XXXX" codes without repeats; [] when there is none."""
    return sorted({code(c) for text in texts_in(value) for c in text if is_hidden(c)})


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


def value_text(value: Any, *, compact: bool = False) -> str:
    """A value as a person reads it: a yes/no value as "Yes" or "No" (never JSON's true or
    false), anything else as `plain_text`, hidden characters still in it."""
    if isinstance(value, bool):
        return "Yes" if value else "No"
    return plain_text(value, compact=compact)


# The scripts whose letters pass for one another.
LOOKALIKE_SCRIPTS = frozenset({"LATIN", "CYRILLIC", "GREEK"})


def script_of(char: str) -> str | None:
    """LATIN, CYRILLIC or GREEK for a letter of one of those scripts, else None."""
    if not unicodedata.category(char).startswith("L"):
        return None
    for word in unicodedata.name(char, "").split():
        if word in LOOKALIKE_SCRIPTS:
            return word
    return None


def _words(text: str) -> list[str]:
    words, word = [], []
    for char in text:
        if unicodedata.category(char)[0] in "LM":
            word.append(char)
        elif word:
            words.append("".join(word))
            word = []
    if word:
        words.append("".join(word))
    return words


def word_scripts(word: str) -> list[str]:
    """The look-alike scripts a word's letters come from, sorted."""
    return sorted({script for char in word if (script := script_of(char)) is not None})


def mixed_script_words(value: Any) -> list[str]:
    """The words of a JSON value (strings and object keys, at any depth) that mix Latin with
    Cyrillic or Greek letters, sorted, without repeats; [] when there is none."""
    return sorted({w for text in texts_in(value) for w in _words(text) if len(word_scripts(w)) > 1})


def mixed_script_note(value: Any) -> str:
    """What a flag says of a value's mixed-script words, naming the letters of the word's
    lesser script, or "" when it has none: '"рayments" mixes Cyrillic and Latin letters
    (р is U+0440 CYRILLIC SMALL LETTER ER)'."""
    notes = []
    for word in mixed_script_words(value):
        scripts = [script_of(c) for c in word]
        counts = {s: scripts.count(s) for s in word_scripts(word)}
        main = max(counts, key=lambda s: (counts[s], s == "LATIN"))
        odd = list(
            dict.fromkeys(c for c, s in zip(word, scripts, strict=True) if s not in (None, main))
        )
        named = ", ".join(f"{c} is {code(c)} {unicodedata.name(c)}" for c in odd[:3])
        more = f" and {len(odd) - 3} more" if len(odd) > 3 else ""
        together = " and ".join(s.capitalize() for s in counts)
        notes.append(
            f"\N{LEFT DOUBLE QUOTATION MARK}{reveal(word)}\N{RIGHT DOUBLE QUOTATION MARK} "
            f"mixes {together} letters ({named}{more})"
        )
    return "; ".join(notes)
