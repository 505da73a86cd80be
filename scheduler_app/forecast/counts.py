"""Counting the slots ahead: per minute (UTC) for the next 1-7 days, per tenant and target;
the busiest minutes with the schedules behind them; the days a time zone changes its offset
(DST) and the public holidays that exclude slots; and, for a herd, the jitter that spreads it
under a rate.

Each schedule's slots come from its timing as the beat would compute them (windows, holidays,
bounds and the search budget included), before jitter. Shadow schedules are left out (nothing
runs for them). A fixed-delay interval counts only its
next run (the ones after depend on when runs end). A schedule whose timing cannot be evaluated
is listed with the reason instead of counted.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from time import monotonic
from zoneinfo import ZoneInfo

from scheduler_app.definition.schedule import timing_for
from scheduler_app.errors import SchedulerError
from scheduler_app.models import IntervalMode, Schedule, ScheduleMode, ScheduleStatus
from scheduler_app.timing import iter_between
from scheduler_app.timing.calendars.public_holidays import parse_holidays

MAX_DAYS = 7
MIN_RATE = 0.001
"""The smallest rate (runs per second) a forecast takes: one run in about 17 minutes."""
MAX_SLOTS = 1_000_000
"""Slots one forecast counts at most (a page or a command never runs unbounded): past it, the
schedules not yet counted are left out and the forecast says it is partial."""


@dataclass(frozen=True)
class Busy:
    """One of the busiest minutes: its slot count and the schedules with most slots in it."""

    minute: datetime
    count: int
    schedules: list[tuple[str, int]]
    """(schedule name or id, slots in this minute), the largest first, at most ``top``."""
    jitter: int
    """Seconds of jitter that would spread this minute's slots under the rate (0: it is)."""


@dataclass(frozen=True)
class Marked:
    """A day to read with care: a zone's offset changes (``dst``) or a holiday excludes slots."""

    day: date
    kind: str
    """``dst`` or ``holiday``."""
    label: str
    """The zone and its offsets ("Europe/Riga +02:00 -> +03:00"), or the calendar and the
    holiday's name ("LV: Midsummer Eve")."""
    schedules: int


@dataclass
class Forecast:
    start: datetime
    end: datetime
    minutes: Counter[datetime] = field(default_factory=Counter)
    lanes: Counter[tuple[str, str]] = field(default_factory=Counter)
    """Slots per (tenant, target)."""
    schedules: int = 0
    unforecast: list[tuple[str, str]] = field(default_factory=list)
    """(schedule, why) for the schedules whose timing could not be evaluated."""
    busiest: list[Busy] = field(default_factory=list)
    marked: list[Marked] = field(default_factory=list)
    partial: int = 0
    """Active schedules left out, or counted only in part, because the forecast reached its
    slots or its time (0: none)."""

    @property
    def total(self) -> int:
        return sum(self.minutes.values())

    def hours(self) -> Counter[datetime]:
        """Slots per hour (UTC), for the picture."""
        hours: Counter[datetime] = Counter()
        for minute, count in self.minutes.items():
            hours[minute.replace(minute=0)] += count
        return hours


def forecast(
    schedules: Iterable[Schedule],
    now: datetime,
    *,
    days: int = 1,
    top: int = 10,
    rate: float | None = None,
    max_slots: int = MAX_SLOTS,
    seconds: float | None = None,
) -> Forecast:
    """Count the slots in ``(now, now + days]`` of ``schedules`` (the active, live ones), at
    most ``max_slots`` of them and, with ``seconds``, for at most that long: both are checked
    between any two slots, so no schedule runs past them."""
    if not 1 <= days <= MAX_DAYS:
        raise ValueError(f"days must be between 1 and {MAX_DAYS}, got {days}")
    check_rate(rate)
    result = Forecast(start=now, end=now + timedelta(days=days))
    deadline = None if seconds is None else monotonic() + seconds
    active = [
        s for s in schedules if s.status == ScheduleStatus.ACTIVE and s.mode != ScheduleMode.SHADOW
    ]
    per_schedule: dict[object, Counter[datetime]] = {}
    names: dict[object, str] = {}
    counted: list[Schedule] = []
    for index, schedule in enumerate(active):
        minutes: Counter[datetime] = Counter()
        cut = False
        try:
            ZoneInfo(schedule.timezone)  # a fixed-delay schedule's zone is read nowhere else
            parse_holidays(schedule.exclude_holidays)
            for slot in _slots(schedule, now, result.end):
                minutes[_minute(slot)] += 1
                if _spent(result.total + minutes.total(), max_slots, deadline):
                    cut = True  # this one counted in part: left out too
                    break
        except (SchedulerError, ValueError, OverflowError, KeyError) as exc:
            result.unforecast.append((_name(schedule), str(exc)))
            if _spent(result.total, max_slots, deadline):  # a failing one costs time too
                result.partial = len(active) - index - 1
                break
            continue
        result.schedules += 1
        counted.append(schedule)
        result.minutes.update(minutes)
        result.lanes[(schedule.tenant or "", schedule.target)] += minutes.total()
        per_schedule[schedule.pk] = minutes
        names[schedule.pk] = _name(schedule)
        if cut or _spent(result.total, max_slots, deadline):
            result.partial = len(active) - index - 1 + cut
            break
    result.busiest = _busiest(result.minutes, per_schedule, names, top, rate)
    result.marked = _dst_days(counted, now, result.end) + _holidays(counted, now, result.end)
    return result


