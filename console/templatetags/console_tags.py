"""Template filters for untrusted values: `{% load console_tags %}`.

`shown` escapes every piece of a value itself and marks the revealed characters; `shown_text`
returns plain text, which autoescape handles.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django import template
from django.utils.html import format_html

from beliefs.domain.reveal import value_text
from beliefs.models import Belief
from beliefs.shown import mixed_mark, shown, shown_checked, shown_list
from console.presenters import clock
from console.presenters.restatement import subject_text
from console.presenters.words import reporter, source_words
from console.templatetags.reveal import display_text

register = template.Library()


# The filters that show untrusted values live below the pages (the admin uses them too).
register.filter("shown", shown)
register.filter("mixed_mark", mixed_mark)
register.filter("shown_checked", shown_checked)
register.filter("shown_list", shown_list)


@register.filter
def source_badge(belief: Belief) -> str:
    """Who put the value on record, and how, in the words of `SOURCE_WORDS`; the runtime's
    name is shown like any untrusted text."""
    badge = source_words(belief).badge
    before, _, after = badge.partition("{who}")
    who = shown(reporter(belief)) if "{who}" in badge else ""
    return format_html("{}{}{}", before, who, after)


@register.filter
def shown_order(order: Any) -> str:
    """A scope order, lowest first, as "read < write < admin", each scope revealed and escaped
    once (`join` would escape the scopes before `shown` escapes them again); "none" for none."""
    if not order:
        return "none"
    return shown(" < ".join(str(scope) for scope in order))


@register.filter
def shown_key(key: Any) -> str:
    """A key of a runtime's world ("account_holder") as words ("account holder"), revealed and
    escaped like any untrusted text."""
    return shown(str(key).replace("_", " "))


# A value longer than this (characters or lines) is shown clamped, with a control to read it all.
CLAMP_CHARS = 280
CLAMP_LINES = 6


@register.filter
def clamped(value: Any) -> str:
    """`shown`, but a long value shows its beginning and a "Show all" control for the rest.

    No script is involved: the full value sits in a <details> element whose opening hides the
    preview (console.css), so it also works without JavaScript.
    """
    text = value_text(value)
    lines = text.split("\n")
    if len(text) <= CLAMP_CHARS and len(lines) <= CLAMP_LINES:
        return format_html('<span class="value">{}</span>', shown(value))
    preview = "\n".join(lines[:CLAMP_LINES])[:CLAMP_CHARS].rstrip() + "…"
    return format_html(
        '<span class="long-value"><span class="value long-preview">{}</span>'
        '<details class="long-full"><summary>Show all {} characters</summary>'
        '<span class="value">{}</span></details></span>',
        shown(preview),
        f"{len(text):,}",
        shown(value),
    )


@register.filter
def shown_text(value: Any) -> str:
    """The same as plain text, for places that cannot hold markup (a page title)."""
    return display_text(value)


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


@register.filter
def seconds_words(value: timedelta | None) -> str:
    """A short wait in words, to the second: "45 s", "12 min 5 s", "3 h 20 min"."""
    if not isinstance(value, timedelta):
        return ""
    total = int(value.total_seconds())
    if total < 60:
        return f"{total} s"
    minutes, seconds = divmod(total, 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s" if seconds else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if minutes else f"{hours} h"


@register.filter
def when(value: datetime | None) -> str:
    """A moment as every page writes it (`clock.moment_text`), in a <time> element; "" for
    none."""
    if not isinstance(value, datetime):
        return ""
    return format_html('<time datetime="{}">{}</time>', value.isoformat(), clock.moment_text(value))


@register.filter
def expires(value: datetime | None, now: datetime | None = None) -> str:
    """An expiry: "in 3 hours (4 Dec 2026, 18:23 UTC)", the moment as `when` writes it."""
    if not isinstance(value, datetime):
        return ""
    return format_html("{} ({})", clock.from_now(value, now), when(value))


@register.filter
def subject(instance: Any) -> str:
    """What a run acts on ("order 1043", `restatement.subject_text`), as plain text for `shown`;
    "" when its task class names no subject."""
    return subject_text(instance) if hasattr(instance, "task_class") else ""
