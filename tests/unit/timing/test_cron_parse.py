"""Cron parsing: every syntax the dialect accepts, Vixie day semantics, and every rejection."""

from __future__ import annotations

from datetime import date

import pytest

from scheduler_app.errors import InvalidRule, ScheduleValidationError
from scheduler_app.timing import parse_cron

from .helpers import cron, utc, window

ALL_MINUTES = tuple(range(60))
ALL_DAYS = tuple(range(1, 32))
ALL_MONTHS = tuple(range(1, 13))
ALL_WEEKDAYS = tuple(range(7))


@pytest.mark.parametrize(
    ("expression", "minutes", "hours", "days", "months", "weekdays"),
    [
        ("30 9 * * *", (30,), (9,), ALL_DAYS, ALL_MONTHS, ALL_WEEKDAYS),
        ("0,15,45 8-10 * * *", (0, 15, 45), (8, 9, 10), ALL_DAYS, ALL_MONTHS, ALL_WEEKDAYS),
        ("*/15 * * * *", (0, 15, 30, 45), tuple(range(24)), ALL_DAYS, ALL_MONTHS, ALL_WEEKDAYS),
        ("10-30/10 * * * *", (10, 20, 30), tuple(range(24)), ALL_DAYS, ALL_MONTHS, ALL_WEEKDAYS),
        # 'a/n' means 'a-max/n'.
        ("50/5 0 * * *", (50, 55), (0,), ALL_DAYS, ALL_MONTHS, ALL_WEEKDAYS),
        ("0 0 1,15 * *", (0,), (0,), (1, 15), ALL_MONTHS, ALL_WEEKDAYS),
        ("0 0 * 1-3,12 *", (0,), (0,), ALL_DAYS, (1, 2, 3, 12), ALL_WEEKDAYS),
        ("0 0 * */4 *", (0,), (0,), ALL_DAYS, (1, 5, 9), ALL_WEEKDAYS),
        # Names, case-insensitive, in lists and ranges.
        ("0 0 * JAN,jul *", (0,), (0,), ALL_DAYS, (1, 7), ALL_WEEKDAYS),
        ("0 0 * Feb-Apr *", (0,), (0,), ALL_DAYS, (2, 3, 4), ALL_WEEKDAYS),
        ("0 0 * * MON-FRI", (0,), (0,), ALL_DAYS, ALL_MONTHS, (1, 2, 3, 4, 5)),
        ("0 0 * * sat,Sun", (0,), (0,), ALL_DAYS, ALL_MONTHS, (0, 6)),
        # 7 is Sunday too; 0 and 7 together are one day.
        ("0 0 * * 7", (0,), (0,), ALL_DAYS, ALL_MONTHS, (0,)),
        ("0 0 * * 0,7", (0,), (0,), ALL_DAYS, ALL_MONTHS, (0,)),
        ("0 0 * * 5-7", (0,), (0,), ALL_DAYS, ALL_MONTHS, (0, 5, 6)),
        ("0 0 * * */2", (0,), (0,), ALL_DAYS, ALL_MONTHS, (0, 2, 4, 6)),
        ("0 0 * * 1-5/2", (0,), (0,), ALL_DAYS, ALL_MONTHS, (1, 3, 5)),
        # Surrounding and repeated blanks are fine.
        ("  5   4  *  *  *  ", (5,), (4,), ALL_DAYS, ALL_MONTHS, ALL_WEEKDAYS),
        ("* * * * *", ALL_MINUTES, tuple(range(24)), ALL_DAYS, ALL_MONTHS, ALL_WEEKDAYS),
    ],
)
def test_fields_expand_to_the_allowed_values(
    expression: str,
    minutes: tuple[int, ...],
    hours: tuple[int, ...],
    days: tuple[int, ...],
    months: tuple[int, ...],
    weekdays: tuple[int, ...],
) -> None:
    expr = parse_cron(expression)
    assert expr.minutes == minutes
    assert expr.hours == hours
    assert expr.days == days
    assert expr.months == months
    assert expr.weekdays == weekdays


