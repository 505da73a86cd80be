"""RRULEs in words ("On the last Sunday of every month at 03:00"), like cron descriptions.

Described from the parsed options, which already hold what DTSTART supplies (the time of
day, the weekday of a plain WEEKLY rule): the sentence says when the rule really fires, not
only what was typed. A part with no wording here is shown raw in brackets.
"""

from __future__ import annotations

import calendar
from collections.abc import Sequence
from typing import Any

from dateutil import rrule as du

from scheduler_app.timing.rrules import RRuleSpec

WEEKDAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_UNITS = {
    du.YEARLY: "year",
    du.MONTHLY: "month",
    du.WEEKLY: "week",
    du.DAILY: "day",
    du.HOURLY: "hour",
    du.MINUTELY: "minute",
    du.SECONDLY: "second",
}
_ORDINALS = {1: "first", 2: "second", 3: "third", 4: "fourth", 5: "fifth"}
_WORKDAYS = (0, 1, 2, 3, 4)
_WORDED = {
    "byweekday",
    "bymonthday",
    "bymonth",
    "byhour",
    "byminute",
    "bysecond",
    "bysetpos",
    "byyearday",
    "byweekno",
    "wkst",
}
MAX_TIMES = 6
"""Up to this many times of day are listed as 09:00, 12:30 ...; more are minute/hour lists."""


def describe_rrule(spec: RRuleSpec) -> str:
    """One sentence for ``spec`` (without the zone, which ``describe`` adds)."""
    options = dict(spec.options)
    text = _main(spec.freq, spec.interval, options)
    positions = None if _picked_weekday(options) else options.get("bysetpos")
    extras = [
        _setpos(positions, spec.freq),
        _week_start(spec, options),
        _bounds(spec),
        _raw_rest(spec, options),
    ]
    return ", ".join([text, *(extra for extra in extras if extra)])


def _main(freq: int, interval: int, options: dict[str, Any]) -> str:
    if freq >= du.HOURLY:
        return _sub_daily(freq, interval, options)
    times = _times_of_day(options)
    if freq == du.YEARLY:
        return _capital(f"{_every(freq, interval)} {_yearly_days(options)} {times}")
    if freq == du.MONTHLY:
        return _capital(f"{_monthly_days(interval, options)} {times}")
    return _capital(f"{_weekly_days(freq, interval, options)} {times}")


# --- the day part ---------------------------------------------------------------------------


def _weekly_days(freq: int, interval: int, options: dict[str, Any]) -> str:
    """DAILY and WEEKLY: weekday filters (ordinals mean nothing at these frequencies)."""
    weekdays = _plain(options.get("byweekday"))
    if interval == 1 and weekdays is not None:
        text = _every_weekday(weekdays)
    else:
        text = _every(freq, interval)
        if weekdays is not None and weekdays != tuple(range(7)):
            text += f" on {_weekday_list(weekdays)}"
    if "bymonthday" in options:
        text += f", on {_monthdays(options['bymonthday'])} of the month,"
    months = options.get("bymonth")
    return text + (" in " + and_list([calendar.month_name[m] for m in months]) if months else "")


def _monthly_days(interval: int, options: dict[str, Any]) -> str:
    months = options.get("bymonth")
    weekdays = options.get("byweekday")
    period = _every(du.MONTHLY, interval)
    if interval == 1 and months:
        period, months = and_list([calendar.month_name[m] for m in months]), None  # of March
    if _picked_weekday(options):
        return f"{_picked_weekday(options)} of {period}"
    plain = "bymonthday" not in options and weekdays and not _ordinals(weekdays)
    if interval == 1 and plain and "bysetpos" not in options:
        return _every_weekday(_plain(weekdays) or ()) + _in_months(months)  # weekly in disguise
    days, condition = _day_phrase(options)
    return f"{days} of {period}{condition}{_in_months(months)}"


def _picked_weekday(options: dict[str, Any]) -> str:
    """BYSETPOS over plain weekdays at one time of day: 'on the last weekday'."""
    weekdays, positions = options.get("byweekday"), options.get("bysetpos")
    if not (weekdays and positions) or _ordinals(weekdays) or "bymonthday" in options:
        return ""
    if len(_times(options)) != 1:
        return ""
    days = _plain(weekdays) or ()
    kind = {_WORKDAYS: "weekday", (5, 6): "weekend day", tuple(range(7)): "day"}.get(days)
    what = kind or _or(days)
    return f"on the {and_list([_ordinal(p) for p in positions])} {what}"


