"""Active windows: slots outside are deferred to the next opening or skipped."""

from __future__ import annotations

from datetime import UTC, datetime
from itertools import islice

import pytest

from scheduler_app.errors import InvalidRule
from scheduler_app.timing import build_timing, next_after, slots_between
from scheduler_app.timing.engine import iter_annotated
from scheduler_app.timing.windows import DEFERRED, parse_windows

PARIS_BUSINESS = "MON-FRI 09:00-18:00"


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


def test_slots_inside_the_window_are_kept_and_the_rest_deferred_once() -> None:
    # Hourly in Paris (UTC+1 in March before the 29th). Friday 2026-03-27 16:30 UTC = 17:30.
    timing = build_timing(
        kind="cron", rule="0 * * * *", timezone="Europe/Paris", window=PARIS_BUSINESS
    )
    items = list(islice(iter_annotated(timing, utc(2026, 3, 27, 15, 30)), 3))
    # 17:00 Friday is inside; 18:00 Fri .. 08:00 Mon are outside and become one slot at the
    # Monday opening, 09:00 CEST (the clocks went forward on Sunday) = 07:00 UTC.
    assert [item[0] for item in items] == [
        utc(2026, 3, 27, 16),
        utc(2026, 3, 30, 7),
        utc(2026, 3, 30, 8),
    ]
    assert items[1][2] == DEFERRED


def test_skip_drops_slots_outside_the_window() -> None:
    timing = build_timing(
        kind="cron",
        rule="0 * * * *",
        timezone="Europe/Paris",
        window=PARIS_BUSINESS,
        window_policy="skip",
    )
    friday_evening_to_monday = slots_between(
        timing, utc(2026, 3, 27, 16, 30), utc(2026, 3, 30, 7, 30)
    )
    assert friday_evening_to_monday == [utc(2026, 3, 30, 7)]  # Monday 09:00 CEST is a real slot


def test_a_slot_deferred_from_earlier_today_is_still_found_after_it() -> None:
    # Daily 07:00 (outside) -> 09:00 the same morning; asking at 08:30 local still finds it.
    timing = build_timing(
        kind="cron", rule="0 7 * * *", timezone="Europe/Paris", window=PARIS_BUSINESS
    )
    assert next_after(timing, utc(2026, 3, 27, 7, 30)) == utc(2026, 3, 27, 8)


def test_a_rule_that_never_meets_a_skip_window_ends() -> None:
    timing = build_timing(
        kind="cron", rule="0 7 * * *", window="MON-FRI 09:00-18:00", window_policy="skip"
    )
    assert next_after(timing, utc(2026, 1, 1)) is None


def test_several_windows() -> None:
    windows = parse_windows("MON-FRI 09:00-12:00; MON-FRI 13:00-17:00")
    assert windows.contains(datetime(2026, 3, 27, 11, 59))
    assert not windows.contains(datetime(2026, 3, 27, 12, 30))
    assert windows.next_opening(datetime(2026, 3, 27, 12, 30)) == datetime(2026, 3, 27, 13, 0)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "MON-FRI",
        "MON-FRI 18:00-09:00",
        "XYZ 09:00-10:00",
        "MON-FRI 25:00-26:00",
        "FRI-MON 09:00-10:00",
    ],
)
def test_bad_windows_are_refused_with_the_field(text: str) -> None:
    with pytest.raises(InvalidRule) as error:
        parse_windows(text)
    assert error.value.field == "window"


def test_unknown_window_policy() -> None:
    with pytest.raises(InvalidRule) as error:
        parse_windows(PARIS_BUSINESS, "later")
    assert error.value.field == "window_policy"
