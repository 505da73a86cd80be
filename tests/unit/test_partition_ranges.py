"""The partitions' date math: months, ISO weeks and days in UTC, ranges ahead, gaps."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta, timezone

import pytest

from scheduler_app.partitions.ranges import (
    Interval,
    Range,
    ahead,
    floor,
    gaps,
    range_of,
    wholly_before,
)


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


def span(start: datetime, end: datetime) -> Range:
    return Range(start=start, end=end)


@pytest.mark.parametrize(
    ("interval", "start", "end"),
    [
        (Interval.MONTH, utc(2026, 12, 1), utc(2027, 1, 1)),
        (Interval.WEEK, utc(2026, 12, 28), utc(2027, 1, 4)),  # Monday to Monday
        (Interval.DAY, utc(2026, 12, 31), utc(2027, 1, 1)),
    ],
)
def test_the_range_of_an_instant(interval: Interval, start: datetime, end: datetime) -> None:
    assert range_of(utc(2026, 12, 31, 23, 59, 59), interval) == span(start, end)


def test_bounds_are_utc_midnights_whatever_the_zone_of_the_instant() -> None:
    paris_new_year = datetime(2027, 1, 1, 0, 30, tzinfo=timezone(timedelta(hours=1)))
    assert floor(paris_new_year, Interval.MONTH) == utc(2026, 12, 1)
    assert range_of(paris_new_year, Interval.DAY).suffix == "p20261231"


def test_ahead_is_the_current_period_and_the_next_ones() -> None:
    ranges = ahead(utc(2026, 11, 15), Interval.MONTH, 3)
    assert [r.suffix for r in ranges] == ["p20261101", "p20261201", "p20270101", "p20270201"]
    assert all(a.end == b.start for a, b in itertools.pairwise(ranges))
    assert ahead(utc(2026, 11, 15), Interval.DAY, 0) == [span(utc(2026, 11, 15), utc(2026, 11, 16))]


def test_gaps_clip_new_ranges_to_the_partitions_that_exist() -> None:
    month = span(utc(2026, 12, 1), utc(2027, 1, 1))
    assert gaps(month, []) == [month]
    assert gaps(month, [month]) == []
    weekly = [span(utc(2026, 11, 30), utc(2026, 12, 7)), span(utc(2026, 12, 14), utc(2026, 12, 21))]
    assert gaps(month, weekly) == [
        span(utc(2026, 12, 7), utc(2026, 12, 14)),
        span(utc(2026, 12, 21), utc(2027, 1, 1)),
    ]


def test_only_ranges_wholly_before_the_cutoff_are_old() -> None:
    ranges = ahead(utc(2026, 1, 1), Interval.MONTH, 3)
    assert [r.suffix for r in wholly_before(ranges, utc(2026, 3, 1))] == ["p20260101", "p20260201"]
    assert wholly_before(ranges, utc(2026, 1, 31)) == []
