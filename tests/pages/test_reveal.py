"""The pure detection of characters that could deceive a reader."""

from __future__ import annotations

import subprocess
import sys

import pytest

from console.templatetags.console_tags import shown
from console.templatetags.reveal import display_text, hidden_characters, reveal, reveal_parts


@pytest.mark.parametrize(
    "char",
    [
        *"\u202a\u202b\u202c\u202d\u202e",  # bidi embeddings and overrides
        *"\u2066\u2067\u2068\u2069",  # bidi isolates
        *"\u200b\u200c\u200d\u2060\ufeff",  # zero-width
        *"\u200e\u200f\u061c",  # direction marks
        "\x00",
        "\x07",
        "\x1b",
        "\r",
        "\x7f",
        "\x85",
        "\x9b",  # C0, DEL and C1 controls
        "\u2028",
        "\u2029",  # line and paragraph separators
    ],
)
def test_it_reveals_each_deceptive_character(char: str) -> None:
    code = f"U+{ord(char):04X}"
    assert reveal(f"a{char}b") == f"a⟨{code}⟩b"
    assert hidden_characters({"k": [f"x{char}"]}) == [code]


def test_it_keeps_newline_tab_and_ordinary_text() -> None:
    text = "Street 1\n\tBüro 2 — 東京 ✓"
    assert reveal(text) == text
    assert hidden_characters(text) == []


def test_it_finds_hidden_characters_in_object_keys_at_any_depth() -> None:
    value = {"outer": [{"in\u200bner": 1}], "ok": "fine\u202e"}
    assert hidden_characters(value) == ["U+200B", "U+202E"]


def test_it_shows_objects_as_indented_json_with_characters_revealed() -> None:
    assert display_text({"b": 1, "a": "x\u202ey"}) == '{\n  "a": "x⟨U+202E⟩y",\n  "b": 1\n}'
    assert display_text([1, True, None]) == "[\n  1,\n  true,\n  null\n]"
    assert display_text(250) == "250"
    assert display_text(False) == "false"
    assert display_text("<b>") == "<b>"  # escaping is the template's job, not this module's


def test_it_reveals_a_lone_surrogate_instead_of_failing_to_encode_it() -> None:
    shown = display_text("a\ud800b")
    assert shown == "a⟨U+D800⟩b"
    shown.encode("utf-8")


def test_it_imports_no_django() -> None:
    code = (
        "import sys, console.templatetags.reveal; "
        "print(any(m == 'django' or m.startswith('django.') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_it_cuts_text_into_plain_parts_and_revealed_codes() -> None:
    assert reveal_parts("a\u202e\u200bb") == [
        ("a", False),
        ("U+202E", True),
        ("U+200B", True),
        ("b", False),
    ]
    assert reveal_parts("") == []


def test_it_writes_objects_on_one_line_when_compact() -> None:
    assert display_text({"b": [1], "a": "x"}, compact=True) == '{"a": "x", "b": [1]}'


def test_its_filter_escapes_every_part_and_marks_only_revealed_characters() -> None:
    html = shown("<b>\u202e⟨U+0000⟩")
    assert html == (
        '&lt;b&gt;<span class="hidden-char" title="hidden character U+202E">⟨U+202E⟩</span>⟨U+0000⟩'
    )
