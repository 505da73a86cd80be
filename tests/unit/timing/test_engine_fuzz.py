"""Fuzz: arbitrary text is either accepted or refused with a ScheduleValidationError.

Never a bare ValueError, KeyError, IndexError, OverflowError or anything else.
"""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from scheduler_app.errors import ScheduleValidationError
from scheduler_app.timing import build_timing, next_after, parse_cron, parse_duration

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
AFTER = datetime(2024, 3, 30, 12, tzinfo=UTC)

CRON_TOKENS = st.sampled_from(
    ["*", "*/", "/", "-", ",", " ", "0", "7", "59", "60", "99999", "MON", "jan", "SUN", "L", "?",
     "#", "@", "@daily", "@hourly", "\t", "\n", "\x00", "\u2003", "٣", "²", "ß",
     "\uff2d\uff2f\uff2e"]
)  # fmt: skip
RRULE_TOKENS = st.sampled_from(
    ["FREQ", "=", ";", ",", "DAILY", "WEEKLY", "MONTHLY", "YEARLY", "HOURLY", "SECONDLY",
     "INTERVAL", "COUNT", "UNTIL", "BYDAY", "BYMONTHDAY", "BYSETPOS", "BYHOUR", "BYWEEKNO",
     "BYYEARDAY", "WKST", "1MO", "-1FR", "+5SU", "0", "-1", "366", "99999999", "20240101",
     "T120000", "Z", "99991231T235959Z", "00010101T000000Z", "RRULE:", "\x00", "٣", " "]
)  # fmt: skip
DURATION_TOKENS = st.sampled_from(
    ["1", "0", "999999999", "s", "m", "h", "d", "w", "P", "T", "H", "M", "S", "W", "D", " ",
     "-", ".", "²", "\u0661", "\x00"]
)  # fmt: skip


def texts(tokens: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """Mostly token soup, sometimes arbitrary unicode, sometimes very long."""
    soup = st.lists(tokens, max_size=30).map("".join)
    return st.one_of(soup, st.text(max_size=60), st.text(max_size=3000, min_size=1000), soup)


@FUZZ
@given(text=texts(CRON_TOKENS))
@example(text="0 0 30 2 *")
@example(text="*/0 * * * *")
@example(text="x" * 100_000)
def test_cron_text_is_accepted_or_refused_cleanly(text: str) -> None:
    try:
        expr = parse_cron(text)
    except ScheduleValidationError as error:
        assert error.field.startswith("cron")
        assert error.message
        return
    # Accepted rules also evaluate without surprises.
    timing = build_timing(kind="cron", rule=text, timezone="Europe/Riga")
    slot = next_after(timing, AFTER)
    assert slot is not None and slot > AFTER
    assert expr.minutes and expr.hours and expr.days and expr.months and expr.weekdays


@FUZZ
@given(
    text=texts(RRULE_TOKENS),
    zone=st.sampled_from(["UTC", "Pacific/Kiritimati", "Pacific/Pago_Pago"]),
)
@example(text="FREQ=DAILY;UNTIL=99991231T235959Z", zone="Pacific/Kiritimati")
@example(text="FREQ=DAILY;UNTIL=00010101T000000Z", zone="Pacific/Pago_Pago")
@example(text="FREQ=HOURLY;INTERVAL=6;BYHOUR=1", zone="UTC")
def test_rrule_text_is_accepted_or_refused_cleanly(text: str, zone: str) -> None:
    try:
        timing = build_timing(kind="rrule", rule=text, timezone=zone, anchor=AFTER)
    except ScheduleValidationError as error:
        assert error.field.startswith(("rrule", "anchor"))
        assert error.message
        return
    slot = next_after(timing, AFTER)
    assert slot is None or slot > AFTER


@FUZZ
@given(text=texts(DURATION_TOKENS))
@example(text="999999999w999999999w")
@example(text="²")
def test_duration_text_is_accepted_or_refused_cleanly(text: str) -> None:
    try:
        value = parse_duration(text)
    except ScheduleValidationError as error:
        assert error.field == "duration"
        return
    assert value.total_seconds() >= 1
    assert value.microseconds == 0


@FUZZ
@given(
    value=st.one_of(
        st.integers(),
        st.floats(allow_nan=True, allow_infinity=True),
        st.none(),
        st.booleans(),
        st.binary(max_size=10),
    )
)
def test_non_text_durations_are_accepted_or_refused_cleanly(value: object) -> None:
    with contextlib.suppress(ScheduleValidationError):
        parse_duration(value)  # type: ignore[arg-type]


@FUZZ
@given(name=st.text(max_size=80))
@example(name="Europe/../Europe/Riga")
@example(name="/etc/localtime")
def test_any_zone_name_is_accepted_or_refused_cleanly(name: str) -> None:
    try:
        build_timing(kind="cron", rule="0 9 * * *", timezone=name)
    except ScheduleValidationError as error:
        assert error.field == "timezone"
