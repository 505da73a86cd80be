"""Times of day to rules: a set of times (``at 9:00 and 17:30``), a step inside a window
(``every 2 hours between 9:00 and 17:00``: 9, 11, 13, 15, 17) and steps off the clock's grid.

A step with a window starts at the window's opening and repeats while at or before its closing
time (both ends inclusive), the same each day. The rule is a cron when its times are every
combination of some hours and minutes; a step that divides the hour but ends inside an hour
is that hour grid with an active window that closes one minute after the closing time (stored
windows end before their closing minute); other sets are a daily RRULE that picks the times
with BYSETPOS. Pure: no Django, no clock."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from scheduler_app.timing.phrases.clock import Time, clock_text
from scheduler_app.timing.phrases.words import CRON_DAYS, WEEKDAY_CODES, WEEKDAYS, WEEKEND
from scheduler_app.timing.rrule_text import MAX_SETPOS

MAX_SETPOS_RULE = 1500
"""Longest BYSETPOS rule written for a set of times (the RRULE limit is 2000 characters)."""


@dataclass(frozen=True)
class Built:
    """The structured rule of a phrase, before the zone is added."""

    kind: str
    rule: str
    anchor: datetime | None = None
    window: str = ""


class NotOneRule(ValueError):
    """The times cannot be one rule; the message says what to write instead."""


def times_rule(
    times: tuple[Time, ...], days: frozenset[int] | None, month_days: str = "*"
) -> Built:
    """Exactly ``times`` on the days given (weekdays, or days of the month as in cron)."""
    hours = sorted({h for h, _, _ in times})
    minutes = sorted({m for _, m, _ in times})
    if len(hours) * len(minutes) == len(set(times)):
        return Built(
            "cron", f"{cron_list(minutes)} {cron_list(hours)} {month_days} * {cron_days(days)}"
        )
    candidates = sorted((h, m) for h in hours for m in minutes)
    wanted = {(h, m) for h, m, _ in times}
    positions = [str(i + 1) for i, pair in enumerate(candidates) if pair in wanted]
    parts = ["FREQ=DAILY"]
    if days is not None and len(days) < 7:
        parts.append("BYDAY=" + ",".join(WEEKDAY_CODES[d] for d in sorted(days)))
    if month_days != "*":
        parts.append(f"BYMONTHDAY={month_days}")
    parts += [f"BYHOUR={_join(hours)}", f"BYMINUTE={_join(minutes)}", "BYSECOND=0"]
    rule = ";".join([*parts, "BYSETPOS=" + ",".join(positions)])
    # An RRULE takes at most MAX_SETPOS positions, each at most 366: say so on the words
    # (review 12: "every 7 minutes between 0:03 and 23:59" built position 368, and the error
    # came from the RRULE's checks, on another field).
    if len(rule) > MAX_SETPOS_RULE or len(positions) > MAX_SETPOS or int(positions[-1]) > 366:
        raise NotOneRule(
            f"{len(times)} times a day cannot be one rule; let the window end on a whole hour "
            "step (e.g. 'between 9:00 and 16:59') or use a longer step"
        )
    return Built("rrule", rule)


def window_steps(
    opens: Time, closes: Time, step: int, days: frozenset[int] | None, minute: int | None = None
) -> Built:
    """``step`` minutes from ``opens`` (or from the first ``minute`` of an hour at or after
    it) while at or before ``closes``."""
    first = opens[0] * 60 + opens[1]
    if minute is not None:
        first = first + (minute - opens[1]) % 60
    last = closes[0] * 60 + closes[1]
    times = tuple((t // 60, t % 60, 0) for t in range(first, last + 1, step))
    if not times:
        raise NotOneRule("no time of the step falls inside the window; widen the window")
    hours = sorted({h for h, _, _ in times})
    minutes = sorted({m for _, m, _ in times})
    if len(hours) * len(minutes) == len(times) or 60 % step or last == 24 * 60 - 1:
        return times_rule(times, days)
    if first % step == 0:
        grid = "*" if step == 1 else f"*/{step}"
    else:
        grid = cron_list(list(range(first % step, 60, step)))
    end = clock_text((*divmod(last + 1, 60), 0))
    window = f"{window_days(days)} {clock_text(times[0])}-{end}"
    return Built("cron", f"{grid} {cron_list(hours)} * * {cron_days(days)}", window=window)


def cron_list(values: list[int]) -> str:
    """``9,11,13``; runs of three or more as ranges: ``9-17``."""
    parts: list[str] = []
    index = 0
    while index < len(values):
        end = index
        while end + 1 < len(values) and values[end + 1] == values[end] + 1:
            end += 1
        if end - index >= 2:
            parts.append(f"{values[index]}-{values[end]}")
        else:
            parts.extend(str(v) for v in values[index : end + 1])
        index = end + 1
    return ",".join(parts)


def cron_days(days: frozenset[int] | None) -> str:
    if days is None or len(days) == 7:
        return "*"
    if days == WEEKDAYS:
        return "MON-FRI"
    if days == WEEKEND:
        return "SAT,SUN"
    return ",".join(CRON_DAYS[d] for d in sorted(days))


def window_days(days: frozenset[int] | None) -> str:
    cron = cron_days(days)
    return "MON-SUN" if cron == "*" else cron


def _join(values: list[int]) -> str:
    return ",".join(str(v) for v in values)
