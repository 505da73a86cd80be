"""Interval grids, one-time rules, bounds, validation errors, previous_slot and describe()."""

from __future__ import annotations

import itertools
import time
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from scheduler_app.errors import (
    InvalidRule,
    NaiveDatetime,
    ScheduleValidationError,
    UnknownTimezone,
)
from scheduler_app.timing import (
    build_timing,
    describe,
    iter_annotated,
    next_after,
    parse_duration,
    previous_slot,
    slots_between,
    zones,
)

from .helpers import cron, iso, utc, window

# --- interval: a fixed-rate grid anchored at slot 0 -----------------------------------------


def test_anchor_is_slot_zero_and_the_grid_is_fixed() -> None:
    timing = build_timing(kind="interval", rule="90s", anchor=utc(2024, 1, 1))
    assert next_after(timing, utc(2023, 12, 31)) == utc(2024, 1, 1)
    assert next_after(timing, utc(2024, 1, 1)) == utc(2024, 1, 1, 0, 1, 30)
    assert next_after(timing, utc(2024, 1, 1, 0, 1, 29)) == utc(2024, 1, 1, 0, 1, 30)
    assert window(timing, utc(2024, 1, 1, 0, 2), utc(2024, 1, 1, 0, 6)) == [
        "2024-01-01T00:03Z",
        "2024-01-01T00:04Z",  # 00:04:30
        "2024-01-01T00:06Z",
    ]


def test_old_anchor_keeps_the_exact_grid() -> None:
    anchor = utc(2014, 1, 1, 0, 0, 7)
    timing = build_timing(kind="interval", rule=7, anchor=anchor)
    slot = next_after(timing, utc(2024, 6, 1, 12))
    assert slot is not None
    assert (slot - anchor) % timedelta(seconds=7) == timedelta(0)
    assert timedelta(0) < slot - utc(2024, 6, 1, 12) <= timedelta(seconds=7)


