"""Active windows ("MON-FRI 09:00-18:00"): slots outside are deferred to the next opening or
skipped. Evaluated in the schedule's local wall time, like calendar rules."""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

from scheduler_app.errors import InvalidRule
from scheduler_app.timing.cron import DAY_NAMES
from scheduler_app.timing.zones import Resolved

_WINDOW = re.compile(
    r"^(?P<days>[A-Za-z0-9,\-*]+)\s+(?P<start>\d{1,2}:\d{2})-(?P<end>\d{1,2}:\d{2})$"
)
DEFERRED = "deferred_to_window"
MAX_SKIPPED = 100_000
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
    items: Iterable[Resolved], windows: ActiveWindows, zone: ZoneInfo
) -> Iterator[Resolved]:
    """Keep slots inside the windows; defer (deduplicated) or drop the others.

    With ``skip``, a rule none of whose next ``MAX_SKIPPED`` slots falls inside the windows is
    treated as having no more slots (instead of walking to year 9999).
    """
    last: datetime | None = None
    skipped = 0
    for slot, local, note in items:
        wall = slot.astimezone(zone).replace(tzinfo=None)
        if windows.contains(wall):
            result: Resolved = (slot, local, note)
            skipped = 0
        elif windows.policy is WindowPolicy.SKIP:
            skipped += 1
            if skipped >= MAX_SKIPPED:
                return
            continue
        else:
            opening = windows.next_opening(wall)
            instant = opening.replace(tzinfo=zone).astimezone(UTC)
            result = (instant, opening, DEFERRED)
        if last is None or result[0] > last:
            last = result[0]
            yield result
