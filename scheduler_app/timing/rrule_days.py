"""The days an RRULE's day parts let through, and the dateutil rules the walks build.

A sub-daily rule with day filters is walked one matching day at a time (``RRuleSpec._by_day``):
the matching days come from a yearly rule with the same day parts, one year's days computed
once and cached (the walk starts again at every window opening). ``cached_rule`` builds (and
keeps) the dateutil rule of a spec's parts from an anchor.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from datetime import date, datetime
from functools import lru_cache
from typing import Any

from dateutil import rrule as du

from scheduler_app.timing.gaps import DAY_PARTS


def matching_days(
    options: tuple[tuple[str, Any], ...], start: date, last: date | None = None
) -> Iterator[date]:
    """The days at or after ``start`` that pass the rule's day parts, in order; none past
    ``last`` (a rule's UNTIL: the years after it are not looked at)."""
    days = tuple(
        (name, plain_weekdays(value) if name == "byweekday" else value)
        for name, value in options
        if name in DAY_PARTS or name == "wkst"
    )
    if {name for name, _ in days} <= {"bymonth", "wkst"}:
        # A yearly rule with no day part takes its day of month from DTSTART: say "every day".
        days += (("bymonthday", EVERY_MONTHDAY),)
    # A year's days once, then a bisection: the walk starts again at every window opening,
    # and dateutil walks every day from DTSTART (January 1) on each start.
    found = days_of_year(days, start.year)
    yield from found[bisect_left(found, start) :]
    for year in range(start.year + 1, 10000 if last is None else last.year + 1):
        yield from days_of_year(days, year)


EVERY_MONTHDAY = tuple(range(1, 32))


@lru_cache(maxsize=1024)
def days_of_year(days: tuple[tuple[str, Any], ...], year: int) -> tuple[date, ...]:
    midnight = (("byhour", (0,)), ("byminute", (0,)), ("bysecond", (0,)))
    january = datetime(year, 1, 1)  # noqa: DTZ001 - local wall time
    until = datetime(year, 12, 31)  # noqa: DTZ001 - local wall time
    probe = cached_rule(du.YEARLY, 1, None, until, days + midnight, january)
    return tuple(found.date() for found in probe)


def plain_weekdays(weekdays: tuple[du.weekday, ...]) -> tuple[int, ...]:
    """Weekdays without ordinals: what dateutil uses below MONTHLY frequency."""
    return tuple(sorted({day.weekday for day in weekdays}))


@lru_cache(maxsize=4096)
def cached_rule(
    freq: int,
    interval: int,
    count: int | None,
    until: datetime | None,
    options: tuple[tuple[str, Any], ...],
    anchor: datetime,
) -> du.rrule:
    return du.rrule(
        freq,  # type: ignore[arg-type]  # one of the FREQS values, checked by parse_rrule
        dtstart=anchor,
        interval=interval,
        count=count,
        until=until,
        cache=False,
        **dict(options),
    )