def _yearly_days(options: dict[str, Any]) -> str:
    if "byyearday" in options or "byweekno" in options:
        return _year_parts(options)
    months: tuple[int, ...] = options.get("bymonth") or ()
    monthdays = options.get("bymonthday")
    one_month = len(months) == 1 and "byweekday" not in options
    if one_month and monthdays and all(day > 0 for day in monthdays):  # on March 1 and 15
        return f"on {calendar.month_name[months[0]]} {and_list([str(d) for d in monthdays])}"
    of = and_list([calendar.month_name[m] for m in months]) if months else "the year"
    if _picked_weekday(options):
        return f"{_picked_weekday(options)} of {of}"
    days, condition = _day_phrase(options)
    return f"{days} of {of}{condition}"


def _year_parts(options: dict[str, Any]) -> str:
    parts = []
    if "byyearday" in options:
        parts.append(f"on {and_list([_nth_day(d) for d in options['byyearday']])} of the year")
    if "byweekno" in options:
        weeks = [str(week) if week > 0 else _ordinal(week) for week in options["byweekno"]]
        parts.append(f"in week {and_list(weeks)} of the year")
    weekdays = _plain(options.get("byweekday"))
    if weekdays is not None:
        parts.append(f"on {_weekday_list(weekdays)}")
    if "bymonthday" in options:
        parts.append(f"on {_monthdays(options['bymonthday'])} of the month")
    if "bymonth" in options:
        parts.append(_in_months(options["bymonth"]).removeprefix(", "))
    return ", ".join(parts)


def _day_phrase(options: dict[str, Any]) -> tuple[str, str]:
    """('on the last Sunday', '') or ('on day 13', ' when it is a Friday') of some period."""
    monthdays = options.get("bymonthday")
    weekdays = options.get("byweekday")
    if monthdays:
        condition = f" when it is a {_or(_plain(weekdays) or ())}" if weekdays else ""
        return "on " + _monthdays(monthdays), condition
    if weekdays:
        return "on " + and_list([_nth_weekday(day) for day in weekdays]), ""
    return "every day", ""


def _ordinals(weekdays: Sequence[du.weekday]) -> bool:
    return any(day.n for day in weekdays)


def _or(weekdays: Sequence[int]) -> str:
    names = [WEEKDAY_NAMES[day] for day in weekdays]
    return ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else "".join(names)


def _monthdays(days: Sequence[int]) -> str:
    """'day 1 and 15', 'the last day', 'day 1 and the last day'."""
    counted = [str(day) for day in days if day > 0]
    if counted:
        counted[0] = "day " + counted[0]
    return and_list(counted + [_nth_day(day) for day in days if day < 0])


def _nth_day(day: int) -> str:
    return f"day {day}" if day > 0 else f"the {_ordinal(day)} day"


def _nth_weekday(day: du.weekday) -> str:
    name = WEEKDAY_NAMES[day.weekday]
    return f"the {_ordinal(day.n)} {name}" if day.n else f"every {name}"


def _every_weekday(weekdays: tuple[int, ...]) -> str:
    if weekdays == tuple(range(7)):
        return "every day"
    if weekdays == _WORKDAYS:
        return "every weekday"
    if weekdays == (5, 6):
        return "every Saturday and Sunday"
    return "every " + _weekday_list(weekdays)


def _weekday_list(weekdays: Sequence[int]) -> str:
    days = tuple(weekdays)
    if days == _WORKDAYS:
        return "Monday through Friday"
    if len(days) > 2 and days == tuple(range(days[0], days[-1] + 1)):
        return f"{WEEKDAY_NAMES[days[0]]} through {WEEKDAY_NAMES[days[-1]]}"
    return and_list([WEEKDAY_NAMES[day] for day in days])


def _plain(weekdays: Sequence[du.weekday] | None) -> tuple[int, ...] | None:
    if not weekdays:
        return None
    return tuple(sorted({day.weekday for day in weekdays}))


def _in_months(months: Sequence[int] | None) -> str:
    if not months:
        return ""
    return ", in " + and_list([calendar.month_name[month] for month in months])


# --- the time part --------------------------------------------------------------------------


