"""Active windows ("MON-FRI 09:00-18:00"): slots outside are deferred to the next opening or
skipped. Evaluated in the schedule's local wall time, like calendar rules."""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from typing import TypeAlias
from zoneinfo import ZoneInfo

from scheduler_app.errors import InvalidRule
from scheduler_app.timing.cron import DAY_NAMES
from scheduler_app.timing.zones import TICK, ZERO, Resolved, near_transition

_WINDOW = re.compile(
    r"^(?P<days>[A-Za-z0-9,\-*]+)\s+(?P<start>\d{1,2}:\d{2})-(?P<end>\d{1,2}:\d{2})$"
)
DEFERRED = "deferred_to_window"
MAX_SKIPPED = 100_000
"""Without ``restart``: consecutive slots outside a skip window before the rule counts as ended."""
MAX_CLOSED = 1_000
"""With ``restart``: slots outside a skip window looked at in a row (each one is the first of
its closed period) before the rule counts as ended. This bounds the cost of one question to
about 1,000 rule evaluations (a few tens of milliseconds); a window that opens once a week
allows 19 years without a slot in it, a daily one 2.7 years."""
_PROBE_STEP = timedelta(hours=96)
_SAMPLE = timedelta(hours=6)  # no zone has two offset changes that cancel within 6 hours
Restart: TypeAlias = Callable[[datetime], Iterable[Resolved]]
"""The rule's items strictly after an instant."""
EXAMPLE = "e.g. 'MON-FRI 09:00-18:00' or 'MON-FRI 09:00-12:00; MON-FRI 13:00-17:00'"


class WindowPolicy(enum.StrEnum):
    """What happens to a slot outside the active window."""

    DEFER = "defer"
    """Move it to the window's next opening (several deferred slots become one)."""
    SKIP = "skip"
    """Drop it."""


@dataclass(frozen=True)
class Window:
    weekdays: frozenset[int]  # 0 = Monday .. 6 = Sunday (datetime.weekday())
    start: time
    end: time

    def contains(self, local: datetime) -> bool:
        return local.weekday() in self.weekdays and self.start <= local.time() < self.end


@dataclass(frozen=True)
class ActiveWindows:
    source: str
    windows: tuple[Window, ...]
    policy: WindowPolicy = WindowPolicy.DEFER

    def contains(self, local: datetime) -> bool:
        return any(window.contains(local) for window in self.windows)

    def next_opening(self, local: datetime) -> datetime:
        """The first wall time at or after ``local`` that lies in a window."""
        day = local.replace(hour=0, minute=0, second=0, microsecond=0)
        for offset in range(8):
            candidate_day = day + timedelta(days=offset)
            starts = [
                candidate_day.replace(hour=w.start.hour, minute=w.start.minute)
                for w in self.windows
                if candidate_day.weekday() in w.weekdays
            ]
            later = [start for start in starts if start >= local]
            if later:
                return min(later)
        raise InvalidRule("window", "the window never opens")  # pragma: no cover - days >= 1

    def closed_since(self, local: datetime) -> datetime:
        """When the closed period containing ``local`` began: the latest window end before it
        (a week back at most). Slots from then on are deferred to the next opening."""
        day = local.replace(hour=0, minute=0, second=0, microsecond=0)
        for offset in range(8):
            candidate_day = day - timedelta(days=offset)
            ends = [
                candidate_day.replace(hour=w.end.hour, minute=w.end.minute)
                for w in self.windows
                if candidate_day.weekday() in w.weekdays
            ]
            earlier = [end for end in ends if end <= local]
            if earlier:
                return max(earlier)
        return day - timedelta(days=8)


def parse_windows(text: str, policy: str = "defer") -> ActiveWindows:
    """Parse ``"DAYS HH:MM-HH:MM"`` windows separated by ``;`` (days as in cron: MON-FRI)."""
    if not isinstance(text, str) or not text.strip() or len(text) > 500:
        raise InvalidRule("window", f"an active window is required, {EXAMPLE}")
    try:
        window_policy = WindowPolicy(str(policy).strip().lower())
    except ValueError:
        raise InvalidRule(
            "window_policy", f"unknown value {policy!r}; use one of: defer, skip"
        ) from None
    windows = tuple(_parse_one(part.strip()) for part in text.split(";") if part.strip())
    return ActiveWindows(source=text.strip(), windows=windows, policy=window_policy)


def _parse_one(text: str) -> Window:
    match = _WINDOW.match(text)
    if not match:
        raise InvalidRule("window", f"{text[:60]!r} is not 'DAYS HH:MM-HH:MM'; {EXAMPLE}")
    start, end = _clock(match["start"]), _clock(match["end"])
    if end <= start:
        raise InvalidRule(
            "window",
            f"{text!r} ends before it starts; a window crossing midnight is two windows, "
            "e.g. 'MON-FRI 22:00-23:59; TUE-SAT 00:00-06:00'",
        )
    return Window(weekdays=_days(match["days"]), start=start, end=end)


