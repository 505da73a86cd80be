"""English schedule phrases to structured rules: each form of the grammar, and refusals that
name the part not understood (the parser never guesses)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_app.errors import ScheduleValidationError
from scheduler_app.timing import build_timing, slots_between
from scheduler_app.timing.describe import describe
from scheduler_app.timing.phrases import PhraseError, parse_text


@pytest.mark.parametrize(
    ("text", "kind", "rule"),
    [
        ("every weekday at 9:00 in Europe/Riga", "cron", "0 9 * * MON-FRI"),
        ("weekdays at 9am", "cron", "0 9 * * MON-FRI"),
        ("every day at 17:30", "cron", "30 17 * * *"),
        ("daily at noon", "cron", "0 12 * * *"),
        ("daily at midnight", "cron", "0 0 * * *"),
        ("every monday at 9:30 pm", "cron", "30 21 * * MON"),
        ("on mondays and fridays at 12am", "cron", "0 0 * * MON,FRI"),
        ("monday, wednesday and friday at 8:15", "cron", "15 8 * * MON,WED,FRI"),
        ("monday to friday at 8:30 p.m.", "cron", "30 20 * * MON-FRI"),
        ("fri-sun at 10:00", "cron", "0 10 * * FRI,SAT,SUN"),
        ("every weekend at 10:00", "cron", "0 10 * * SAT,SUN"),
        ("twice a day at 9:00 and 17:00", "cron", "0 9,17 * * *"),
        ("three times a day at 8:00, 12:00 and 16:00", "cron", "0 8,12,16 * * *"),
        ("every minute", "cron", "* * * * *"),
        ("every 15 minutes", "cron", "*/15 * * * *"),
        ("every 15 minutes on weekdays", "cron", "*/15 * * * MON-FRI"),
        ("hourly", "cron", "0 * * * *"),
        ("every 2 hours", "cron", "0 */2 * * *"),
        ("every 90 minutes", "interval", "5400"),
        ("every 5 hours", "interval", "18000"),
        ("at minute 30 of every hour", "cron", "30 * * * *"),
        ("on the 15th of the month at 9:00", "cron", "0 9 15 * *"),
        ("on day 1 of the month at 6:00", "cron", "0 6 1 * *"),
        (
            "on the first monday of the month at 9:00",
            "rrule",
            "FREQ=MONTHLY;BYDAY=1MO;BYHOUR=9;BYMINUTE=0;BYSECOND=0",
        ),
        (
            "the last friday of every month at 16:00",
            "rrule",
            "FREQ=MONTHLY;BYDAY=-1FR;BYHOUR=16;BYMINUTE=0;BYSECOND=0",
        ),
        (
            "on the last day of the month at 23:00",
            "rrule",
            "FREQ=MONTHLY;BYMONTHDAY=-1;BYHOUR=23;BYMINUTE=0;BYSECOND=0",
        ),
        ("every 3 days at 9:00", "rrule", "FREQ=DAILY;INTERVAL=3;BYHOUR=9;BYMINUTE=0;BYSECOND=0"),
        (
            "every 2 weeks on tuesday at 10:00",
            "rrule",
            "FREQ=WEEKLY;INTERVAL=2;BYDAY=TU;BYHOUR=10;BYMINUTE=0;BYSECOND=0;WKST=MO",
        ),
        (
            "every other week on friday at 15:00",
            "rrule",
            "FREQ=WEEKLY;INTERVAL=2;BYDAY=FR;BYHOUR=15;BYMINUTE=0;BYSECOND=0;WKST=MO",
        ),
        ("weekly on monday at 8:00", "cron", "0 8 * * MON"),
        ("on 5 September 2027 at 14:00", "once", "2027-09-05T14:00:00"),
        ("on September 5, 2027 at 2pm", "once", "2027-09-05T14:00:00"),
        ("on 2027-09-05 at 14:00", "once", "2027-09-05T14:00:00"),
    ],
)
def test_phrase_to_rule(text: str, kind: str, rule: str) -> None:
    parsed = parse_text(text)
    assert (parsed.kind, parsed.rule) == (kind, rule)


def test_zone_from_the_text_or_the_default() -> None:
    assert parse_text("every weekday at 9:00 in Europe/Riga").timezone == "Europe/Riga"
    assert parse_text("every weekday at 9:00", timezone="Asia/Tokyo").timezone == "Asia/Tokyo"
    assert parse_text("every weekday at 9:00, UTC", timezone="Asia/Tokyo").timezone == "UTC"


def test_a_step_with_a_window_starts_at_the_opening_and_keeps_the_closing_time() -> None:
    # Inclusive at both ends: the hour grid and the window that closes a minute after 18:00
    # (a stored window ends before its closing minute).
    parsed = parse_text("every 15 minutes between 8:00 and 18:00 on weekdays")
    assert (parsed.rule, parsed.active_window, parsed.window_policy) == (
        "*/15 8-18 * * MON-FRI",
        "MON-FRI 08:00-18:01",
        "skip",
    )
    assert parsed.as_fields()["active_window"] == "MON-FRI 08:00-18:01"
    assert parse_text("every 2 hours between 9:00 and 17:00").rule == "0 9,11,13,15,17 * * *"
    assert parse_text("every 3 hours between 8:00 and 20:00").rule == "0 8,11,14,17,20 * * *"
    assert parse_text("every 15 minutes from 9:10 to 11:00").rule == "10,25,40,55 9,10 * * *"
    timing = build_timing(
        kind=parsed.kind,
        rule=parsed.rule,
        timezone="Europe/Riga",
        window=parsed.active_window,
        window_policy=parsed.window_policy,
    )
    # Friday 2027-09-03 17:30 Riga: 17:45, 18:00, then Monday 08:00 (not 18:15, not Saturday).
    slots = slots_between(timing, datetime(2027, 9, 3, 14, 30, tzinfo=UTC), _far(), 3)
    assert [s.isoformat() for s in slots] == [
        "2027-09-03T14:45:00+00:00",
        "2027-09-03T15:00:00+00:00",
        "2027-09-06T05:00:00+00:00",
    ]


def test_start_is_the_anchor() -> None:
    parsed = parse_text("every 3 days at 9:00 starting 4 January 2027")
    assert parsed.anchor == datetime(2027, 1, 4, tzinfo=UTC)
    riga = parse_text("every 3 days at 9:00 starting 4 January 2027 in Europe/Riga")
    assert riga.anchor is not None and riga.anchor.isoformat() == "2027-01-04T00:00:00+02:00"
    utc = parse_text("every 90 minutes from 2027-01-04 06:00 UTC")
    assert utc.anchor == datetime(2027, 1, 4, 6, tzinfo=UTC)
    assert parse_text("every weekday at 9:00").anchor is None


def test_as_json_carries_the_parsed_rule() -> None:
    data = parse_text("every 15 minutes between 8:00 and 18:00 in Europe/Riga").as_json()
    assert data == {
        "text": "every 15 minutes between 8:00 and 18:00 in Europe/Riga",
        "kind": "cron",
        "rule": "*/15 8-18 * * *",
        "timezone": "Europe/Riga",
        "anchor": None,
        "window": "MON-SUN 08:00-18:01",
        "window_policy": "skip",
    }


@pytest.mark.parametrize(
    ("text", "part"),
    [
        ("every mondy at 9:00", "'mondy'"),
        ("every weekday at 9:00 in Europe/Rga", "'Europe/Rga'"),
        ("every weekday at 9", "'9'"),
        ("every weekday at 25:00", "'25:00'"),
        ("every weekday at 9:00 please", "'please'"),
        ("every day at 9", "9:00 or 21:00"),  # a bare hour names both readings
        ("at 12", "noon or midnight"),
        ("every morning", "at what time in the morning"),
        ("every morning at 19:00", "not a time of the morning"),
        ("every evening at 6am", "not a time of the evening"),
        ("twice a day", "say the 2 times"),  # 00:00 is one time, never two invented ones
        ("in Europe/Riga", "say when it runs"),
        ("weekly", "say which day"),
        ("every 15 minutes between 9:00 and 17:00 starting 1 February 2027", "'starting"),
        ("every hour at half past starting 1 February 2027", "'starting"),
        ("twice a day at 9:00", "'twice a day'"),
        ("every 2 mondays at 9:00", "'2'"),
        ("every 2nd tuesday at 9:00", "'every 2 weeks on tuesday'"),
        ("at 9:00 EST", "America/New_York"),
        ("biweekly on monday at 9:00", "'biweekly'"),
        ("every month at 9:00", "say which day"),
        ("every weekday at 9:00 at 10:00", "'at 10:00'"),
        ("on 5 September at 14:00", "every year on 5 September"),  # once needs the year
        ("on 31 February 2027 at 14:00", "'2027'"),
        ("every 2 weeks at 9:00", "'every 2 weeks'"),
        ("every 15 minutes at 9:00", "'at 9:00'"),
        ("between 18:00 and 8:00 every 15 minutes", "'8:00'"),
        ("every 0 minutes", "'0'"),
        ("twice a day every 15 minutes", "'twice a day'"),
        ("on 5 September 2027 twice a day at 9:00 and 17:00", "'twice a day'"),
        ("on the first monday at 9:00", "'at'"),
        ("friday to monday at 9:00", "'monday'"),
        ("", "empty"),
    ],
)
def test_refusals_name_the_part(text: str, part: str) -> None:
    with pytest.raises(PhraseError) as caught:
        parse_text(text)
    assert caught.value.field == "text"
    assert part in caught.value.message
    assert "\n" not in caught.value.message


@pytest.mark.parametrize(
    ("text", "rule", "described"),
    [
        ("every weekday", "0 0 * * MON-FRI", "At 00:00, Monday through Friday, Europe/Riga"),
        ("daily", "0 0 * * *", "At 00:00, Europe/Riga"),
        ("every month on the 1st", "0 0 1 * *", "At 00:00, on day 1 of the month, Europe/Riga"),
        ("monthly on the 10th", "0 0 10 * *", "At 00:00, on day 10 of the month, Europe/Riga"),
        ("every year on 1 January", "0 0 1 1 *", "At 00:00, on day 1 of the month, in January"),
        ("weekly on friday", "0 0 * * FRI", "At 00:00, on Friday, Europe/Riga"),
        (
            "first monday of every month",
            "FREQ=MONTHLY;BYDAY=1MO;BYHOUR=0;BYMINUTE=0;BYSECOND=0",
            "On the first Monday of every month at 00:00, Europe/Riga",
        ),
        (
            "every other day",
            "FREQ=DAILY;INTERVAL=2;BYHOUR=0;BYMINUTE=0;BYSECOND=0",
            "Every 2 days at 00:00",
        ),
    ],
)
def test_a_calendar_phrase_without_a_time_runs_at_midnight_and_says_so(
    text: str, rule: str, described: str
) -> None:
    # As cron's `0 0 ...`: 00:00 in the schedule's zone, written out in the description.
    parsed = parse_text(text, timezone="Europe/Riga")
    assert parsed.rule == rule
    timing = build_timing(
        kind=parsed.kind,
        rule=parsed.rule,
        timezone=parsed.timezone,
        anchor=datetime(2027, 1, 4, tzinfo=UTC),
    )
    assert describe(timing).startswith(described)


def test_parts_of_the_day_read_a_bare_hour_in_them() -> None:
    assert parse_text("every morning at 7").rule == "0 7 * * *"
    assert parse_text("every evening at 7:30").rule == "30 19 * * *"
    assert parse_text("every afternoon at 3").rule == "0 15 * * *"
    assert parse_text("weekday mornings at 8").rule == "0 8 * * MON-FRI"
    assert parse_text("at 8 every evening").rule == "0 20 * * *"


def test_a_step_with_a_start_counts_from_it() -> None:
    # Not the clock's grid: 1:00, 7:00, 13:00, 19:00 from 4 January 2027.
    parsed = parse_text("every 6 hours starting 4 January 2027 at 1:00")
    assert (parsed.kind, parsed.rule) == ("interval", "21600")
    assert parsed.anchor == datetime(2027, 1, 4, 1, tzinfo=UTC)


def test_long_or_multi_line_text_is_refused() -> None:
    with pytest.raises(PhraseError, match="longer than"):
        parse_text("every weekday at 9:00 " * 40)
    with pytest.raises(PhraseError, match="control characters"):
        parse_text("every weekday\nat 9:00")


def _far() -> datetime:
    return datetime(2030, 1, 1, tzinfo=UTC)


VOCABULARY = [
    "every",
    "on",
    "at",
    "the",
    "of",
    "month",
    "day",
    "days",
    "week",
    "weeks",
    "minutes",
    "hours",
    "and",
    "between",
    "in",
    "twice",
    "a",
    "monday",
    "fridays",
    "weekday",
    "weekend",
    "last",
    "first",
    "9:00",
    "17:30",
    "9am",
    "noon",
    "15",
    "2",
    "3",
    "15th",
    "September",
    "2027",
    "2027-09-05",
    "Europe/Riga",
    "UTC",
    "starting",
    "from",
    "to",
    "through",
    "morning",
    "evening",
    "-",
    "12",
]


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.text(max_size=60), st.lists(st.sampled_from(VOCABULARY), max_size=9)))
def test_any_text_is_read_or_refused_never_crashes(words: str | list[str]) -> None:
    text = words if isinstance(words, str) else " ".join(words)
    try:
        parsed = parse_text(text)
    except ScheduleValidationError as error:
        assert error.field in ("text", "timezone")
        return
    # What it reads is always a rule the engine accepts (or one that is refused as a rule).
    try:
        build_timing(
            kind=parsed.kind,
            rule=parsed.rule,
            timezone=parsed.timezone,
            anchor=parsed.anchor or datetime(2027, 1, 4, tzinfo=UTC),
            window=parsed.active_window or None,
            window_policy=parsed.window_policy or "defer",
        )
    except ScheduleValidationError as error:
        assert error.code in ("never", "range"), (text, error)


@pytest.mark.parametrize(
    "words",
    [
        "every 7 minutes between 0:03 and 23:59 on monday",
        "every 13 minutes between 0:01 and 23:58",
        "every 59 minutes between 0:00 and 23:59 on monday, tuesday and friday",
    ],
)
def test_a_windowed_step_one_rule_cannot_hold_is_refused_on_the_words(words: str) -> None:
    """Review 12 (Low): these built a BYSETPOS past 366 (or past its 31 positions), refused
    by the RRULE's own checks on another field; the words now say what to write instead."""
    with pytest.raises(PhraseError, match="cannot be one rule"):
        parse_text(words)
    # A step that divides the hour, in a window ending on a whole hour step, is one rule.
    assert parse_text("every 15 minutes between 9:00 and 16:59 on monday").kind == "cron"
