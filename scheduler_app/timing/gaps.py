"""How close two slots of a calendar rule can be, and whether a rule can fire at all.

Both answers are computed from the rule's parts, once, when it is parsed; nothing walks years.

The gap is measured on the rule's wall clock (the zone's local time). A lower bound is
enough to refuse floods soundly: parts that only *remove* slots (day filters such as BYDAY or
BYMONTH, BYSETPOS on day-or-longer periods) are left out, since removing slots never brings
two of the remaining ones closer. Sub-daily rules (HOURLY, MINUTELY, SECONDLY) are walked
exactly over one full cycle of their time-of-day pattern (at most 86,400 candidates). On a
DST transition day the ``next_valid``, ``shift`` and ``both`` choices can bring one or two
pairs of slots closer than that (01:59 and a 02:30 that does not exist, moved to 03:00):
a few slots per transition, never a flood.
"""

from __future__ import annotations

import calendar
from collections.abc import Sequence
from datetime import datetime, timedelta
from itertools import pairwise
from math import gcd
from typing import Any

from dateutil import rrule as du

DAY = 86400
UNIT_SECONDS = {du.HOURLY: 3600, du.MINUTELY: 60, du.SECONDLY: 1}
NEVER = None
"""``min_gap`` of a rule that never produces two slots (a single slot, or none)."""


def times_gap(times: Sequence[int], period: int) -> int | None:
    """Smallest distance between sorted offsets repeated every ``period`` seconds."""
    if not times:
        return None
    ordered = sorted(set(times))
    gaps = [b - a for a, b in pairwise(ordered)]
    gaps.append(period - ordered[-1] + ordered[0])
    return min(gaps)


def calendar_gap(freq: int, interval: int, options: dict[str, Any]) -> int:
    """A lower bound on the distance between two slots of a day-or-longer rule, in seconds."""
    times = [
        h * 3600 + m * 60 + s
        for h in options["byhour"]
        for m in options["byminute"]
        for s in options["bysecond"]
    ]
    # Days of one period may follow each other, except for DAILY (one day per period).
    days = interval if freq == du.DAILY else 1
    return times_gap(times, DAY * days) or DAY * days


def subdaily_pattern(
    freq: int, interval: int, options: dict[str, Any], anchor: datetime
) -> tuple[int | None, bool]:
    """(smallest gap, fires at all) for an HOURLY/MINUTELY/SECONDLY rule, day filters aside.

    The time-of-day pattern repeats after ``lcm(period, 1 day)``; every period start in one
    such cycle is checked against BYHOUR/BYMINUTE/BYSECOND (which filter at these
    frequencies), expanded by the finer parts, and cut by BYSETPOS, as dateutil does.
    """
    period = interval * UNIT_SECONDS[freq]
    expansion = _expansion(freq, options)
    filters = _filters(freq, options)
    setpos = options.get("bysetpos")
    if filters == (None, None, None) and not setpos:  # every period fires: the common case
        return times_gap(expansion, period), True
    start = _truncate_seconds(anchor, freq)
    cycles = DAY // gcd(period, DAY)
    offsets: list[int] = []
    for n in range(cycles):
        tod = (start + n * period) % DAY
        if not _passes(tod, filters):
            continue
        chosen = _select(expansion, setpos) if setpos else expansion
        offsets.extend(n * period + e for e in chosen)
    if not offsets:
        return NEVER, False
    return times_gap(offsets, cycles * period), True


def _expansion(freq: int, options: dict[str, Any]) -> list[int]:
    if freq == du.HOURLY:
        return sorted({m * 60 + s for m in options["byminute"] for s in options["bysecond"]})
    if freq == du.MINUTELY:
        return sorted(set(options["bysecond"]))
    return [0]


def _filters(freq: int, options: dict[str, Any]) -> tuple[frozenset[int] | None, ...]:
    hours = options.get("byhour")
    minutes = options.get("byminute") if freq != du.HOURLY else None
    seconds = options.get("bysecond") if freq == du.SECONDLY else None
    return tuple(frozenset(part) if part else None for part in (hours, minutes, seconds))