def _clock(text: str) -> time:
    hour, minute = (int(part) for part in text.split(":"))
    if hour > 23 or minute > 59:
        raise InvalidRule("window", f"{text!r} is not a time of day (00:00-23:59)")
    return time(hour, minute)


def _days(text: str) -> frozenset[int]:
    if text == "*":
        return frozenset(range(7))
    days: set[int] = set()
    for item in text.upper().split(","):
        low, _, high = item.partition("-")
        first, last = _day(low), _day(high or low)
        if last < first:
            raise InvalidRule("window", f"day range {item!r} runs backwards; e.g. MON-FRI")
        days.update(range(first, last + 1))
    return frozenset(days)


def _day(name: str) -> int:
    cron_day = DAY_NAMES.get(name)
    if cron_day is None:
        raise InvalidRule("window", f"{name!r} is not a day; use MON, TUE, ... SUN")
    return (cron_day - 1) % 7  # cron 0 = Sunday -> weekday() 6


def apply_windows(
    items: Iterable[Resolved],
    windows: ActiveWindows,
    zone: ZoneInfo,
    *,
    restart: Restart | None = None,
    exhausted: Callable[[], None] | None = None,
) -> Iterator[Resolved]:
    """Keep slots inside the windows; defer (deduplicated) or drop the others.

    ``restart(after)`` gives the rule's items strictly after ``after`` (``items`` is
    ``restart`` of some instant). With it, a slot outside the windows lets the walk jump to
    the windows' next opening: every slot in between is outside too (skipped, or deferred to
    that same opening), so the result is the one the slot-by-slot walk gives, at a rule
    evaluation or two per closed period instead of one per slot (an every-10-seconds rule
    with a weekly one-hour window walked 60,000 slots per question, about 0.2 s).

    With ``skip``, a rule none of whose next ``MAX_SKIPPED`` slots (``MAX_CLOSED`` with
    ``restart``) falls inside the windows is treated as having no more slots (instead of
    walking to year 9999); ``exhausted()`` is called first (a bounded search raises there).
    """
    limit = MAX_SKIPPED if restart is None else MAX_CLOSED
    source = iter(items)
    last: datetime | None = None
    skipped = 0
    closed_until: datetime | None = None  # every slot before this instant is outside
    while (item := next(source, None)) is not None:
        if restart is not None and closed_until is not None and item[0] < closed_until:
            source = iter(restart(closed_until - TICK))
            closed_until = None
            continue
        closed_until = None
        aware = item[0].astimezone(zone)
        wall = aware.replace(tzinfo=None)
        if windows.contains(wall):
            result: Resolved = item
            skipped = 0
        else:
            if restart is not None:
                closed_until = _closed_until(windows, item[0], aware, zone)
            if windows.policy is WindowPolicy.SKIP:
                skipped += 1
                if skipped >= limit:
                    if exhausted is not None:
                        exhausted()
                    return
                continue
            opening = windows.next_opening(wall)
            result = (opening.replace(tzinfo=zone).astimezone(UTC), opening, DEFERRED)
        if last is None or result[0] > last:
            last = result[0]
            yield result


def _closed_until(
    windows: ActiveWindows, slot: datetime, aware: datetime, zone: ZoneInfo
) -> datetime | None:
    """The instant of the windows' next opening after ``slot`` (which is outside them), or
    the zone's next offset change before it: every instant from ``slot`` up to (excluded) the
    result has a wall time outside the windows. None when that is past the last date."""
    wall = aware.replace(tzinfo=None)
    offset = aware.utcoffset() or ZERO
    try:
        opening = windows.next_opening(wall)
        target = (opening - offset).replace(tzinfo=UTC)
    except OverflowError:  # the next opening is past 9999-12-31
        return None
    # Without an offset change, wall time runs with the instant: the walls of [slot, target)
    # are [wall, opening), before the first opening. A change (fall back) can bring the wall
    # time back into a window sooner, so the jump stops at it.
    if _may_change(zone, wall, opening):
        return _first_change(slot, target, zone, offset) or target
    return target


def _may_change(zone: ZoneInfo, wall: datetime, until: datetime) -> bool:
    # ``near_transition`` looks 52 hours each way: probes 96 hours apart cover the span.
    probe = wall
    while probe < until:
        if near_transition(zone, probe):
            return True
        probe += _PROBE_STEP
    return near_transition(zone, until)


def _first_change(
    start: datetime, end: datetime, zone: ZoneInfo, offset: timedelta
) -> datetime | None:
    """The first instant in (start, end] whose UTC offset in ``zone`` is not ``offset``."""
    low = start
    while low < end:
        high = min(low + _SAMPLE, end)
        if high.astimezone(zone).utcoffset() != offset:
            while high - low > TICK:  # the exact instant: the jump may not pass it
                middle = low + (high - low) // 2
                if middle.astimezone(zone).utcoffset() == offset:
                    low = middle
                else:
                    high = middle
            return high
        low = high
    return None
