"""RRULE parsing: every supported part, every rejection, and re-anchoring equal to dateutil."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from dateutil import rrule as du

from scheduler_app.errors import InvalidRule, ScheduleValidationError
from scheduler_app.timing import Timing, build_timing, next_after, slots_between

from .helpers import iso, utc


def rrule(rule: str, anchor: datetime, zone: str = "UTC", **kwargs: object) -> Timing:
    return build_timing(kind="rrule", rule=rule, anchor=anchor, timezone=zone, **kwargs)  # type: ignore[arg-type]


def first(timing: Timing, after: datetime, count: int) -> list[str]:
    slots = slots_between(timing, after, datetime(9999, 1, 1, tzinfo=UTC), limit=count)
    return [iso(slot) for slot in slots]


ANCHOR = utc(2024, 1, 1, 9)  # a Monday


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        ("FREQ=DAILY", ["2024-01-02T09:00Z", "2024-01-03T09:00Z", "2024-01-04T09:00Z"]),
        ("FREQ=DAILY;INTERVAL=3", ["2024-01-04T09:00Z", "2024-01-07T09:00Z", "2024-01-10T09:00Z"]),
        (
            "RRULE:freq=daily;byhour=7",
            ["2024-01-02T07:00Z", "2024-01-03T07:00Z", "2024-01-04T07:00Z"],
        ),
        ("FREQ=WEEKLY", ["2024-01-08T09:00Z", "2024-01-15T09:00Z", "2024-01-22T09:00Z"]),
        (
            "FREQ=WEEKLY;BYDAY=TU,TH",
            ["2024-01-02T09:00Z", "2024-01-04T09:00Z", "2024-01-09T09:00Z"],
        ),
        # First Monday and last Friday of the month.
        ("FREQ=MONTHLY;BYDAY=1MO", ["2024-02-05T09:00Z", "2024-03-04T09:00Z", "2024-04-01T09:00Z"]),
        (
            "FREQ=MONTHLY;BYDAY=-1FR",
            ["2024-01-26T09:00Z", "2024-02-23T09:00Z", "2024-03-29T09:00Z"],
        ),
        (
            "FREQ=MONTHLY;BYDAY=+2WE",
            ["2024-01-10T09:00Z", "2024-02-14T09:00Z", "2024-03-13T09:00Z"],
        ),
        (
            "FREQ=MONTHLY;BYMONTHDAY=-1",
            ["2024-01-31T09:00Z", "2024-02-29T09:00Z", "2024-03-31T09:00Z"],
        ),
        (
            "FREQ=MONTHLY;BYMONTHDAY=-2,1",
            ["2024-01-30T09:00Z", "2024-02-01T09:00Z", "2024-02-28T09:00Z"],
        ),
        (
            "FREQ=YEARLY;BYMONTH=3,9",
            ["2024-03-01T09:00Z", "2024-09-01T09:00Z", "2025-03-01T09:00Z"],
        ),
        (
            "FREQ=DAILY;BYHOUR=8,17;BYMINUTE=15,45;BYSECOND=30",
            ["2024-01-01T17:15Z", "2024-01-01T17:45Z", "2024-01-02T08:15Z"],
        ),
        # Last weekday of the month.
        (
            "FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1",
            ["2024-01-31T09:00Z", "2024-02-29T09:00Z", "2024-03-29T09:00Z"],
        ),
        ("FREQ=HOURLY;INTERVAL=5", ["2024-01-01T14:00Z", "2024-01-01T19:00Z", "2024-01-02T00:00Z"]),
        (
            "FREQ=MINUTELY;INTERVAL=20",
            ["2024-01-01T09:20Z", "2024-01-01T09:40Z", "2024-01-01T10:00Z"],
        ),
        (
            "FREQ=YEARLY;BYYEARDAY=100",
            ["2024-04-09T09:00Z", "2025-04-10T09:00Z", "2026-04-10T09:00Z"],
        ),
        # ISO week 1 of 2025 starts on Monday 2024-12-30, of 2026 on 2025-12-29.
        (
            "FREQ=YEARLY;BYWEEKNO=1;BYDAY=MO",
            ["2024-12-30T09:00Z", "2025-12-29T09:00Z", "2027-01-04T09:00Z"],
        ),
    ],
)
def test_rule_parts(rule: str, expected: list[str]) -> None:
    assert first(rrule(rule, ANCHOR), ANCHOR, 3)[: len(expected)] == expected


def test_count_counts_from_the_anchor() -> None:
    timing = rrule("FREQ=DAILY;COUNT=3", ANCHOR)
    assert first(timing, ANCHOR - timedelta(seconds=1), 10) == [
        "2024-01-01T09:00Z",
        "2024-01-02T09:00Z",
        "2024-01-03T09:00Z",
    ]
    assert next_after(timing, utc(2024, 1, 3, 9)) is None


def test_until_date_is_inclusive_of_that_day() -> None:
    timing = rrule("FREQ=DAILY;UNTIL=20240103", ANCHOR)
    assert first(timing, ANCHOR, 10) == ["2024-01-02T09:00Z", "2024-01-03T09:00Z"]


def test_until_local_date_time_is_wall_time_in_the_zone() -> None:
    # Riga is +02:00 in January: 09:00 local = 07:00Z. UNTIL 09:00 local on the 3rd includes it.
    anchor = datetime(2024, 1, 1, 9, 0)  # naive: local wall time
    timing = rrule("FREQ=DAILY;UNTIL=20240103T090000", anchor, "Europe/Riga")
    assert first(timing, utc(2023, 12, 31), 10) == [
        "2024-01-01T07:00Z",
        "2024-01-02T07:00Z",
        "2024-01-03T07:00Z",
    ]


def test_until_utc_is_an_instant() -> None:
    # 20240103T065959Z is 08:59:59 in Riga, before the 09:00 slot of the 3rd.
    anchor = datetime(2024, 1, 1, 9, 0)
    timing = rrule("FREQ=DAILY;UNTIL=20240103T065959Z", anchor, "Europe/Riga")
    assert first(timing, utc(2023, 12, 31), 10) == ["2024-01-01T07:00Z", "2024-01-02T07:00Z"]
    timing = rrule("FREQ=DAILY;UNTIL=20240103T070000Z", anchor, "Europe/Riga")
    assert len(first(timing, utc(2023, 12, 31), 10)) == 3


@pytest.mark.parametrize(
    ("wkst", "days"),
    [("MO", [5, 10, 19, 24]), ("SU", [5, 17, 19, 31])],
)
def test_wkst_changes_biweekly_rules_as_in_rfc5545(wkst: str, days: list[int]) -> None:
    # The RFC 5545 example: DTSTART 1997-08-05 09:00 New York, every 2 weeks on TU,SU.
    anchor = datetime(1997, 8, 5, 9, 0)
    rule = f"FREQ=WEEKLY;INTERVAL=2;COUNT=4;BYDAY=TU,SU;WKST={wkst}"
    timing = rrule(rule, anchor, "America/New_York")
    slots = first(timing, utc(1997, 8, 1), 10)
    assert [int(slot[8:10]) for slot in slots] == days
    assert all(slot.endswith("13:00Z") for slot in slots)  # 09:00 EDT


def test_aware_anchor_is_read_in_the_zone() -> None:
    # 07:00Z is 09:00 in Riga (+02:00 in winter); DAILY keeps 09:00 local across DST (+03:00).
    timing = rrule("FREQ=DAILY", utc(2024, 3, 29, 7), "Europe/Riga")
    assert first(timing, utc(2024, 3, 29, 7), 3) == [
        "2024-03-30T07:00Z",
        "2024-03-31T06:00Z",
        "2024-04-01T06:00Z",
    ]


# --- rejections -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rule", "field", "hint"),
    [
        ("BYHOUR=9", "rrule.FREQ", "FREQ is required"),
        ("", "rrule.FREQ", "FREQ is required"),
        ("FREQ=FORTNIGHTLY", "rrule.FREQ", "use one of"),
        ("FREQ=DAILY;FOO=1", "rrule.FOO", "unknown rule part"),
        ("FREQ=DAILY;BYEASTER=0", "rrule.BYEASTER", "unknown rule part"),
        ("FREQ=DAILY;COUNT=3;UNTIL=20250101", "rrule.COUNT", "COUNT and UNTIL"),
        ("FREQ=DAILY;FREQ=WEEKLY", "rrule.FREQ", "given twice"),
        ("FREQ=DAILY;BYHOUR=1;BYHOUR=2", "rrule.BYHOUR", "given twice"),
        ("FREQ", "rrule", "NAME=VALUE"),
        ("FREQ=", "rrule", "NAME=VALUE"),
        ("FREQ=DAILY;INTERVAL=x", "rrule.INTERVAL", "not a whole number"),
        ("FREQ=DAILY;INTERVAL=1.5", "rrule.INTERVAL", "not a whole number"),
        ("FREQ=DAILY;INTERVAL=0", "rrule.INTERVAL", "out of range"),
        ("FREQ=DAILY;INTERVAL=-1", "rrule.INTERVAL", "out of range"),
        ("FREQ=DAILY;COUNT=0", "rrule.COUNT", "out of range"),
        ("FREQ=DAILY;COUNT=99999999", "rrule.COUNT", "whole number"),
        ("FREQ=MONTHLY;BYMONTHDAY=0", "rrule.BYMONTHDAY", "out of range"),
        ("FREQ=MONTHLY;BYMONTHDAY=32", "rrule.BYMONTHDAY", "out of range"),
        ("FREQ=MONTHLY;BYMONTHDAY=-32", "rrule.BYMONTHDAY", "out of range"),
        ("FREQ=DAILY;BYMONTH=0", "rrule.BYMONTH", "out of range"),
        ("FREQ=DAILY;BYMONTH=13", "rrule.BYMONTH", "out of range"),
        ("FREQ=DAILY;BYHOUR=24", "rrule.BYHOUR", "out of range"),
        ("FREQ=DAILY;BYMINUTE=60", "rrule.BYMINUTE", "out of range"),
        ("FREQ=DAILY;BYSECOND=60", "rrule.BYSECOND", "out of range"),
        ("FREQ=DAILY;BYHOUR=1,,2", "rrule.BYHOUR", "not a whole number"),
        ("FREQ=MONTHLY;BYDAY=0MO", "rrule.BYDAY", "out of range"),
        ("FREQ=MONTHLY;BYDAY=MONDAY", "rrule.BYDAY", "not a weekday"),
        ("FREQ=MONTHLY;BYDAY=1XX", "rrule.BYDAY", "not a weekday"),
        ("FREQ=MONTHLY;BYDAY=MO;BYSETPOS=0", "rrule.BYSETPOS", "out of range"),
        ("FREQ=MONTHLY;BYSETPOS=1", "rrule.BYSETPOS", "needs another BYxxx"),
        ("FREQ=YEARLY;BYWEEKNO=0", "rrule.BYWEEKNO", "out of range"),
        ("FREQ=WEEKLY;WKST=XX", "rrule.WKST", "not a weekday"),
        ("FREQ=DAILY;UNTIL=2025", "rrule.UNTIL", "not a date"),
        ("FREQ=DAILY;UNTIL=20250230", "rrule.UNTIL", "not a real date"),
        ("FREQ=DAILY;UNTIL=20250101T250000", "rrule.UNTIL", "not a real date"),
        ("FREQ=HOURLY;INTERVAL=6;BYHOUR=1", "rrule", "never produces a slot"),
        ("FREQ=DAILY\x00", "rrule", "control characters"),
        ("FREQ=DAILY;" + "BYHOUR=1;" * 400, "rrule", "longer than"),
    ],
)
def test_invalid_rules_name_the_part(rule: str, field: str, hint: str) -> None:
    with pytest.raises(InvalidRule) as caught:
        rrule(rule, ANCHOR)
    assert isinstance(caught.value, ScheduleValidationError)
    assert caught.value.field == field
    assert hint in caught.value.message


def test_range_message_does_not_forbid_zero_where_zero_is_allowed() -> None:
    with pytest.raises(InvalidRule) as caught:
        rrule("FREQ=DAILY;BYHOUR=24", ANCHOR)
    assert "not 0" not in caught.value.message
    with pytest.raises(InvalidRule) as caught:
        rrule("FREQ=MONTHLY;BYMONTHDAY=0", ANCHOR)
    assert "not 0" in caught.value.message


@pytest.mark.parametrize("until", ["99991231T235959Z", "00010101T000000Z"])
def test_until_at_the_ends_of_the_calendar_is_a_validation_error(until: str) -> None:
    for zone in ("Pacific/Kiritimati", "America/New_York"):
        try:
            rrule(f"FREQ=DAILY;UNTIL={until}", ANCHOR, zone)
        except ScheduleValidationError as error:
            assert error.field == "rrule.UNTIL"


def test_anchor_is_required() -> None:
    with pytest.raises(InvalidRule) as caught:
        build_timing(kind="rrule", rule="FREQ=DAILY", timezone="UTC")
    assert caught.value.field == "anchor"


# --- re-anchoring: identical to dateutil walking from the original anchor ------------------

REANCHOR_RULES = [
    "FREQ=DAILY",
    "FREQ=DAILY;INTERVAL=3;BYHOUR=2,9;BYMINUTE=30",
    "FREQ=DAILY;INTERVAL=7",
    "FREQ=HOURLY;INTERVAL=5",
    "FREQ=HOURLY;INTERVAL=7;BYMINUTE=0,30",
    "FREQ=MINUTELY;INTERVAL=997",
    "FREQ=WEEKLY;INTERVAL=2",
    "FREQ=WEEKLY;INTERVAL=3;BYDAY=MO,SU",
    "FREQ=WEEKLY;INTERVAL=2;BYDAY=TU,SU;WKST=SU",
    "FREQ=WEEKLY;INTERVAL=2;BYDAY=TU,SU;WKST=WE",
    "FREQ=WEEKLY;BYDAY=MO,WE,FR;BYSETPOS=2",
    "FREQ=MONTHLY;INTERVAL=5",
    "FREQ=MONTHLY;INTERVAL=2;BYDAY=-1FR",
    "FREQ=MONTHLY;INTERVAL=4;BYMONTHDAY=31",
    "FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1,1",
    "FREQ=YEARLY;INTERVAL=3",
    "FREQ=YEARLY;INTERVAL=2;BYMONTH=2;BYMONTHDAY=28,29",
    "FREQ=YEARLY;BYMONTH=1,7;BYDAY=1SU;BYHOUR=3",
    "FREQ=YEARLY;INTERVAL=2;BYWEEKNO=1,52;BYDAY=TH",
    "FREQ=YEARLY;BYDAY=MO;BYSETPOS=-1;BYMONTH=3",
]
ANCHORS = [datetime(2014, 11, 19, 2, 30, 15), datetime(2015, 3, 29, 3, 17)]


def _oracle(rule: str, anchor: datetime, zone: ZoneInfo, after: datetime, count: int) -> list[str]:
    """Plain dateutil from the original anchor; local -> UTC with fold=0 (= shift / first)."""
    parts = dict(item.split("=") for item in rule.split(";"))
    text = ";".join(f"{k}={v}" for k, v in parts.items())
    full = du.rrulestr(f"RRULE:{text}", dtstart=anchor, cache=False)
    start = after.astimezone(zone).replace(tzinfo=None) - timedelta(days=2)
    instants: set[datetime] = set()
    for local in full.xafter(start, inc=True):
        instant = local.replace(tzinfo=zone).astimezone(UTC)
        if instant > after:
            instants.add(instant)
        if len(instants) >= count + 10:
            break
    return [iso(slot) for slot in sorted(instants)[:count]]


@pytest.mark.parametrize("rule", REANCHOR_RULES)
@pytest.mark.parametrize("zone_name", ["UTC", "Europe/Riga", "America/New_York"])
def test_reanchored_rule_equals_dateutil_from_the_original_anchor(
    rule: str, zone_name: str
) -> None:
    zone = ZoneInfo(zone_name)
    for anchor in ANCHORS:
        timing = rrule(rule, anchor, zone_name)
        # Ten years on, and a few points in between; also right after the anchor.
        for after in (
            anchor.replace(tzinfo=zone) + timedelta(hours=1),
            utc(2019, 6, 3, 12),
            utc(2024, 3, 30, 23, 59),
            utc(2025, 10, 25, 22),
            utc(2025, 12, 31, 23),
        ):
            assert first(timing, after, 12) == _oracle(rule, anchor, zone, after, 12), (rule, after)


def test_weekly_bysetpos_in_the_anchor_week_counts_from_the_anchor() -> None:
    # Regression: dateutil's first WEEKLY set runs from DTSTART (Wed 2024-01-03) to the end of
    # that week, so BYSETPOS=2 of {We, Fr} is Friday 01-05; re-anchoring at the week start
    # (Mon) used to pick Wednesday and then skip to the next week.
    timing = rrule("FREQ=WEEKLY;BYDAY=MO,WE,FR;BYSETPOS=2", utc(2024, 1, 3, 10))
    assert next_after(timing, utc(2024, 1, 3, 11)) == utc(2024, 1, 5, 10)
    assert next_after(timing, utc(2024, 1, 5, 10)) == utc(2024, 1, 10, 10)
