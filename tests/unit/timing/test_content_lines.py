"""RFC 5545 content lines (DTSTART with TZID, RRULE, EXDATE, RDATE) against python-dateutil's
``rrulestr`` (``forceset=True``), an independent reading of the same text, plus the DST
policies applied to RDATE/EXDATE slots and the errors."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from dateutil.rrule import rrulestr
from hypothesis import example, given, settings
from hypothesis import strategies as st

from scheduler_app.errors import InvalidRule
from scheduler_app.timing import build_timing, describe, slots_between
from scheduler_app.timing.content_lines import MAX_DATES, dtstart_zone

RIGA = ZoneInfo("Europe/Riga")
START = datetime(2027, 1, 1, tzinfo=UTC)
END = datetime(2029, 1, 1, tzinfo=UTC)

CASES = [
    # weekly, one holiday week left out, an extra Saturday added
    "DTSTART;TZID=Europe/Riga:20270104T090000\n"
    "RRULE:FREQ=WEEKLY;BYDAY=MO,WE,FR\n"
    "EXDATE;TZID=Europe/Riga:20271227T090000,20271229T090000\n"
    "EXDATE;TZID=Europe/Riga:20271231T090000\n"
    "RDATE;TZID=Europe/Riga:20271225T120000",
    # daily with COUNT: EXDATE removes counted slots, RDATE adds beyond the count
    "DTSTART;TZID=Europe/Riga:20270301T073000\n"
    "RRULE:FREQ=DAILY;COUNT=10\n"
    "EXDATE;TZID=Europe/Riga:20270303T073000\n"
    "RDATE;TZID=Europe/Riga:20270401T073000,20270402T080000",
    # UTC values (Z) for EXDATE and RDATE, converted to Riga wall time
    "DTSTART;TZID=Europe/Riga:20270105T100000\n"
    "RRULE:FREQ=MONTHLY;BYDAY=1TU\n"
    "EXDATE:20270302T080000Z\n"
    "RDATE:20270315T080000Z",
    # a UTC UNTIL bounds the rule's slots; an RDATE after it still counts
    "DTSTART;TZID=Europe/Riga:20270104T090000\n"
    "RRULE:FREQ=DAILY;UNTIL=20270110T070000Z\n"
    "RDATE;TZID=Europe/Riga:20270601T090000",
    # values in another zone (New York), converted to the schedule's zone
    "DTSTART;TZID=Europe/Riga:20270104T160000\n"
    "RRULE:FREQ=WEEKLY;BYDAY=MO\n"
    "EXDATE;TZID=America/New_York:20270111T090000",
]


def _ours(text: str) -> list[datetime]:
    timing = build_timing(kind="rrule", rule=text, timezone="Europe/Riga")
    return slots_between(timing, START, END, 200)


def _dateutil(text: str) -> list[datetime]:
    # dateutil 2.9 reads TZID on DTSTART and EXDATE but not on RDATE: those values are added
    # to its rruleset here, each in its own zone.
    lines = text.splitlines()
    found = rrulestr("\n".join(x for x in lines if not x.startswith("RDATE")), forceset=True)
    for line in (x for x in lines if x.startswith("RDATE")):
        head, _, values = line.partition(":")
        zone = ZoneInfo(head.partition("TZID=")[2]) if "TZID=" in head else UTC
        for value in values.split(","):
            wall = datetime.strptime(value.rstrip("Z"), "%Y%m%dT%H%M%S")  # noqa: DTZ007
            found.rdate(wall.replace(tzinfo=zone))
    # dateutil's zones put a wall time that a spring-forward gap skips at the offset after the
    # gap; the engine's default keeps the offset from before it ("shift", as zoneinfo's fold=0
    # does): read each slot's wall time again with zoneinfo, then drop what coincides.
    # ``slots_between`` leaves out its start (``after < s``), rrulestr's ``inc=True`` does not.
    slots = {_wall(s).astimezone(UTC) for s in found.between(START, END, inc=True)} - {START}
    return sorted(slots)[:200]


def _wall(slot: datetime) -> datetime:
    zone = getattr(slot.tzinfo, "key", None) or getattr(slot.tzinfo, "_filename", "")
    if isinstance(slot.tzinfo, ZoneInfo) or not zone or slot.tzinfo is UTC:
        return slot
    return slot.replace(tzinfo=ZoneInfo(zone.rpartition("zoneinfo/")[2] or zone))


@pytest.mark.parametrize("text", CASES)
def test_same_slots_as_dateutil_rrulestr(text: str) -> None:
    assert _ours(text) == _dateutil(text)


def test_exdate_and_rdate_in_the_slots() -> None:
    slots = [s.astimezone(RIGA) for s in _ours(CASES[0])]
    days = {s.date().isoformat() for s in slots}
    assert {"2027-12-27", "2027-12-29", "2027-12-31"}.isdisjoint(days)
    assert datetime(2027, 12, 25, 12, tzinfo=RIGA) in slots
    assert "2027-12-24" in days  # the Friday before stays


def test_crlf_folded_lines_and_lowercase_names() -> None:
    text = (
        "dtstart;tzid=Europe/Riga:20270104T090000\r\n"
        "rrule:FREQ=WEEKLY;BYDAY=MO\r\n"
        "EXDATE;TZID=Europe/Riga:20270111T090000,\r\n 20270118T090000"
    )
    slots = _ours(text)
    assert slots[:2] == [
        datetime(2027, 1, 4, 7, tzinfo=UTC),
        datetime(2027, 1, 25, 7, tzinfo=UTC),
    ]


def test_dtstart_line_is_the_anchor_and_its_zone_is_readable() -> None:
    text = "DTSTART;TZID=Europe/Riga:20270104T090000\nRRULE:FREQ=DAILY;INTERVAL=3"
    assert dtstart_zone(text) == "Europe/Riga"
    assert dtstart_zone("FREQ=DAILY") is None
    slots = _ours(text)
    assert slots[:2] == [datetime(2027, 1, 4, 7, tzinfo=UTC), datetime(2027, 1, 7, 7, tzinfo=UTC)]


def test_the_text_is_kept_as_given() -> None:
    timing = build_timing(kind="rrule", rule=CASES[0], timezone="Europe/Riga")
    assert timing.rule.spec.source == CASES[0]  # type: ignore[union-attr]
    assert describe(timing).endswith("plus 1 date, except 3 dates, Europe/Riga")


def test_dst_policy_applies_to_rdate_slots() -> None:
    # 2027-03-28 03:30 does not exist in Riga (clocks go 03:00 -> 04:00).
    text = (
        "DTSTART;TZID=Europe/Riga:20270101T090000\n"
        "RRULE:FREQ=YEARLY;COUNT=1\n"
        "RDATE;TZID=Europe/Riga:20270328T033000,20271031T033000"
    )
    after = datetime(2027, 3, 1, tzinfo=UTC)

    def slots(nonexistent: str, ambiguous: str) -> list[str]:
        timing = build_timing(
            kind="rrule",
            rule=text,
            timezone="Europe/Riga",
            nonexistent=nonexistent,
            ambiguous=ambiguous,
        )
        return [s.isoformat() for s in slots_between(timing, after, END)]

    assert slots("skip", "first") == ["2027-10-31T00:30:00+00:00"]
    assert slots("shift", "both") == [
        "2027-03-28T01:30:00+00:00",  # 04:30 EEST: the offset from before the gap
        "2027-10-31T00:30:00+00:00",
        "2027-10-31T01:30:00+00:00",
    ]


def test_min_gap_counts_rdates() -> None:
    text = (
        "DTSTART;TZID=Europe/Riga:20270104T090000\n"
        "RRULE:FREQ=DAILY\n"
        "RDATE;TZID=Europe/Riga:20270105T090100"
    )
    timing = build_timing(kind="rrule", rule=text, timezone="Europe/Riga")
    assert timing.min_gap == 60


@pytest.mark.parametrize(
    ("text", "field", "words"),
    [
        ("DTSTART;TZID=Europe/Paris:20270104T090000\nRRULE:FREQ=DAILY", "rrule.DTSTART", "differs"),
        ("DTSTART:20270104T090000\nEXDATE:20270105T090000", "rrule", "RRULE line is required"),
        ("RRULE:FREQ=DAILY\nRRULE:FREQ=WEEKLY", "rrule", "one RRULE line"),
        ("RRULE:FREQ=DAILY\nEXRULE:FREQ=WEEKLY", "rrule", "unsupported line"),
        ("RRULE:FREQ=DAILY\nEXDATE;VALUE=DATE:20271224", "rrule.EXDATE", "VALUE=DATE"),
        ("RRULE:FREQ=DAILY\nEXDATE:2027-12-24", "rrule.EXDATE", "YYYYMMDDTHHMMSS"),
        ("RRULE:FREQ=DAILY\nEXDATE:20270230T090000", "rrule.EXDATE", "not a real date"),
        ("RRULE:FREQ=DAILY\nRDATE;TZID=Mars/Base:20270101T090000", "rrule.RDATE", "Mars/Base"),
        ("RRULE:FREQ=DAILY\nRDATE;TZID=UTC:20270101T090000Z", "rrule.RDATE", "drop the TZID"),
        ("RRULE:FREQ=DAILY\nRDATE;X-FOO=1:20270101T090000", "rrule.RDATE", "unsupported param"),
        ("RRULE:FREQ=DAILY\nFREQ=WEEKLY", "rrule", "NAME:VALUE"),
        ("RRULE:FREQ=DAILY\nRDATE:20270101T09\x0000", "rrule", "control characters"),
    ],
)
def test_errors_name_the_line(text: str, field: str, words: str) -> None:
    with pytest.raises(InvalidRule) as caught:
        build_timing(
            kind="rrule", rule=text, timezone="Europe/Riga", anchor=datetime(2027, 1, 1, tzinfo=UTC)
        )
    assert caught.value.field == field
    assert words in caught.value.message


def test_date_lists_are_capped() -> None:
    first = datetime(2027, 1, 1, 9)
    values = ",".join(
        (first + timedelta(hours=i)).strftime("%Y%m%dT%H%M%S") for i in range(MAX_DATES + 1)
    )
    text = f"DTSTART:20270101T090000\nRRULE:FREQ=YEARLY;COUNT=1\nRDATE:{values}"
    with pytest.raises(InvalidRule, match=f"more than {MAX_DATES} RDATE"):
        build_timing(kind="rrule", rule=text, timezone="UTC")
    capped = ",".join(values.split(",")[:MAX_DATES])
    timing = build_timing(
        kind="rrule", rule=f"DTSTART:20270101T090000\nRRULE:FREQ=YEARLY;COUNT=1\nRDATE:{capped}"
    )
    assert len(slots_between(timing, START, END, 2000)) == MAX_DATES


# -- property: any EXDATE/RDATE lists, compared with rrulestr ---------------------------------

HOURS = st.integers(0, 23)
DAYS_2027 = st.dates(min_value=date(2027, 1, 1), max_value=date(2027, 12, 31))


@st.composite
def content_lines(draw: st.DrawFn) -> str:
    zone = draw(st.sampled_from(["Europe/Riga", "America/New_York", "UTC"]))
    hour = draw(HOURS)
    rrule = draw(
        st.sampled_from(
            [
                f"FREQ=DAILY;BYHOUR={hour};BYMINUTE=30",
                f"FREQ=WEEKLY;BYDAY=MO,TH;BYHOUR={hour};BYMINUTE=0",
                f"FREQ=DAILY;INTERVAL=3;BYHOUR={hour};BYMINUTE=15;COUNT=40",
                f"FREQ=MONTHLY;BYDAY=-1SU;BYHOUR={hour};BYMINUTE=30",
            ]
        )
    )
    lines = [f"DTSTART;TZID={zone}:20270101T000000", f"RRULE:{rrule}"]
    for name in ("EXDATE", "RDATE"):
        for _ in range(draw(st.integers(0, 2))):
            days = draw(st.lists(DAYS_2027, min_size=1, max_size=5))
            values = ",".join(
                f"{d:%Y%m%d}T{draw(HOURS):02d}{draw(st.sampled_from([0, 15, 30])):02d}00"
                for d in days
            )
            lines.append(f"{name};TZID={zone}:{values}")
    return "\n".join(lines)


@settings(max_examples=60, deadline=None)
@given(content_lines())
@example("DTSTART;TZID=Europe/Riga:20270101T000000\nRRULE:FREQ=DAILY;BYHOUR=3;BYMINUTE=30")
def test_any_exdate_and_rdate_lists_agree_with_rrulestr(text: str) -> None:
    zone = text.partition("TZID=")[2].partition(":")[0]
    timing = build_timing(kind="rrule", rule=text, timezone=zone)
    ours = slots_between(timing, START, END, 200)
    assert ours == _dateutil(text), text