@pytest.mark.parametrize(
    ("macro", "equivalent"),
    [
        ("@hourly", "0 * * * *"),
        ("@daily", "0 0 * * *"),
        ("@midnight", "0 0 * * *"),
        ("@weekly", "0 0 * * 0"),
        ("@monthly", "0 0 1 * *"),
        ("@yearly", "0 0 1 1 *"),
        ("@annually", "0 0 1 1 *"),
        ("@DAILY", "0 0 * * *"),
        (" @Hourly ", "0 * * * *"),
    ],
)
def test_macros_equal_their_five_field_form(macro: str, equivalent: str) -> None:
    a, b = parse_cron(macro), parse_cron(equivalent)
    assert (a.minutes, a.hours, a.days, a.months, a.weekdays) == (
        b.minutes,
        b.hours,
        b.days,
        b.months,
        b.weekdays,
    )
    assert (a.minute_star, a.hour_star, a.dom_star, a.dow_star) == (
        b.minute_star,
        b.hour_star,
        b.dom_star,
        b.dow_star,
    )
    assert a.normalized == equivalent


def test_macros_fire_where_expected() -> None:
    assert window(cron("@hourly"), utc(2024, 1, 1), utc(2024, 1, 1, 3)) == [
        "2024-01-01T01:00Z",
        "2024-01-01T02:00Z",
        "2024-01-01T03:00Z",
    ]
    # 2024-01-07 is a Sunday.
    assert window(cron("@weekly"), utc(2024, 1, 1), utc(2024, 1, 20)) == [
        "2024-01-07T00:00Z",
        "2024-01-14T00:00Z",
    ]
    assert window(cron("@yearly"), utc(2024, 1, 1), utc(2027, 1, 1)) == [
        "2025-01-01T00:00Z",
        "2026-01-01T00:00Z",
        "2027-01-01T00:00Z",
    ]


# --- Vixie: day-of-month OR day-of-week when both are restricted ------------------------------


def _days(expression: str, start: date, end: date) -> list[int]:
    """Days of the month on which ``expression`` fires between two dates (UTC)."""
    timing = cron(expression)
    slots = window(
        timing, utc(start.year, start.month, start.day), utc(end.year, end.month, end.day)
    )
    return [int(slot[8:10]) for slot in slots]


def test_both_day_fields_restricted_means_either() -> None:
    # June 2024: Mondays are 3, 10, 17, 24; day 1 and 15 are Sat and Sat.
    expr = parse_cron("0 12 1,15 * MON")
    assert not expr.dom_star and not expr.dow_star
    assert _days("0 12 1,15 * MON", date(2024, 6, 1), date(2024, 6, 30)) == [1, 3, 10, 15, 17, 24]


def test_star_day_of_month_means_and() -> None:
    # '*/2' starts with '*', so it counts as unrestricted: both must match (odd days that are
    # Mondays). June 2024 Mondays: 3, 10, 17, 24 -> odd ones: 3, 17.
    expr = parse_cron("0 12 */2 * MON")
    assert expr.dom_star and not expr.dow_star
    assert _days("0 12 */2 * MON", date(2024, 6, 1), date(2024, 6, 30)) == [3, 17]


def test_star_day_of_week_means_and() -> None:
    # '*/3' in day-of-week: Sun, Wed, Sat. Restricted day-of-month 1-10. June 2024: 1 Sat,
    # 2 Sun, 5 Wed, 8 Sat, 9 Sun.
    assert _days("0 12 1-10 * */3", date(2024, 6, 1), date(2024, 6, 30)) == [1, 2, 5, 8, 9]


def test_only_one_day_field_restricted() -> None:
    assert _days("0 12 13 * *", date(2024, 1, 1), date(2024, 4, 1)) == [13, 13, 13]
    # Fridays in March 2024: 1, 8, 15, 22, 29.
    assert _days("0 12 * 3 FRI", date(2024, 1, 1), date(2024, 12, 1)) == [1, 8, 15, 22, 29]


def test_day_31_skips_short_months_and_29_feb_waits_for_leap_years() -> None:
    assert window(cron("0 0 31 * *"), utc(2024, 1, 1), utc(2024, 6, 1)) == [
        "2024-01-31T00:00Z",
        "2024-03-31T00:00Z",
        "2024-05-31T00:00Z",
    ]
    assert window(cron("0 0 29 2 *"), utc(2021, 1, 1), utc(2029, 1, 1)) == [
        "2024-02-29T00:00Z",
        "2028-02-29T00:00Z",
    ]