def _passes(tod: int, filters: tuple[frozenset[int] | None, ...]) -> bool:
    hours, minutes, seconds = filters
    return (
        (hours is None or tod // 3600 in hours)
        and (minutes is None or tod // 60 % 60 in minutes)
        and (seconds is None or tod % 60 in seconds)
    )


def _select(expansion: list[int], setpos: Sequence[int]) -> list[int]:
    size = len(expansion)
    chosen = {expansion[p - 1 if p > 0 else p] for p in setpos if -size <= p <= size and p}
    return sorted(chosen)


def _truncate_seconds(anchor: datetime, freq: int) -> int:
    tod = anchor.hour * 3600 + anchor.minute * 60 + anchor.second
    return tod - tod % UNIT_SECONDS[freq]


# -- day filters -------------------------------------------------------------------------------

DAY_PARTS = ("bymonth", "bymonthday", "byyearday", "byweekday", "byweekno")
CYCLE_START = 2000
CYCLE_YEARS = 400
"""The Gregorian calendar (leap years and weekdays) repeats every 400 years."""


def any_day_matches(options: dict[str, Any]) -> bool:
    """Whether some day passes BYMONTH, BYMONTHDAY, BYYEARDAY and BYDAY (weekdays).

    Checked over one 400-year cycle, which is exact for these parts. BYWEEKNO and numbered
    weekdays (``1MO``) are not checked here (dateutil does, as it walks).
    """
    months = options.get("bymonth") or range(1, 13)
    monthdays = options.get("bymonthday")
    yeardays = options.get("byyearday")
    weekdays = _plain_weekdays(options.get("byweekday"))
    for year in range(CYCLE_START, CYCLE_START + CYCLE_YEARS):
        year_length = 366 if calendar.isleap(year) else 365
        before = 0
        for month in range(1, 13):
            length = calendar.monthrange(year, month)[1]
            if month in months and _month_matches(
                year, month, length, before, year_length, monthdays, yeardays, weekdays
            ):
                return True
            before += length
    return False


def _plain_weekdays(byweekday: Any) -> frozenset[int] | None:
    if not byweekday:
        return None
    if any(getattr(day, "n", None) for day in byweekday):
        return None  # numbered weekdays: a superset (every weekday) keeps the check sound
    return frozenset(day.weekday for day in byweekday)


def _month_matches(
    year: int,
    month: int,
    length: int,
    before: int,
    year_length: int,
    monthdays: Sequence[int] | None,
    yeardays: Sequence[int] | None,
    weekdays: frozenset[int] | None,
) -> bool:
    first_weekday = calendar.weekday(year, month, 1)
    for day in range(1, length + 1):
        if monthdays and day not in monthdays and day - length - 1 not in monthdays:
            continue
        yearday = before + day
        if yeardays and yearday not in yeardays and yearday - year_length - 1 not in yeardays:
            continue
        if weekdays is None or (first_weekday + day - 1) % 7 in weekdays:
            return True
    return False


def never_reason(freq: int, interval: int, options: dict[str, Any], anchor: datetime) -> str | None:
    """Why a rule can never produce a slot, or None when it may (checked without walking)."""
    if set(DAY_PARTS) & set(options) and not any_day_matches(options):
        return "no day matches its BYMONTH/BYMONTHDAY/BYYEARDAY/BYDAY parts together"
    weeks, months = options.get("byweekno"), options.get("bymonth")
    if weeks and months and not _week_months(weeks) & set(months):
        return "no week listed in BYWEEKNO has a day in a month listed in BYMONTH"
    weekdays = _plain_weekdays(options.get("byweekday"))
    if freq == du.DAILY and interval % 7 == 0 and weekdays and anchor.weekday() not in weekdays:
        return (
            f"INTERVAL={interval} days from DTSTART ({calendar.day_name[anchor.weekday()]}) "
            "never lands on a listed BYDAY"
        )
    if freq == du.MONTHLY and months:
        reachable = {(anchor.month - 1 + interval * n) % 12 + 1 for n in range(12)}
        if not reachable & set(months):
            return f"INTERVAL={interval} months from DTSTART never lands on a listed BYMONTH"
    setpos = options.get("bysetpos")
    if setpos and freq <= du.DAILY:
        size = _period_days(freq, options) * _timeset_size(options)
        if all(abs(p) > size for p in setpos):
            lowest = min(map(abs, setpos))
            return f"BYSETPOS asks for position {lowest} of at most {size} per period"
    return None


def _week_months(weeks: Sequence[int]) -> set[int]:
    """Every month that a day of one of ``weeks`` can fall in (generously: a superset)."""
    found: set[int] = set()
    for year_length in (365, 366):
        for week in weeks:
            # Week 1 starts between Dec 29 and Jan 4; the last week ends between Dec 28 and
            # Jan 3. Days outside the year wrap to December or January.
            middle = 7 * week - 3 if week > 0 else year_length + 7 * (week + 1) - 3
            for yearday in range(middle - 8, middle + 9):
                found.add(_month_of(yearday, year_length))
    return found


def _month_of(yearday: int, year_length: int) -> int:
    if yearday < 1:
        return 12
    if yearday > year_length:
        return 1
    year = 2000 if year_length == 366 else 2001
    return (datetime(year, 1, 1) + timedelta(days=yearday - 1)).month  # noqa: DTZ001


def times_per_period(freq: int, options: dict[str, Any]) -> int:
    """At most how many times one period of the rule holds before BYSETPOS picks among them
    (dateutil builds them all for every period, so this is BYSETPOS's cost per period)."""
    if freq <= du.DAILY:
        return _period_days(freq, options) * _timeset_size(options)
    if freq == du.HOURLY:
        return len(set(options["byminute"])) * len(set(options["bysecond"]))
    if freq == du.MINUTELY:
        return len(set(options["bysecond"]))
    return 1


def _period_days(freq: int, options: dict[str, Any]) -> int:
    """At most how many days of one period its day parts can select (an upper bound: a
    position past it is never reached, e.g. the second of one Monday a week)."""
    if freq == du.DAILY:
        return 1
    months = options.get("bymonth") or range(1, 13)
    if freq == du.YEARLY:
        days = sum(29 if m == 2 else calendar.monthrange(2001, m)[1] for m in months)
    else:
        days = {du.MONTHLY: 31, du.WEEKLY: 7}[freq]
    weekdays = options.get("byweekday") or ()
    if weekdays:
        numbered = sum(1 for day in weekdays if getattr(day, "n", None))
        plain = len({day.weekday for day in weekdays if not getattr(day, "n", None)})
        per_weekday = {du.WEEKLY: 1, du.MONTHLY: 5, du.YEARLY: 53}[freq]
        spans = len(months) if freq == du.YEARLY else 1
        days = min(days, plain * per_weekday + numbered * spans)
    if options.get("bymonthday") and freq != du.WEEKLY:
        spans = len(months) if freq == du.YEARLY else 1
        days = min(days, len(set(options["bymonthday"])) * spans)
    if options.get("byyearday") and freq == du.YEARLY:
        days = min(days, len(set(options["byyearday"])))
    return days


def _timeset_size(options: dict[str, Any]) -> int:
    return (
        len(set(options["byhour"])) * len(set(options["byminute"])) * len(set(options["bysecond"]))
    )