def test_interval_ignores_dst() -> None:
    # Europe/Riga springs forward at 2024-03-31 01:00Z: an hourly grid stays 3600 s apart, and
    # a daily grid stays 24 h apart (09:00 local becomes 10:00 local).
    hourly = build_timing(
        kind="interval", rule="1h", timezone="Europe/Riga", anchor=utc(2024, 1, 1)
    )
    slots = slots_between(hourly, utc(2024, 3, 30, 22), utc(2024, 3, 31, 4))
    assert [b - a for a, b in itertools.pairwise(slots)] == [timedelta(hours=1)] * 5
    daily = build_timing(
        kind="interval", rule="1d", timezone="Europe/Riga", anchor=utc(2024, 3, 30, 7)
    )
    annotated = iter_annotated(daily, utc(2024, 3, 30, 8))
    first, second = next(annotated), next(annotated)
    assert (first[0], first[1].hour, first[2]) == (utc(2024, 3, 31, 7), 10, None)
    assert (second[0], second[1].hour) == (utc(2024, 4, 1, 7), 10)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90),
        ("15m", 900),
        ("6h", 21600),
        ("1h30m", 5400),
        ("1h 30m", 5400),
        ("PT15M", 900),
        ("pt1h", 3600),
        ("P1DT2H", 93600),
        ("1d", 86400),
        ("2w", 1209600),
        ("3600", 3600),
        (5, 5),
        (2.0, 2),
        (timedelta(minutes=2), 120),
    ],
)
def test_valid_durations(text: str | int | float | timedelta, seconds: int) -> None:
    assert parse_duration(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize(
    "text",
    ["0s", "-5", "abc", "", " ", "P", "PT", "P1DT", "PT0S", "1.5", "1h-30m", "5x", "²",
     "\u0661\u0662", "999999999w", "P999999999W", 0, -1, 0.5, 1e300, 10**20, float("nan"),
     True, None, timedelta(0), timedelta(seconds=-1), timedelta(milliseconds=1500)],
)  # fmt: skip
def test_invalid_durations(text: object) -> None:
    with pytest.raises(InvalidRule) as caught:
        parse_duration(text, "every")  # type: ignore[arg-type]
    assert caught.value.field == "every"
    assert (
        "e.g." in caught.value.message
        or "second" in caught.value.message
        or "years" in (caught.value.message)
    )


@pytest.mark.parametrize("every", ["0s", 0, -60, "-5"])
def test_interval_must_be_positive(every: object) -> None:
    with pytest.raises(InvalidRule) as caught:
        build_timing(kind="interval", rule=every, anchor=utc(2024, 1, 1))  # type: ignore[arg-type]
    assert caught.value.field == "every"


def test_interval_needs_an_aware_anchor() -> None:
    with pytest.raises(InvalidRule) as caught:
        build_timing(kind="interval", rule="15m")
    assert caught.value.field == "anchor"
    with pytest.raises(NaiveDatetime) as naive:
        build_timing(kind="interval", rule="15m", anchor=datetime(2024, 1, 1))
    assert naive.value.field == "anchor"
    assert "no time zone" in naive.value.message


# --- once ------------------------------------------------------------------------------------


def test_once_at_an_aware_instant() -> None:
    at = datetime(2024, 6, 1, 12, 0, tzinfo=ZoneInfo("Europe/Riga"))  # +03:00 = 09:00Z
    timing = build_timing(kind="once", rule=at, timezone="America/New_York")
    assert next_after(timing, utc(2024, 1, 1)) == utc(2024, 6, 1, 9)
    assert next_after(timing, utc(2024, 6, 1, 9)) is None
    assert previous_slot(timing, utc(2030, 1, 1)) == utc(2024, 6, 1, 9)
    assert previous_slot(timing, utc(2024, 6, 1, 8, 59)) is None


def test_once_from_iso_strings() -> None:
    assert next_after(build_timing(kind="once", rule="2024-06-01T09:00:00Z"), utc(2024, 1, 1)) == (
        utc(2024, 6, 1, 9)
    )
    offset = build_timing(kind="once", rule="2024-06-01T12:00:00+03:00")
    assert next_after(offset, utc(2024, 1, 1)) == utc(2024, 6, 1, 9)
    # Naive: a local wall time in the zone (Riga is +03:00 in June).
    local = build_timing(kind="once", rule="2024-06-01T12:00:00", timezone="Europe/Riga")
    assert next_after(local, utc(2024, 1, 1)) == utc(2024, 6, 1, 9)
    with pytest.raises(InvalidRule) as caught:
        build_timing(kind="once", rule="next tuesday")
    assert caught.value.field == "at"


@pytest.mark.parametrize(
    ("local", "nonexistent", "ambiguous", "expected"),
    [
        # Riga gap on 2024-03-31 (03:00 -> 04:00 at 01:00Z) and fold on 2024-10-27.
        (datetime(2024, 3, 31, 3, 30), "auto", "auto", ["2024-03-31T01:30Z"]),
        (datetime(2024, 3, 31, 3, 30), "next_valid", "auto", ["2024-03-31T01:00Z"]),
        (datetime(2024, 3, 31, 3, 30), "skip", "auto", []),
        (datetime(2024, 10, 27, 3, 30), "auto", "auto", ["2024-10-27T00:30Z"]),
        (datetime(2024, 10, 27, 3, 30), "auto", "last", ["2024-10-27T01:30Z"]),
        (datetime(2024, 10, 27, 3, 30), "auto", "both", ["2024-10-27T00:30Z", "2024-10-27T01:30Z"]),
        (datetime(2024, 10, 27, 3, 30, 15, 999), "auto", "auto", ["2024-10-27T00:30Z"]),
    ],
)
def test_once_at_a_local_time_follows_the_dst_policy(
    local: datetime, nonexistent: str, ambiguous: str, expected: list[str]
) -> None:
    timing = build_timing(
        kind="once",
        rule=local,
        timezone="Europe/Riga",
        nonexistent=nonexistent,
        ambiguous=ambiguous,
    )
    assert window(timing, utc(2024, 1, 1), utc(2025, 1, 1)) == expected


# --- bounds ----------------------------------------------------------------------------------


def test_starts_at_and_ends_at_are_inclusive() -> None:
    timing = cron("0 * * * *", starts_at=utc(2024, 1, 1, 10), ends_at=utc(2024, 1, 1, 13))
    assert window(timing, utc(2024, 1, 1), utc(2024, 1, 2)) == [
        "2024-01-01T10:00Z",
        "2024-01-01T11:00Z",
        "2024-01-01T12:00Z",
        "2024-01-01T13:00Z",
    ]
    assert next_after(timing, utc(2024, 1, 1, 13)) is None
    late = cron("0 * * * *", starts_at=utc(2024, 1, 1, 10, 30))
    assert next_after(late, utc(2024, 1, 1)) == utc(2024, 1, 1, 11)


def test_max_count_counts_from_starts_at() -> None:
    timing = cron("0 * * * *", starts_at=utc(2024, 1, 1, 10), max_count=3)
    assert next_after(timing, utc(2024, 1, 1, 11, 30)) == utc(2024, 1, 1, 12)
    assert next_after(timing, utc(2024, 1, 1, 12)) is None
    assert window(timing, utc(2020, 1, 1), utc(2030, 1, 1)) == [
        "2024-01-01T10:00Z",
        "2024-01-01T11:00Z",
        "2024-01-01T12:00Z",
    ]
    grid = build_timing(kind="interval", rule="1m", anchor=utc(2024, 1, 1), max_count=2)
    assert slots_between(grid, utc(2023, 1, 1), utc(2025, 1, 1)) == [
        utc(2024, 1, 1),
        utc(2024, 1, 1, 0, 1),
    ]


@pytest.mark.parametrize(
    ("kwargs", "field", "error"),
    [
        ({"max_count": 3}, "max_count", InvalidRule),
        ({"max_count": 0, "starts_at": utc(2024, 1, 1)}, "max_count", InvalidRule),
        ({"max_count": True, "starts_at": utc(2024, 1, 1)}, "max_count", InvalidRule),
        ({"max_count": "3", "starts_at": utc(2024, 1, 1)}, "max_count", InvalidRule),
        ({"starts_at": utc(2024, 2, 1), "ends_at": utc(2024, 1, 1)}, "ends_at", InvalidRule),
        ({"starts_at": datetime(2024, 1, 1)}, "starts_at", NaiveDatetime),
        ({"ends_at": datetime(2024, 1, 1)}, "ends_at", NaiveDatetime),
        ({"nonexistent": "later"}, "dst.nonexistent", ScheduleValidationError),
        ({"ambiguous": "twice"}, "dst.ambiguous", ScheduleValidationError),
    ],
)
def test_invalid_bounds_and_policies(
    kwargs: dict[str, object], field: str, error: type[ScheduleValidationError]
) -> None:
    with pytest.raises(error) as caught:
        cron("0 * * * *", **kwargs)
    assert caught.value.field == field


def test_naive_instants_are_refused_everywhere() -> None:
    timing = cron("0 * * * *")
    naive = datetime(2024, 1, 1)
    for call in (
        lambda: next_after(timing, naive),
        lambda: slots_between(timing, naive, utc(2024, 1, 2)),
        lambda: slots_between(timing, utc(2024, 1, 1), naive),
        lambda: previous_slot(timing, naive),
        lambda: iter_annotated(timing, naive),
    ):
        with pytest.raises(NaiveDatetime):
            call()


@pytest.mark.parametrize("name", ["Mars/Olympus", "EST5", "Europe", "../../etc/passwd", "", "  ",
                                  "Europe/Riga\x00", "x" * 500])  # fmt: skip
def test_unknown_zone_says_how_to_fix(name: str) -> None:
    with pytest.raises(UnknownTimezone) as caught:
        cron("0 * * * *", name)
    assert caught.value.field == "timezone"
    assert "Europe/Riga" in caught.value.message  # an example of a valid name


def test_unknown_kind() -> None:
    with pytest.raises(InvalidRule) as caught:
        build_timing(kind="weekly", rule="x")
    assert caught.value.field == "kind"


# --- previous_slot ---------------------------------------------------------------------------


def test_previous_slot() -> None:
    hourly = cron("0 * * * *")
    assert previous_slot(hourly, utc(2024, 1, 1, 10, 30)) == utc(2024, 1, 1, 10)
    assert previous_slot(hourly, utc(2024, 1, 1, 10)) == utc(2024, 1, 1, 10)
    assert previous_slot(hourly, utc(2024, 1, 1, 10), inclusive=False) == utc(2024, 1, 1, 9)
    yearly = cron("0 0 29 2 *")
    assert previous_slot(yearly, utc(2027, 1, 1)) == utc(2024, 2, 29)
    bounded = cron("0 * * * *", starts_at=utc(2024, 1, 1, 10))
    assert previous_slot(bounded, utc(2024, 1, 1, 9, 59)) is None
    grid = build_timing(kind="interval", rule="1s", anchor=utc(2024, 1, 1))
    assert previous_slot(grid, utc(2023, 1, 1)) is None  # nothing before slot 0
    assert previous_slot(grid, utc(2024, 1, 1, 0, 0, 5, 500)) == utc(2024, 1, 1, 0, 0, 5)


def test_previous_slot_far_after_ends_at_is_fast() -> None:
    every_minute = cron("* * * * *", ends_at=utc(2020, 1, 1))
    started = time.perf_counter()
    assert previous_slot(every_minute, utc(2024, 1, 1)) == utc(2020, 1, 1)
    assert time.perf_counter() - started < 1.0


def test_previous_slot_near_the_start_of_the_calendar() -> None:
    once = build_timing(kind="once", rule=utc(2024, 1, 1))
    assert previous_slot(once, utc(2023, 1, 1)) is None
    assert previous_slot(once, datetime(1, 1, 1, tzinfo=timezone.utc)) is None  # noqa: UP017


def test_previous_slot_in_a_fold() -> None:
    # Riga 2024-10-27: 03:30 happens at 00:30Z and 01:30Z; '*/30' fires at both.
    timing = cron("*/30 * * * *", "Europe/Riga")
    assert iso(previous_slot(timing, utc(2024, 10, 27, 1, 10)) or utc(1, 1, 1)) == (
        "2024-10-27T01:00Z"
    )
    fixed = cron("30 3 * * *", "Europe/Riga")
    assert previous_slot(fixed, utc(2024, 10, 27, 1, 40)) == utc(2024, 10, 27, 0, 30)


# --- describe ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rule", "text"),
    [
        ("30 9 * * 1-5", "At 09:30, Monday through Friday, Europe/Riga"),
        ("30 9 * * MON-FRI", "At 09:30, Monday through Friday, Europe/Riga"),
        ("*/15 * * * *", "Every 15 minutes, Europe/Riga"),
        ("* * * * *", "Every minute, Europe/Riga"),
        ("5 * * * *", "At minute 5 of every hour, Europe/Riga"),
        ("0 8,17 * * *", "At 08:00 and 17:00, Europe/Riga"),
        ("0 0 1 * *", "At 00:00, on day 1 of the month, Europe/Riga"),
        ("@weekly", "At 00:00, on Sunday, Europe/Riga"),
        ("0 0 * * SAT,SUN", "At 00:00, on Saturday and Sunday, Europe/Riga"),
        ("0 0 1 1 *", "At 00:00, on day 1 of the month, in January, Europe/Riga"),
        ("0 0 1,15 * MON", "At 00:00, on day 1 and 15 of the month or on Monday, Europe/Riga"),
        # One day field starts with '*': both must match, and both are described.
        ("0 9 */10 * MON", "At 09:00, on day 1, 11, 21 and 31 of the month and on Monday, "
                           "Europe/Riga"),
        ("0 0 1 * */3", "At 00:00, on day 1 of the month and on Sunday, Wednesday and Saturday, "
                        "Europe/Riga"),
    ],
)  # fmt: skip
def test_describe_cron(rule: str, text: str) -> None:
    assert describe(cron(rule, "Europe/Riga")) == text


