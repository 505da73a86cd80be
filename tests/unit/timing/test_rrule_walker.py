"""The cron-walker fast path for simple RRULEs gives exactly dateutil's occurrences."""

from __future__ import annotations

from datetime import datetime, timedelta
from itertools import islice
from zoneinfo import ZoneInfo

from dateutil import rrule as du
from hypothesis import example, given, settings
from hypothesis import strategies as st

from scheduler_app.errors import InvalidRule
from scheduler_app.timing.rrules import parse_rrule

DAYS = ["MO", "TU", "WE", "TH", "FR", "SA", "SU"]
ZONE = ZoneInfo("Europe/Riga")


def _subset(values: list, max_size: int) -> st.SearchStrategy:
    return st.lists(st.sampled_from(values), min_size=1, max_size=max_size, unique=True)


@st.composite
def simple_rules(draw: st.DrawFn) -> str:
    parts = [f"FREQ={draw(st.sampled_from(['DAILY', 'WEEKLY', 'MONTHLY', 'YEARLY']))}"]
    if draw(st.booleans()):
        parts.append("BYDAY=" + ",".join(draw(_subset(DAYS, 3))))
    if draw(st.booleans()):
        parts.append("BYMONTHDAY=" + ",".join(map(str, draw(_subset(list(range(1, 32)), 3)))))
    if draw(st.booleans()):
        parts.append("BYMONTH=" + ",".join(map(str, draw(_subset(list(range(1, 13)), 4)))))
    parts.append("BYHOUR=" + ",".join(map(str, draw(_subset(list(range(24)), 2)))))
    parts.append("BYMINUTE=" + ",".join(map(str, draw(_subset(list(range(60)), 2)))))
    return ";".join(parts)


@settings(max_examples=150, deadline=None)
@given(
    rule=simple_rules(),
    anchor=st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2030, 1, 1)),
    offset_days=st.integers(min_value=0, max_value=4000),
)
@example(
    rule="FREQ=MONTHLY;BYMONTH=2;BYHOUR=0;BYMINUTE=0", anchor=datetime(2000, 1, 30), offset_days=0
)
def test_walker_matches_dateutil(rule: str, anchor: datetime, offset_days: int) -> None:
    anchor = anchor.replace(second=0, microsecond=0)
    try:
        spec = parse_rrule(rule, anchor, ZONE)
    except InvalidRule:  # refused as never producing a slot: dateutil must agree
        assert next(iter(du.rrulestr(rule, dtstart=anchor)), None) is None, rule
        return
    assert spec.walker is not None, rule
    start = anchor + timedelta(days=offset_days)
    reference = du.rrulestr(rule, dtstart=anchor)
    expected = list(islice(reference.xafter(start, inc=True), 20))
    assert list(islice(spec.iter_local(start), 20)) == expected


def test_rules_needing_dateutil_do_not_take_the_fast_path() -> None:
    anchor = datetime(2026, 1, 1, 9, 0)
    for rule in (
        "FREQ=DAILY;INTERVAL=2",
        "FREQ=MONTHLY;BYDAY=-1FR",
        "FREQ=MONTHLY;BYMONTHDAY=-1",
        "FREQ=MONTHLY;BYDAY=MO,TU;BYSETPOS=1",
        "FREQ=DAILY;COUNT=5",
        "FREQ=HOURLY",
        "FREQ=DAILY;BYSECOND=30",
    ):
        assert parse_rrule(rule, anchor, ZONE).walker is None, rule
