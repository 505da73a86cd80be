"""Attacks the promise "The time engine never reads the clock" (docs/guarantees.md, the table
of promises and the tests that hold them: "none that fails on a call to `now()` in
`scheduler_app.timing`").

Every way of reading the wall clock raises while the engine works: ``datetime.now``,
``datetime.utcnow``, ``datetime.today`` and ``date.today`` (the names replaced in every module of
``scheduler_app.timing`` and of the libraries it computes with: dateutil, astral, holidays),
``time.time``, ``time.time_ns``, ``time.localtime()`` and ``time.gmtime()`` without an argument,
and ``SystemClock.now``. Under that, timings of every kind are built and asked for their slots,
and the slots are the ones worked out by hand.

Not patched: the CPU clock of the search budget (``budget.py`` reads ``time.thread_time`` to
bound the work of one question); it never decides a slot, only when to give up.
"""

from __future__ import annotations

import sys
import time
import types
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, timedelta
from itertools import islice
from typing import Any, NoReturn

import holidays
import pytest

from scheduler_app.clock import SystemClock
from scheduler_app.timing import (
    build_timing,
    describe,
    first_slot,
    first_slot_from,
    iter_slots,
    next_after,
    previous_slot,
    rrule_days,
    slots_between,
    zones,
)
from scheduler_app.timing import engine as timing_engine
from scheduler_app.timing.calendars import public_holidays
from scheduler_app.timing.engine import holiday_skips, iter_annotated
from scheduler_app.timing.phrases import parse_text

from .helpers import utc

ENGINE_MODULES = ("scheduler_app.timing", "scheduler_app.errors", "scheduler_app.compat")
"""The engine, and the package modules it imports (errors, the install hint)."""
LIBRARIES = ("dateutil", "astral", "holidays")
"""What the engine computes with: RRULEs, solar events, public holidays."""


class ClockRead(AssertionError):
    """The engine read the wall clock."""


def _refuse(what: str) -> NoReturn:
    raise ClockRead(f"the time engine read the clock: {what}")


class _SameType(type):
    """Real datetimes and dates pass ``isinstance`` against the stand-ins: the engine's checks
    see what they saw before, and arithmetic on real values keeps real values."""

    _real: type

    def __instancecheck__(cls, instance: object) -> bool:
        return isinstance(instance, cls._real)

    def __subclasscheck__(cls, subclass: type) -> bool:
        return issubclass(subclass, cls._real)


class ClocklessDatetime(datetime, metaclass=_SameType):
    _real = datetime

    @classmethod
    def now(cls, tz: Any = None) -> NoReturn:
        _refuse("datetime.now()")

    @classmethod
    def utcnow(cls) -> NoReturn:
        _refuse("datetime.utcnow()")

    @classmethod
    def today(cls) -> NoReturn:
        _refuse("datetime.today()")


class ClocklessDate(date, metaclass=_SameType):
    _real = date

    @classmethod
    def today(cls) -> NoReturn:
        _refuse("date.today()")


def _clockless_module() -> types.ModuleType:
    """The ``datetime`` module as ``import datetime`` users see it, with the stand-ins."""
    module = types.ModuleType("datetime")
    module.__dict__.update(vars(sys.modules["datetime"]))
    module.datetime = ClocklessDatetime  # type: ignore[attr-defined]
    module.date = ClocklessDate  # type: ignore[attr-defined]
    return module


