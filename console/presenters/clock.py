"""One clock for every page: a moment is written one way, "4 Dec 2026, 18:23 UTC", in the
person's time zone when the request knows it (Django's active time zone) and else in UTC, with
the zone's name always said; a moment to come can also be said from now ("in 3 hours").

Pages use it through the `when` and `expires` template filters (`console_tags`), so no
template formats a date itself.
"""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone
from django.utils.timesince import timesince, timeuntil

FORMAT = "%-d %b %Y, %H:%M"


def moment_text(value: datetime) -> str:
    """ "4 Dec 2026, 18:23 UTC": the moment in the active time zone, which is named."""
    local = timezone.localtime(value) if timezone.is_aware(value) else value
    zone = local.tzname() or "UTC"
    return f"{local.strftime(FORMAT)} {zone}"


def from_now(value: datetime, now: datetime | None = None) -> str:
    """ "in 3 hours", "5 minutes ago", or "now" within a minute: the largest unit only."""
    now = now or timezone.now()
    if abs((value - now).total_seconds()) < 60:
        return "now"
    if value > now:
        return f"in {timeuntil(value, now, depth=1)}"
    return f"{timesince(value, now, depth=1)} ago"
