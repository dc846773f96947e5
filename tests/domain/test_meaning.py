"""Meanings that expire and dates that must lie ahead (pure)."""

from __future__ import annotations

import itertools
from datetime import UTC, date, datetime, timedelta

import pytest

from beliefs.domain.meaning import (
    check_valid_until,
    date_in_past,
    meaning_expired,
    parse_instant,
    valid_until,
)

NOW = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "instant"),
    [
        ("2026-12-04T12:00:00Z", NOW),
        ("2026-12-04T13:00:00+01:00", NOW),
        ("2026-12-04T12:00:00", NOW),  # no zone: UTC
        ("2026-12-03", datetime(2026, 12, 4, tzinfo=UTC)),  # a date lasts its whole day
    ],
)
def test_it_reads_iso_8601_instants(text: str, instant: datetime) -> None:
    assert parse_instant(text) == instant


@pytest.mark.parametrize("bad", ["", "soon", "2026-13-01", 20261204, None, ["2026-12-01"]])
def test_it_refuses_what_is_not_an_instant_and_treats_it_as_past(bad: object) -> None:
    ref = {"valid_until": bad}
    if bad is None:
        assert check_valid_until(ref) is None and valid_until(ref) is None
        return
    assert check_valid_until(ref) is not None
    assert meaning_expired(ref, NOW, in_console=False, acquired_at=NOW)


def test_it_expires_exactly_from_valid_until_on_unless_the_person_answered_after_it() -> None:
    until = NOW - timedelta(hours=1)
    ref = {"policy": "v4", "valid_until": until.isoformat()}
    for offset, in_console, acquired in itertools.product(
        (-2, 0, 2), (False, True), (until - timedelta(days=1), until, until + timedelta(minutes=5))
    ):
        now = until + timedelta(hours=offset)
        expired = meaning_expired(ref, now, in_console=in_console, acquired_at=acquired)
        past = now >= until
        answered_after = in_console and acquired >= until
        assert expired == (past and not answered_after), (offset, in_console, acquired)
    assert not meaning_expired({"policy": "v4"}, NOW, in_console=False, acquired_at=NOW)
    assert not meaning_expired(None, NOW, in_console=False, acquired_at=NOW)


def test_it_finds_past_dates_and_non_dates() -> None:
    today = date(2026, 12, 4)
    assert date_in_past("2026-12-03", today)
    assert not date_in_past("2026-12-04", today)
    assert not date_in_past("2026-12-05T09:00:00Z", today)
    for not_a_date in ("tomorrow", 20261205, None, ""):
        assert date_in_past(not_a_date, today)