def _without_argument(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
    def guarded(*args: Any) -> Any:
        if not args or args[0] is None:
            _refuse(f"time.{name}() without an argument")
        return real(*args)

    return guarded


def _warm_up() -> None:
    """Import what the engine imports lazily (a country's holiday module), so that the walk
    over ``sys.modules`` replaces its names too, then drop the engine's caches so the patched
    run computes every value afresh instead of reading what an earlier test left."""
    holidays.country_holidays("LV")
    holidays.country_holidays("US", subdiv="NY")
    _drop_caches()


def _drop_caches() -> None:
    public_holidays._calendar.cache_clear()
    rrule_days.days_of_year.cache_clear()
    rrule_days.cached_rule.cache_clear()
    zones._transition_marks.cache_clear()


@pytest.fixture
def no_clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Make every read of the wall clock raise; the names of the modules patched."""
    _warm_up()
    clockless = _clockless_module()
    real_module = sys.modules["datetime"]
    patched: list[str] = []
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith(ENGINE_MODULES + LIBRARIES):
            continue
        for attribute, value in list(vars(module).items()):
            if value is datetime:
                monkeypatch.setattr(module, attribute, ClocklessDatetime)
            elif value is date:
                monkeypatch.setattr(module, attribute, ClocklessDate)
            elif value is real_module:
                monkeypatch.setattr(module, attribute, clockless)
            else:
                continue
            patched.append(name)
    monkeypatch.setattr(time, "time", lambda: _refuse("time.time()"))
    monkeypatch.setattr(time, "time_ns", lambda: _refuse("time.time_ns()"))
    monkeypatch.setattr(time, "localtime", _without_argument("localtime", time.localtime))
    monkeypatch.setattr(time, "gmtime", _without_argument("gmtime", time.gmtime))
    monkeypatch.setattr(SystemClock, "now", lambda self: _refuse("SystemClock.now()"))
    yield patched
    _drop_caches()  # what the patched run computed is not left to the tests that follow


def test_the_patch_is_in_place_in_the_engine_and_its_libraries(no_clock: list[str]) -> None:
    for module in ("scheduler_app.timing.engine", "scheduler_app.timing.rules"):
        assert module in no_clock
    assert any(name.startswith("dateutil") for name in no_clock)
    assert any(name.startswith("astral") for name in no_clock)
    assert any(name.startswith("holidays.countries") for name in no_clock)
    with pytest.raises(ClockRead):
        timing_engine.datetime.now(UTC)
    with pytest.raises(ClockRead):
        sys.modules["scheduler_app.timing.calendars.solar"].date.today()
    with pytest.raises(ClockRead):
        sys.modules["dateutil.rrule"].datetime.datetime.now()
    with pytest.raises(ClockRead):
        sys.modules["astral"].now()
    with pytest.raises(ClockRead):
        time.time()
    with pytest.raises(ClockRead):
        time.localtime()
    with pytest.raises(ClockRead):
        SystemClock().now()
    # What the engine does with datetimes still works: real values pass its checks.
    assert isinstance(utc(2027, 1, 1), timing_engine.datetime)
    assert time.gmtime(0).tm_year == 1970


def test_cron_slots_across_the_riga_and_new_york_transitions_read_no_clock(
    no_clock: list[str],
) -> None:
    riga_nine = build_timing(kind="cron", rule="0 9 * * *", timezone="Europe/Riga")
    # Riga goes to summer time on Sunday 2027-03-28 at 03:00 (UTC+2 -> UTC+3): 09:00 is 07:00
    # UTC on Saturday, 06:00 UTC from Sunday on.
    assert next_after(riga_nine, utc(2027, 3, 27, 12)) == utc(2027, 3, 28, 6)
    assert list(islice(iter_slots(riga_nine, utc(2027, 3, 26, 8)), 3)) == [
        utc(2027, 3, 27, 7),
        utc(2027, 3, 28, 6),
        utc(2027, 3, 29, 6),
    ]
    assert previous_slot(riga_nine, utc(2027, 3, 28, 5)) == utc(2027, 3, 27, 7)
    # 03:30 does not exist on that Sunday: a fixed-hour job runs at the next valid time, 04:00
    # EEST (01:00 UTC), never dropped.
    riga_gap = build_timing(kind="cron", rule="30 3 * * *", timezone="Europe/Riga")
    assert slots_between(riga_gap, utc(2027, 3, 27), utc(2027, 3, 29, 12)) == [
        utc(2027, 3, 27, 1, 30),
        utc(2027, 3, 28, 1),
        utc(2027, 3, 29, 0, 30),
    ]
    # New York falls back on Sunday 2027-11-07 at 02:00 EDT: 01:30 happens twice; a fixed-hour
    # job runs once (the first, EDT), every 30 minutes keeps its cadence through both.
    ny_once = build_timing(kind="cron", rule="30 1 * * *", timezone="America/New_York")
    assert slots_between(ny_once, utc(2027, 11, 7), utc(2027, 11, 8, 12)) == [
        utc(2027, 11, 7, 5, 30),
        utc(2027, 11, 8, 6, 30),
    ]
    ny_half_hours = build_timing(kind="cron", rule="*/30 * * * *", timezone="America/New_York")
    assert slots_between(ny_half_hours, utc(2027, 11, 7, 4, 45), utc(2027, 11, 7, 7)) == [
        utc(2027, 11, 7, 5),
        utc(2027, 11, 7, 5, 30),
        utc(2027, 11, 7, 6),
        utc(2027, 11, 7, 6, 30),
        utc(2027, 11, 7, 7),
    ]
    assert first_slot_from(riga_nine, utc(2027, 3, 28, 6)) == utc(2027, 3, 28, 6)
    assert describe(riga_nine)


def test_rrule_slots_with_dtstart_tzid_rdate_and_exdate_read_no_clock(
    no_clock: list[str],
) -> None:
    content = (
        "DTSTART;TZID=Europe/Riga:20270104T090000\n"
        "RRULE:FREQ=WEEKLY;BYDAY=MO,WE,FR\n"
        "EXDATE;TZID=Europe/Riga:20270106T090000\n"
        "RDATE;TZID=Europe/Riga:20270109T120000"
    )
    weekly = build_timing(kind="rrule", rule=content, timezone="Europe/Riga")
    # Winter, UTC+2: Monday 4th, (Wednesday 6th left out), Friday 8th, the added Saturday at
    # noon, Monday 11th.
    assert slots_between(weekly, utc(2027, 1, 3), utc(2027, 1, 11, 12)) == [
        utc(2027, 1, 4, 7),
        utc(2027, 1, 8, 7),
        utc(2027, 1, 9, 10),
        utc(2027, 1, 11, 7),
    ]
    assert "plus 1 date, except 1 date" in describe(weekly)
    # A naive anchor is wall time in the zone; the daily 09:00 follows the clocks forward.
    daily = build_timing(
        kind="rrule",
        rule="FREQ=DAILY;BYHOUR=9;BYMINUTE=0;BYSECOND=0",
        timezone="Europe/Riga",
        anchor=datetime(2027, 3, 26, 9),
    )
    assert slots_between(daily, utc(2027, 3, 25), utc(2027, 3, 29, 12)) == [
        utc(2027, 3, 26, 7),
        utc(2027, 3, 27, 7),
        utc(2027, 3, 28, 6),
        utc(2027, 3, 29, 6),
    ]
    counted = build_timing(
        kind="rrule",
        rule="FREQ=MONTHLY;BYDAY=1MO;COUNT=3",
        timezone="America/New_York",
        anchor="2027-01-04T09:00:00-05:00",
        starts_at=utc(2027, 1, 1),
        max_count=2,
    )
    assert list(iter_slots(counted, utc(2026, 12, 1))) == [
        utc(2027, 1, 4, 14),
        utc(2027, 2, 1, 14),
    ]
    assert first_slot(counted, utc(2027, 1, 1)) == utc(2027, 1, 4, 14)


def test_interval_and_one_time_slots_read_no_clock(no_clock: list[str]) -> None:
    quarter = build_timing(
        kind="interval", rule="15m", anchor=utc(2027, 1, 1, 0, 7), timezone="Europe/Riga"
    )
    # The grid is anchor + k * 15 minutes: :07, :22, :37, :52 of every hour, DST or not.
    assert next_after(quarter, utc(2027, 6, 1, 10)) == utc(2027, 6, 1, 10, 7)
    assert previous_slot(quarter, utc(2027, 6, 1, 10)) == utc(2027, 6, 1, 9, 52)
    assert slots_between(quarter, utc(2027, 3, 28, 0, 50), utc(2027, 3, 28, 1, 30)) == [
        utc(2027, 3, 28, 0, 52),
        utc(2027, 3, 28, 1, 7),
        utc(2027, 3, 28, 1, 22),
    ]
    bounded = build_timing(
        kind="interval",
        rule=timedelta(hours=1),
        anchor="2027-01-01T00:00:00Z",
        starts_at=utc(2027, 1, 1, 5),
        ends_at=utc(2027, 1, 1, 7),
    )
    assert list(iter_slots(bounded, utc(2026, 1, 1))) == [
        utc(2027, 1, 1, 5),
        utc(2027, 1, 1, 6),
        utc(2027, 1, 1, 7),
    ]
    instant = build_timing(kind="once", rule="2027-05-01T12:00:00Z")
    assert next_after(instant, utc(2027, 1, 1)) == utc(2027, 5, 1, 12)
    assert next_after(instant, utc(2027, 5, 1, 12)) is None
    # A naive one-time rule is wall time: 14:00 in Riga on 1 July is 11:00 UTC (summer).
    local = build_timing(kind="once", rule=datetime(2027, 7, 1, 14), timezone="Europe/Riga")
    assert first_slot_from(local, utc(2027, 1, 1)) == utc(2027, 7, 1, 11)
    assert describe(local)


def test_active_windows_and_holidays_read_no_clock(no_clock: list[str]) -> None:
    business = build_timing(
        kind="cron", rule="0 * * * *", timezone="Europe/Paris", window="MON-FRI 09:00-18:00"
    )
    # Friday 2027-03-26 16:30 UTC is 17:30 in Paris: 17:00 CET is inside, then the weekend is
    # deferred to Monday's opening, 09:00 CEST (summer time since Sunday) = 07:00 UTC.
    assert [item[0] for item in islice(iter_annotated(business, utc(2027, 3, 26, 15, 30)), 3)] == [
        utc(2027, 3, 26, 16),
        utc(2027, 3, 29, 7),
        utc(2027, 3, 29, 8),
    ]
    skipping = build_timing(
        kind="cron",
        rule="0 * * * *",
        timezone="Europe/Paris",
        window="MON-FRI 09:00-18:00",
        window_policy="skip",
    )
    assert slots_between(skipping, utc(2027, 3, 26, 16, 30), utc(2027, 3, 29, 7, 30)) == [
        utc(2027, 3, 29, 7)
    ]
    latvia = build_timing(
        kind="cron", rule="0 9 * * *", timezone="Europe/Riga", exclude_holidays="LV"
    )
    new_year = slots_between(latvia, utc(2026, 12, 29), utc(2027, 1, 3))
    assert utc(2027, 1, 1, 7) not in new_year  # New Year's Day in Riga
    assert utc(2027, 1, 2, 7) in new_year  # an ordinary Saturday
    skipped = holiday_skips(latvia, utc(2026, 12, 31, 12), utc(2027, 1, 1, 12))
    assert [slot for slot, _ in skipped] == [utc(2027, 1, 1, 7)]
    new_york = build_timing(
        kind="cron", rule="0 21 * * *", timezone="America/New_York", exclude_holidays="US-NY"
    )
    july = slots_between(new_york, utc(2027, 7, 1), utc(2027, 7, 8))
    assert utc(2027, 7, 4, 1) in july  # 21:00 on 3 July, local date the 3rd
    assert utc(2027, 7, 5, 1) not in july  # 21:00 on Independence Day


def test_solar_slots_read_no_clock(no_clock: list[str]) -> None:
    riga_noon = build_timing(kind="solar", rule="noon 56.9496 24.1052", timezone="Europe/Riga")
    slots = slots_between(riga_noon, utc(2027, 6, 20, 12), utc(2027, 6, 23, 12))
    # Solar noon at 24.1 degrees east is near 10:20 UTC in June (the equation of time moves it
    # by about a minute): one slot a local day.
    assert [slot.date() for slot in slots] == [
        date(2027, 6, 21),
        date(2027, 6, 22),
        date(2027, 6, 23),
    ]
    for slot in slots:
        assert (
            utc(slot.year, slot.month, slot.day, 10, 10)
            < slot
            < utc(slot.year, slot.month, slot.day, 10, 35)
        )
    assert previous_slot(riga_noon, slots[0]) == slots[0]
    tromso = build_timing(kind="solar", rule="sunrise 69.6496 18.956", timezone="Europe/Oslo")
    # Midnight sun: no sunrise in Tromsø around the solstice, the next one in late July.
    following = next_after(tromso, utc(2027, 6, 21))
    assert following is not None and following > utc(2027, 7, 15)
    assert describe(tromso)


def test_phrases_read_as_rules_read_no_clock(no_clock: list[str]) -> None:
    weekdays = parse_text("every weekday at 9:00 in Europe/Riga")
    assert (weekdays.kind, weekdays.rule, weekdays.timezone) == (
        "cron",
        "0 9 * * MON-FRI",
        "Europe/Riga",
    )
    timing = build_timing(kind=weekdays.kind, rule=weekdays.rule, timezone=weekdays.timezone)
    # Saturday 2027-03-27 12:00 UTC: the next weekday 09:00 is Monday 29th, summer time.
    assert next_after(timing, utc(2027, 3, 27, 12)) == utc(2027, 3, 29, 6)
    first_monday = parse_text("on the first monday of the month at 9:00", timezone="Europe/Riga")
    assert first_monday.kind == "rrule"
    assert first_monday.anchor is None  # the service picks the anchor: the phrase reads no clock
    every_90 = parse_text("every 90 minutes")
    assert (every_90.kind, every_90.rule) == ("interval", "5400")
    dated = parse_text("on 5 September 2027 at 14:30 in Europe/Riga")
    assert dated.kind == "once"
