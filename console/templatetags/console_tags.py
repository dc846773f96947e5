"""Template filters for untrusted values: `{% load console_tags %}`.

Every filter returns plain text, never markup, so autoescape still applies to what it returns.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django import template

from console.templatetags.reveal import display_text, hidden_characters

register = template.Library()


@register.filter
def shown(value: Any) -> str:
    """A JSON value as text for a person: hidden characters revealed as ⟨U+XXXX⟩."""
    return display_text(value)


@register.filter
def hidden_codes(value: Any) -> str:
    """The hidden characters of a value as "U+202E, U+200B", or "" when there is none."""
    return ", ".join(hidden_characters(value))


@register.filter
def short(text: Any, limit: int = 60) -> str:
    """Cut long text to `limit` characters with an ellipsis (for one-line summaries)."""
    text = str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


@register.filter
def duration(value: timedelta | None) -> str:
    """A lockout's length in words: "15 minutes", "1 hour"."""
    if not isinstance(value, timedelta):
        return ""
    minutes = max(1, round(value.total_seconds() / 60))
    if minutes % 60 == 0:
        hours = minutes // 60
        return f"{hours} hour{'s' if hours != 1 else ''}"
    return f"{minutes} minute{'s' if minutes != 1 else ''}"
