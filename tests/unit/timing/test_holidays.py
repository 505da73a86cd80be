"""``exclude_holidays`` against the holidays package's own data: slots on a public holiday
(by the slot's local date in the schedule's zone) are left out, nothing else is."""

from __future__ import annotations

from datetime import date, timedelta

import holidays
import pytest

from scheduler_app.errors import ScheduleValidationError
from scheduler_app.timing import build_timing, describe, next_after, slots_between
from scheduler_app.timing.calendars.public_holidays import data_version, parse_holidays
from scheduler_app.timing.engine import holiday_skips
from tests.unit.timing.helpers import utc


@pytest.mark.parametrize(
    ("code", "zone", "subdiv"),
    [
        ("LV", "Europe/Riga", None),
        ("DE", "Europe/Berlin", None),
        ("JP", "Asia/Tokyo", None),
        ("US-NY", "America/New_York", "NY"),
        ("AU-NSW", "Australia/Sydney", "NSW"),
    ],
)
def test_a_year_of_daily_slots_leaves_out_exactly_the_packages_holidays(
    code: str, zone: str, subdiv: str | None
) -> None:
    timing = build_timing(kind="cron", rule="0 9 * * *", timezone=zone, exclude_holidays=code)
    slots = slots_between(timing, utc(2026, 12, 31, 15), utc(2027, 12, 31, 15))
    kept = {slot.astimezone(timing.zone).date() for slot in slots}
    official = holidays.country_holidays(code[:2], subdiv=subdiv, years=2027)
    year = {date(2027, 1, 1) + timedelta(days=n) for n in range(365)}
    assert kept == {day for day in year if day not in official}
    assert len(kept) < 365 - 5  # every one of these has more than five holidays a year


def test_the_local_date_decides_not_the_utc_date() -> None:
    # 2027-01-01 00:30 in Tokyo is 2026-12-31 15:30 UTC: New Year's Day locally.
    timing = build_timing(
        kind="cron", rule="30 0 * * *", timezone="Asia/Tokyo", exclude_holidays="JP"
    )
    slots = slots_between(timing, utc(2026, 12, 29), utc(2027, 1, 5))
    local_days = [slot.astimezone(timing.zone).date() for slot in slots]
    assert date(2027, 1, 1) not in local_days  # skipped although its UTC date is Dec 31
    assert date(2026, 12, 31) in local_days  # an ordinary day in Japan
    # The other way round: New York at 21:00 on 2027-07-03 is 01:00 UTC on July 4th.
    ny = build_timing(
        kind="cron", rule="0 21 * * *", timezone="America/New_York", exclude_holidays="US"
    )
    ny_slots = slots_between(ny, utc(2027, 7, 1), utc(2027, 7, 8))
    assert utc(2027, 7, 4, 1) in ny_slots  # local July 3rd: an ordinary day
    ny_days = [slot.astimezone(ny.zone).date() for slot in ny_slots]
    assert date(2027, 7, 4) not in ny_days  # Independence Day (a Sunday)
    assert date(2027, 7, 5) not in ny_days  # and its observed Monday, from the package's data


def test_a_subdivision_adds_its_own_holidays() -> None:
    # Lincoln's Birthday (Friday 2027-02-12) is a holiday in New York state, not federally.
    daily = {"kind": "cron", "rule": "0 9 * * *", "timezone": "America/New_York"}
    federal = build_timing(**daily, exclude_holidays="US")  # type: ignore[arg-type]
    state = build_timing(**daily, exclude_holidays="us-ny")  # type: ignore[arg-type]
    assert next_after(federal, utc(2027, 2, 12)) == utc(2027, 2, 12, 14)
    assert next_after(state, utc(2027, 2, 12)) == utc(2027, 2, 13, 14)
    assert parse_holidays("us-ny") == parse_holidays("US-NY")


def test_skips_are_named_for_the_preview() -> None:
    timing = build_timing(
        kind="cron", rule="0 9 * * MON-FRI", timezone="Europe/Riga", exclude_holidays="LV"
    )
    skips = holiday_skips(timing, utc(2027, 12, 20), utc(2027, 12, 31))
    assert [(s.astimezone(timing.zone).date(), name) for s, name in skips] == [
        (date(2027, 12, 24), "Christmas Eve"),  # Christmas Day and the next are a weekend
    ]
    assert describe(timing).endswith("except public holidays in LV, Europe/Riga")


def test_intervals_and_windows_and_counts_respect_holidays() -> None:
    timing = build_timing(
        kind="interval",
        rule=timedelta(hours=6),
        anchor=utc(2027, 12, 23),
        timezone="Europe/Riga",
        exclude_holidays="LV",
        window="MON-FRI 08:00-18:00",
    )
    slots = slots_between(timing, utc(2027, 12, 22), utc(2027, 12, 29))
    days = {slot.astimezone(timing.zone).date() for slot in slots}
    assert days == {date(2027, 12, 23), date(2027, 12, 27), date(2027, 12, 28)}


@pytest.mark.parametrize(
    ("code", "words"),
    [
        ("XX", "unknown country 'XX'"),
        ("USA", "unknown country 'USA'"),
        ("US-ZZ", "unknown subdivision 'ZZ' of US"),
        ("", None),
    ],
)
def test_unknown_codes_are_refused_with_how_to_list_them(code: str, words: str | None) -> None:
    if words is None:
        assert parse_holidays(code) is None
        return
    with pytest.raises(ScheduleValidationError) as caught:
        parse_holidays(code)
    assert caught.value.field == "exclude_holidays"
    assert words in caught.value.message
    assert "list_supported_countries" in caught.value.message


def test_the_data_version_is_the_packages() -> None:
    assert data_version() == holidays.__version__


def test_without_the_package_the_error_says_which_extra_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("scheduler_app.timing.calendars.public_holidays._holidays", None)
    with pytest.raises(ScheduleValidationError) as caught:
        parse_holidays("LV")
    assert caught.value.code == "missing_dependency"
    assert "[holidays] extra" in caught.value.message and "make dist" in caught.value.message