# --- rejections -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "field", "hint"),
    [
        ("* * * *", "cron", "expected 5 fields"),
        ("* * * * * *", "cron", "expected 5 fields"),
        ("", "cron", "expected 5 fields"),
        ("   ", "cron", "expected 5 fields"),
        ("60 * * * *", "cron.minute", "out of range 0-59"),
        ("0 24 * * *", "cron.hour", "out of range 0-23"),
        ("0 0 0 * *", "cron.day_of_month", "out of range 1-31"),
        ("0 0 32 * *", "cron.day_of_month", "out of range 1-31"),
        ("0 0 * 0 *", "cron.month", "out of range 1-12"),
        ("0 0 * 13 *", "cron.month", "out of range 1-12"),
        ("0 0 * * 8", "cron.day_of_week", "out of range 0-7"),
        ("0 0 * FOO *", "cron.month", "JAN-DEC"),
        ("0 0 * * MONDAY", "cron.day_of_week", "SUN-SAT"),
        ("0 0 * MON *", "cron.month", "JAN-DEC"),
        ("0 0 JAN * *", "cron.day_of_month", "1-31"),
        ("x * * * *", "cron.minute", "not a number"),
        ("-1 * * * *", "cron.minute", "not a number"),
        ("1.5 * * * *", "cron.minute", "not a number"),
        ("00000 * * * *", "cron.minute", "not a number"),
        ("0 0 ? * *", "cron.day_of_month", "not a number"),
        ("0 0 L * *", "cron.day_of_month", "not a number"),
        ("30-10 * * * *", "cron.minute", "backwards"),
        ("0 0 * * FRI-MON", "cron.day_of_week", "backwards"),
        ("*/0 * * * *", "cron.minute", "out of range"),
        ("5/0 * * * *", "cron.minute", "out of range"),
        ("0 */0 * * *", "cron.hour", "out of range"),
        ("*/ * * * *", "cron.minute", "step"),
        ("/5 * * * *", "cron.minute", "not a number"),
        ("1,,2 * * * *", "cron.minute", "empty list item"),
        (",1 * * * *", "cron.minute", "empty list item"),
        ("0 1, * * *", "cron.hour", "empty list item"),
        ("1-2-3 * * * *", "cron.minute", "not a number"),
        ("0\x000 * * * *", "cron", "control characters"),
        ("0 0 * * *\x07", "cron", "control characters"),
        ("0\t0 * * *", "cron", "control characters"),
        ("x" * 5000, "cron", "longer than"),
        ("0 " * 600, "cron", "longer than"),
        ("@reboot", "cron", "unknown macro"),
        ("@every 5m", "cron", "unknown macro"),
        ("0 0 30 2 *", "cron.day_of_month", "never fires"),
        ("0 0 31 4,6,9,11 *", "cron.day_of_month", "never fires"),
        ("0 0 30,31 FEB *", "cron.day_of_month", "never fires"),
        ("0 0 30 2 */2", "cron.day_of_month", "never fires"),
        ("٣ * * * *", "cron.minute", "not a number"),
        ("0 0 * * \uff2d\uff2f\uff2e", "cron.day_of_week", "not a number"),
    ],
)
def test_invalid_expressions_name_the_field_and_the_fix(
    expression: str, field: str, hint: str
) -> None:
    with pytest.raises(InvalidRule) as caught:
        parse_cron(expression)
    error = caught.value
    assert isinstance(error, ScheduleValidationError)
    assert error.field == field
    assert hint in error.message
    assert str(error).startswith(f"{field}: ")


@pytest.mark.parametrize("expression", ["* * * * 60", "99 * * * *", "0 0 31 2 *"])
def test_errors_say_what_is_allowed(expression: str) -> None:
    with pytest.raises(InvalidRule) as caught:
        parse_cron(expression)
    message = caught.value.message
    assert "allowed" in message or "never fires" in message


@pytest.mark.parametrize("value", [None, 5, b"* * * * *", ["*"] * 5])
def test_non_string_input_is_a_validation_error(value: object) -> None:
    with pytest.raises(InvalidRule) as caught:
        parse_cron(value)  # type: ignore[arg-type]
    assert caught.value.field == "cron"


def test_reachable_rare_rules_are_accepted() -> None:
    # Day 31 of listed months of which one has 31 days; 29 Feb; day 30 in February OR Monday.
    parse_cron("0 0 31 4,5 *")
    parse_cron("0 0 29 2 *")
    parse_cron("0 0 30 2 MON")
    parse_cron("0 0 * * *\n")  # surrounding whitespace, a trailing newline included, is fine


def test_fixed_time_and_star_flags() -> None:
    assert parse_cron("30 9 * * *").fixed_time
    assert parse_cron("0,30 9-17/2 * * *").fixed_time
    assert not parse_cron("*/15 * * * *").fixed_time
    assert not parse_cron("5 * * * *").fixed_time
    assert not parse_cron("* 9 * * *").fixed_time
    assert not parse_cron("@hourly").fixed_time
    assert parse_cron("@daily").fixed_time
