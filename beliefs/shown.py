"""Untrusted values as HTML, for every page that shows them: the console's templates (through
the `console_tags` filters) and the admin.

Here, below both, so that the admin (in `beliefs`) need not reach up into `console` for them.
Every piece of a value is escaped; only the markers' own spans are markup.
"""

from __future__ import annotations

from typing import Any

from django.utils.html import conditional_escape, format_html
from django.utils.safestring import mark_safe

from beliefs.domain.reveal import mixed_script_note, plain_text, reveal_parts, value_text


def shown(value: Any) -> str:
    """A JSON value as text for a person, hidden characters revealed as a marked ⟨U+XXXX⟩.

    Every piece of the value is escaped; only the marker's own span is markup, so a value that
    merely contains the text "⟨U+202E⟩" cannot pass for a revealed character.
    """
    return mark_safe(  # noqa: S308 - built from escaped parts only
        "".join(
            format_html('<span class="hidden-char" title="hidden character {}">⟨{}⟩</span>', p, p)
            if hidden
            else conditional_escape(p)
            for p, hidden in reveal_parts(value_text(value))
        )
    )


MIXED_SCRIPTS_TITLE = (
    "Letters from different alphabets that look alike are mixed in one word, so it may not "
    "be the word it looks like"
)


def mixed_mark(value: Any) -> str:
    """A visible mark, with its explanation, after a value whose words mix look-alike scripts
    (Latin with Cyrillic or Greek); "" for any other value."""
    note = mixed_script_note(value)
    if not note:
        return ""
    return format_html(
        ' <span class="flag-inline mixed-script" role="note" title="{}">'
        "\N{WARNING SIGN} look-alike letters: {}</span>",
        MIXED_SCRIPTS_TITLE,
        note,
    )


def shown_checked(value: Any) -> str:
    """`shown`, then the mixed-script mark: for staff pages, which show values in tables."""
    return format_html("{}{}", shown(value), mixed_mark(value))


def shown_list(value: Any) -> str:
    """A list as "a, b, c", each item shown and checked like `shown_checked`; anything else
    (a stored value that is not a list) shown as it is."""
    if not isinstance(value, list):
        return shown_checked(value)
    return mark_safe(  # noqa: S308 - built from escaped parts only
        ", ".join(shown_checked(plain_text(item, compact=True)) for item in value)
    )