def test_describe_other_kinds() -> None:
    grid = build_timing(kind="interval", rule="1h30m", anchor=utc(2024, 1, 1), timezone="UTC")
    assert describe(grid) == "Every 1h30m (fixed rate, from 2024-01-01 00:00:00 UTC), UTC"
    once = build_timing(kind="once", rule=utc(2024, 6, 1, 9), timezone="Europe/Paris")
    assert describe(once) == "Once at 2024-06-01 09:00:00 UTC, Europe/Paris"
    local = build_timing(kind="once", rule=datetime(2024, 6, 1, 9), timezone="Europe/Paris")
    assert describe(local) == "Once at 2024-06-01 09:00:00 local time, Europe/Paris"
    rule = build_timing(
        kind="rrule", rule="FREQ=WEEKLY;INTERVAL=2", anchor=datetime(2024, 1, 1, 9), timezone="UTC"
    )
    assert describe(rule) == "Every 2 weeks on Monday at 09:00, from 2024-01-01 09:00, UTC"


def test_previous_slot_of_an_rrule_stops_at_its_dtstart(monkeypatch: pytest.MonkeyPatch) -> None:
    """A new schedule's first occurrence asks for the slot before it: for an RRULE whose first
    slot is its DTSTART the answer is None, found without walking the calendar back to year 1
    (each year looked at costs a scan of the zone's offsets)."""
    years: list[int] = []
    marks = zones._transition_marks

    def spy(zone: ZoneInfo, year: int) -> tuple[datetime, ...]:
        years.append(year)
        return marks(zone, year)

    monkeypatch.setattr(zones, "_transition_marks", spy)
    timing = build_timing(
        kind="rrule",
        rule="DTSTART:20261203T090000\nRRULE:FREQ=DAILY;BYHOUR=9;BYMINUTE=0",
        timezone="Europe/Riga",
    )
    first = utc(2026, 12, 3, 7)
    assert next_after(timing, utc(2026, 1, 1)) == first
    assert previous_slot(timing, first, inclusive=False) is None
    assert previous_slot(timing, utc(2026, 12, 1)) is None
    assert previous_slot(timing, first + timedelta(days=1), inclusive=False) == first
    assert min(years) >= 2025, sorted(set(years))
    # An RDATE before DTSTART is a slot too: the search reaches back to it.
    with_rdate = build_timing(
        kind="rrule",
        rule="DTSTART:20261203T090000\nRDATE:20260601T090000\nRRULE:FREQ=DAILY;COUNT=2",
        timezone="Europe/Riga",
    )
    assert previous_slot(with_rdate, first, inclusive=False) == utc(2026, 6, 1, 6)
