"""Bounded work for what a user types (security review, finding 2): the RDATE gap check looks
only at each RDATE's neighbouring rule slots (same answer as the former walk over a whole day
around each RDATE), and a solar rule stops looking after ``QUIET_DAYS`` dates in a row without
its event. The bounds are asserted by counting steps, never by timing (speed:
bench/timing_limits.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from functools import partial
from itertools import pairwise
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_app.errors import InvalidRule
from scheduler_app.timing import build_timing, first_slot, next_after, slots_between
from scheduler_app.timing.calendars.solar import QUIET_DAYS, SolarRule, parse_solar, solar_items
from scheduler_app.timing.content_lines import GAP_REACH, dates_gap
from scheduler_app.timing.rrules import _bounded_walk, parse_rrule

RIGA = ZoneInfo("Europe/Riga")
NOW = datetime(2026, 12, 2, tzinfo=UTC)


def review_rule(rrule: str, second: int) -> str:
    """The review's input: 1,000 daily RDATEs beside a sub-daily RRULE (16 KB)."""
    base = datetime(2027, 1, 1, 0, 0, second)
    rdates = ",".join(f"{base + timedelta(days=i):%Y%m%dT%H%M%S}" for i in range(1000))
    return f"DTSTART:20261201T000000\n{rrule}\nRDATE:{rdates}"


def reference_gap(
    rule_gap: int | None,
    rdates: tuple[datetime, ...],
    rule_times: Callable[[datetime], Iterator[datetime]],
) -> int | None:
    """The former ``dates_gap``: every rule slot within a day of every RDATE."""
    gaps = [int((b - a).total_seconds()) for a, b in pairwise(rdates)]
    for rdate in rdates:
        for local in rule_times(rdate - GAP_REACH):
            if local > rdate + GAP_REACH:
                break
            if local != rdate:
                gaps.append(int(abs((local - rdate).total_seconds())))
    found = [gap for gap in gaps if gap > 0]
    if rule_gap is not None:
        found.append(rule_gap)
    return min(found) if found else None


class Counted:
    """``rule_times`` that counts the slots it hands out."""

    def __init__(self, rule_times: Callable[[datetime], Iterator[datetime]]) -> None:
        self.rule_times = rule_times
        self.steps = 0

    def __call__(self, start: datetime, end: datetime) -> Iterator[datetime]:
        for local in self.rule_times(start):
            self.steps += 1
            yield local


@pytest.mark.parametrize(
    ("rrule", "second", "gap"),
    [
        ("RRULE:FREQ=MINUTELY", 7, 7),  # p11.py
        ("RRULE:FREQ=SECONDLY;INTERVAL=10", 7, 3),
        ("RRULE:FREQ=MINUTELY;BYSECOND=0,10,20,30,40,50", 7, 3),
        ("RRULE:FREQ=MINUTELY;BYSECOND=0", 30, 30),  # p12.py: accepted (minimum 10 s)
    ],
)
def test_review_inputs_give_the_same_gap_in_a_few_steps_per_rdate(
    rrule: str, second: int, gap: int
) -> None:
    spec = parse_rrule(review_rule(rrule, second), None, RIGA)
    assert spec.min_gap == gap
    assert len(spec.rdates) == 1000
    body = parse_rrule(f"DTSTART:20261201T000000\n{rrule}", None, RIGA)
    counted = Counted(body.iter_local)
    assert dates_gap(body.min_gap, spec.rdates, counted) == gap
    # The former walk took 1,440 to 17,280 steps per RDATE (seconds to minutes in all).
    assert counted.steps <= 3 * len(spec.rdates)


def test_the_timing_reports_the_gap_that_the_minimum_interval_refuses() -> None:
    text = review_rule("RRULE:FREQ=SECONDLY;INTERVAL=10", 7)
    assert build_timing(kind="rrule", rule=text, timezone="Europe/Riga").min_gap == 3


SUB_DAILY = [
    "FREQ=MINUTELY;INTERVAL=7",
    "FREQ=HOURLY;BYMINUTE=0,20",
    "FREQ=MINUTELY;BYHOUR=9,17;BYMINUTE=0,30",
    "FREQ=SECONDLY;INTERVAL=45;BYHOUR=3",
    "FREQ=DAILY;BYHOUR=9;BYMINUTE=0",
    "FREQ=WEEKLY;BYDAY=MO;BYHOUR=0;BYMINUTE=0",
    "FREQ=DAILY;COUNT=1",
]


@settings(max_examples=80, deadline=None)
@given(
    rrule=st.sampled_from(SUB_DAILY),
    offsets=st.lists(st.integers(0, 20 * 86_400), min_size=1, max_size=8, unique=True),
)
def test_the_bounded_gap_equals_the_former_walk(rrule: str, offsets: list[int]) -> None:
    body = parse_rrule(f"DTSTART:20270101T000000\nRRULE:{rrule}", None, RIGA)
    rdates = tuple(sorted(datetime(2027, 1, 1) + timedelta(seconds=s) for s in offsets))
    # The walk the rule is checked with is the rule without COUNT (``parse_rrule``).
    expected = reference_gap(body.min_gap, rdates, replace(body, count=None).iter_local)
    assert dates_gap(body.min_gap, rdates, partial(_bounded_walk, body)) == expected


# -- solar: an event that never falls on a local date -----------------------------------------


@dataclass(frozen=True)
class CountedRule(SolarRule):
    """A solar rule that counts the local dates it is asked about."""

    asked: list[date] = field(default_factory=list, compare=False)

    def event_on(self, day: date, zone: ZoneInfo) -> datetime | None:
        self.asked.append(day)
        return super().event_on(day, zone)