def check_rate(rate: float | None) -> None:
    """A rate is a finite number of runs per second, at least ``MIN_RATE``."""
    if rate is not None and not (math.isfinite(rate) and rate >= MIN_RATE):
        raise ValueError(f"rate must be a number of runs per second from {MIN_RATE} up, got {rate}")


def _spent(total: int, max_slots: int, deadline: float | None) -> bool:
    return total >= max_slots or (deadline is not None and monotonic() >= deadline)


def _slots(schedule: Schedule, now: datetime, end: datetime) -> Iterator[datetime]:
    if schedule.interval_mode == IntervalMode.FIXED_DELAY:
        if schedule.next_run_at is not None and now < schedule.next_run_at <= end:
            yield schedule.next_run_at
        return
    yield from iter_between(timing_for(schedule), now, end)


def _minute(instant: datetime) -> datetime:
    return instant.replace(second=0, microsecond=0)


def _name(schedule: Schedule) -> str:
    return schedule.name or schedule.key or str(schedule.pk)


def jitter_to_spread(count: int, rate: float) -> int:
    """Seconds of jitter that spread ``count`` runs due together under ``rate`` per second."""
    check_rate(rate)
    return 0 if count <= rate else math.ceil(count / rate)


def _busiest(
    minutes: Counter[datetime],
    per_schedule: dict[object, Counter[datetime]],
    names: dict[object, str],
    top: int,
    rate: float | None,
) -> list[Busy]:
    found: list[Busy] = []
    for minute, count in sorted(minutes.items(), key=lambda item: (-item[1], item[0]))[:top]:
        behind = Counter({pk: slots[minute] for pk, slots in per_schedule.items()})
        listed = [(names[pk], n) for pk, n in behind.most_common(5) if n]
        jitter = jitter_to_spread(count, rate) if rate is not None else 0
        found.append(Busy(minute, count, listed, jitter))
    return found


def _dst_days(schedules: list[Schedule], start: datetime, end: datetime) -> list[Marked]:
    """The UTC days of the range on which a zone of the schedules changes its offset."""
    zones = Counter(schedule.timezone for schedule in schedules)
    marked = []
    for name, count in sorted(zones.items()):
        zone = ZoneInfo(name)  # read by ``forecast`` already: schedules it refused are not here
        day = start.date()
        while day <= end.date():
            midnight = datetime(day.year, day.month, day.day, tzinfo=start.tzinfo)
            before = midnight.astimezone(zone).utcoffset()
            after = (midnight + timedelta(days=1)).astimezone(zone).utcoffset()
            if before != after and before is not None and after is not None:
                label = f"{name} {_offset(before)} -> {_offset(after)}"
                marked.append(Marked(day, "dst", label, count))
            day += timedelta(days=1)
    return marked


def _offset(value: timedelta) -> str:
    minutes = int(value.total_seconds() // 60)
    sign = "+" if minutes >= 0 else "-"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def _holidays(schedules: list[Schedule], start: datetime, end: datetime) -> list[Marked]:
    """The days of the range that are holidays of a calendar the schedules exclude."""
    calendars = Counter(s.exclude_holidays for s in schedules if s.exclude_holidays)
    marked = []
    for code, count in sorted(calendars.items()):
        calendar = parse_holidays(code)
        if calendar is None:
            continue
        day = start.date()
        while day <= end.date():
            name = calendar.name_on(day)
            if name:
                marked.append(Marked(day, "holiday", f"{calendar.code}: {name}", count))
            day += timedelta(days=1)
    return marked