def _times(options: dict[str, Any]) -> list[str]:
    hours = options.get("byhour", (0,))
    minutes = options.get("byminute", (0,))
    seconds = options.get("bysecond", (0,))
    with_seconds = seconds != (0,)
    return [
        f"{h:02d}:{m:02d}" + (f":{s:02d}" if with_seconds else "")
        for h in hours
        for m in minutes
        for s in seconds
    ]


def _times_of_day(options: dict[str, Any]) -> str:
    hours = options.get("byhour", (0,))
    minutes = options.get("byminute", (0,))
    seconds = options.get("bysecond", (0,))
    with_seconds = seconds != (0,)
    if len(hours) * len(minutes) * len(seconds) <= MAX_TIMES:
        return "at " + and_list(_times(options))
    text = f"at minute {_numbers(minutes)} past hour {and_list([f'{h:02d}' for h in hours])}"
    return text + (f", second {_numbers(seconds)}" if with_seconds else "")


def _sub_daily(freq: int, interval: int, options: dict[str, Any]) -> str:
    """HOURLY, MINUTELY, SECONDLY: the grid, then the filters that narrow it."""
    minutes = options.get("byminute")
    seconds = options.get("bysecond")
    text = _every(freq, interval)
    if freq == du.HOURLY and minutes is not None:
        text += f" at minute {_numbers(minutes)}"
        minutes = None
    if freq != du.SECONDLY and seconds is not None:
        joint = ", second" if freq == du.HOURLY else " at second"
        text += f"{joint} {_numbers(seconds)}" if seconds != (0,) else ""
        seconds = None
    filters = []
    if "byhour" in options:
        hours = options["byhour"]
        filters.append(f"in hour{'s' * (len(hours) > 1)} {and_list([f'{h:02d}' for h in hours])}")
    if minutes is not None:
        filters.append(f"{'in' if freq == du.SECONDLY else 'at'} minute {_numbers(minutes)}")
    if seconds is not None:
        filters.append(f"at second {_numbers(seconds)}")
    filters.append(_sub_daily_days(options))
    return _capital(", ".join([text, *(part for part in filters if part)]))


def _numbers(values: Sequence[int]) -> str:
    return and_list([str(value) for value in values])


def _sub_daily_days(options: dict[str, Any]) -> str:
    return _year_parts({k: v for k, v in options.items() if k != "byweekno"})


# --- the rest -------------------------------------------------------------------------------


def _setpos(positions: Sequence[int] | None, freq: int) -> str:
    if not positions:
        return ""
    return f"only the {and_list([_ordinal(p) for p in positions])} of each {_UNITS[freq]}"


def _week_start(spec: RRuleSpec, options: dict[str, Any]) -> str:
    # WKST only changes anything for weeks counted by INTERVAL or numbered by BYWEEKNO.
    wkst = options.get("wkst", 0)
    matters = (spec.freq == du.WEEKLY and spec.interval > 1) or "byweekno" in options
    return f"weeks starting on {WEEKDAY_NAMES[wkst]}" if wkst and matters else ""


def _bounds(spec: RRuleSpec) -> str:
    parts = []
    if spec.count is not None:
        parts.append("once" if spec.count == 1 else f"{spec.count:,} times")
    if spec.until_instant is not None:
        parts.append(f"until {spec.until_instant.strftime('%Y-%m-%d %H:%M:%S')} UTC")
    elif spec.until_local is not None:
        parts.append(f"until {spec.until_local.isoformat(sep=' ')}")
    # The anchor decides which periods an INTERVAL keeps and where COUNT starts counting.
    if spec.interval > 1 or spec.count is not None:
        parts.append(f"from {spec.anchor.isoformat(sep=' ', timespec='minutes')}")
    return ", ".join(parts)


def _raw_rest(spec: RRuleSpec, options: dict[str, Any]) -> str:
    unknown = sorted(set(options) - _WORDED)
    if not unknown:
        return ""
    return "(" + ";".join(f"{name.upper()}={options[name]}" for name in unknown) + ")"


def _every(freq: int, interval: int) -> str:
    unit = _UNITS[freq]
    return f"every {interval} {unit}s" if interval > 1 else f"every {unit}"


def _ordinal(n: int) -> str:
    if n < 0:
        return "last" if n == -1 else f"{_ordinal(-n)} to last"
    if n in _ORDINALS:
        return _ORDINALS[n]
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def and_list(items: list[str]) -> str:
    """``a, b and c`` (more than eight: the first seven and how many more)."""
    if len(items) > 8:
        return ", ".join(items[:7]) + f" and {len(items) - 7} more"
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]