def counted(text: str) -> CountedRule:
    rule = parse_solar(text)
    return CountedRule(rule.event, rule.latitude, rule.longitude)


@pytest.mark.parametrize("rule", ["sunset 89.99 -179.9", "dusk 90 -179.9", "dusk -89.99 -179.9"])
def test_a_solar_event_that_never_happens_is_refused_with_what_and_where(rule: str) -> None:
    timing = build_timing(kind="solar", rule=rule, timezone="UTC")
    with pytest.raises(InvalidRule) as caught:
        first_slot(timing, NOW)  # what the services ask when a schedule is saved (p15.py)
    assert caught.value.code == "never_fires"
    assert caught.value.field == "rule"
    event = rule.split()[0]
    assert f"no {event} at latitude" in caught.value.message
    assert "1,500 days in a row (2026-12-01 to 2031-01-08)" in caught.value.message
    assert "Pick another event or place" in caught.value.message
    assert next_after(timing, NOW) is None  # the beat, sync and import: no slot, no error


@pytest.mark.parametrize("strict", [True, False])
def test_the_search_asks_about_quiet_days_only_not_every_day_to_9999(strict: bool) -> None:
    rule = counted("sunset 89.99 -179.9")
    items = solar_items(rule, ZoneInfo("UTC"), NOW, strict=strict)
    if strict:
        with pytest.raises(InvalidRule, match="never fires"):
            next(items)
    else:
        assert list(items) == []
    # formerly every local date up to 9999-12-29 (about 2.9 million, 90 s)
    assert len(rule.asked) == QUIET_DAYS
    assert rule.asked[0] == date(2026, 12, 1)


def test_a_day_with_the_event_starts_the_quiet_count_again() -> None:
    rule = counted("sunrise 89.99 -179.9")  # in UTC: 2027-09-25, then 2031-09-25
    items = solar_items(rule, ZoneInfo("UTC"), NOW, strict=True)
    assert next(items)[0].date() == date(2027, 9, 25)
    assert next(items)[0].date() == date(2031, 9, 25)  # 1,460 quiet days between them


def test_an_event_that_returns_after_four_years_is_still_found() -> None:
    """Near a pole an event can skip three years of the leap-year cycle (1,460 quiet days)."""
    timing = build_timing(kind="solar", rule="sunset -89.99 0", timezone="UTC")
    after = datetime(2032, 9, 21, tzinfo=UTC)
    found = first_slot(timing, after)
    assert found is not None
    assert found.date().isoformat() == "2036-09-20"
    assert slots_between(timing, datetime(2032, 9, 1, tzinfo=UTC), found) == [
        datetime(2032, 9, 20, 19, 5, 24, tzinfo=UTC),
        found,
    ]


@pytest.mark.parametrize(
    ("text", "gap"),
    [
        ("DTSTART:00010101T000000\nRRULE:FREQ=DAILY\nRDATE:00010101T000000", 86_400),
        ("DTSTART:00010101T000000\nRRULE:FREQ=DAILY;COUNT=1\nRDATE:00010101T000005", 5),
        ("DTSTART:99991230T000000\nRRULE:FREQ=DAILY\nRDATE:99991231T235959", 86_399),
        ("DTSTART:99991231T000000\nRRULE:FREQ=HOURLY\nRDATE:99991231T235959", 3_599),
    ],
)
def test_rdates_at_the_ends_of_the_calendar_are_measured_not_an_overflow(
    text: str, gap: int
) -> None:
    assert parse_rrule(text, None, ZoneInfo("UTC")).min_gap == gap  # was an OverflowError


# -- security review 10: the gap check's walk is bounded ------------------------------------


@pytest.mark.parametrize(
    "rule",
    [
        # A weekly grid on Mondays filtered to Tuesdays: never a slot, each RDATE walked to 9999.
        "DTSTART:20240101T000000\nRRULE:FREQ=HOURLY;INTERVAL=168;BYDAY=TU\n"
        "RDATE:20300102T000000,20310102T000000",
        # Feb 29 every 35,064 hours until 2100, then never: an RDATE after 2100.
        "DTSTART:20280229T000000\nRRULE:FREQ=HOURLY;INTERVAL=35064;BYMONTH=2;BYMONTHDAY=29\n"
        "RDATE:20261207T000000,21010101T000000,21020101T000000",
    ],
    ids=["monday-grid-tuesdays", "after-2100"],
)
def test_the_gap_check_never_walks_past_a_day_around_each_rdate(
    rule: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review 10 (High): 6-28 s of CPU per RDATE, up to 1,000 RDATEs in a request; the days
    the walk looks at are counted here (never timed)."""
    from scheduler_app.timing import rrule_days

    years: list[int] = []
    real = rrule_days.days_of_year.__wrapped__

    def counted(days: object, year: int) -> object:
        years.append(year)
        return real(days, year)

    monkeypatch.setattr(rrule_days, "days_of_year", counted)
    spec = parse_rrule(rule, None, ZoneInfo("UTC"))
    assert spec.rdates
    assert len(years) <= 4 * len(spec.rdates), years[:20]


def test_an_rdate_in_the_last_day_of_9999_is_an_answer_not_an_overflow() -> None:
    """Review 10 (Low): ``day_start + 1 day`` on 9999-12-31 raised OverflowError (HTTP 500)."""
    spec = parse_rrule(
        "DTSTART:20240101T000000\nRRULE:FREQ=HOURLY;INTERVAL=168;BYDAY=FR\nRDATE:99991201T000000",
        None,
        ZoneInfo("UTC"),
    )
    assert spec.rdates == (datetime(9999, 12, 1),)
