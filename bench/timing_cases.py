"""What ``bench.timing`` measures: the zone, the year and the targets, and the next_after cases
(``Case``: one subject asked at many instants), the same rules anchored yesterday and 10 years
ago side by side."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from datetime import time as wall_time
from typing import Any
from zoneinfo import ZoneInfo

from dateutil import rrule as du

from scheduler_app.timing import Timing, build_timing, next_after

ZONE_NAME = "Europe/Riga"
ZONE = ZoneInfo(ZONE_NAME)
YEAR = 2026
SEED = 20260329  # the Riga spring-forward day of YEAR

TARGET_NEXT_US = 20.0
TARGET_AGE_RATIO = 1.5
TARGET_ENUMERATE_S = 1.0
ENUMERATE_RULE = "*/5 * * * *"
ENUMERATE_EXPECTED = 105_120
TEN_YEARS = timedelta(days=3652)
YESTERDAY = timedelta(days=1)
DAILY = "FREQ=DAILY;BYHOUR=9;BYMINUTE=0"

Call = Callable[[Any, datetime], object]


@dataclass
class Case:
    """One next_after-style measurement: ``call(subject, instant)`` over many instants."""

    label: str
    make: Callable[[datetime], tuple[Any, datetime]]  # instant -> (subject, argument)
    call: Call = next_after
    target_us: float | None = None
    max_samples: int | None = None  # for slow reference rows
    result: dict[str, Any] = field(default_factory=dict)


def fixed(kind: str, rule: Any, **options: Any) -> Callable[[datetime], tuple[Timing, datetime]]:
    """A single timing built once, asked at each instant."""
    timing = build_timing(kind=kind, rule=rule, timezone=ZONE_NAME, **options)
    return lambda instant: (timing, instant)


def local_day(instant: datetime, back: timedelta, hour: int = 9) -> datetime:
    """Naive Riga wall time ``hour``:00 on the day ``back`` before ``instant``'s local date."""
    day: date = instant.astimezone(ZONE).date() - back
    return datetime.combine(day, wall_time(hour))


def rrule_anchored(back: timedelta) -> Callable[[datetime], tuple[Timing, datetime]]:
    def make(instant: datetime) -> tuple[Timing, datetime]:
        anchor = local_day(instant, back)
        return build_timing(kind="rrule", rule=DAILY, timezone=ZONE_NAME, anchor=anchor), instant

    return make


def cron_starting(back: timedelta) -> Callable[[datetime], tuple[Timing, datetime]]:
    def make(instant: datetime) -> tuple[Timing, datetime]:
        starts_at = local_day(instant, back, hour=0).replace(tzinfo=ZONE)
        timing = build_timing(
            kind="cron", rule="30 9 * * 1-5", timezone=ZONE_NAME, starts_at=starts_at
        )
        return timing, instant

    return make


def interval_anchored(back: timedelta) -> Callable[[datetime], tuple[Timing, datetime]]:
    def make(instant: datetime) -> tuple[Timing, datetime]:
        anchor = (instant - back).replace(microsecond=0)
        return build_timing(kind="interval", rule="15m", timezone=ZONE_NAME, anchor=anchor), instant

    return make


def dateutil_anchored(back: timedelta) -> Callable[[datetime], tuple[du.rrule, datetime]]:
    """Plain dateutil, no re-anchoring: the cost DESIGN.md section 9 warns about."""

    def make(instant: datetime) -> tuple[du.rrule, datetime]:
        rule = du.rrule(
            du.DAILY, dtstart=local_day(instant, back), byhour=9, byminute=0, cache=False
        )
        return rule, instant.astimezone(ZONE).replace(tzinfo=None)

    return make


def dateutil_after(rule: du.rrule, local: datetime) -> object:
    return rule.after(local)


def next_after_cases() -> list[Case]:
    once_at = datetime(YEAR, 7, 1, 12, 0, tzinfo=UTC)
    return [
        Case("cron `30 9 * * 1-5`", fixed("cron", "30 9 * * 1-5"), target_us=TARGET_NEXT_US),
        Case("cron `*/15 * * * *`", fixed("cron", "*/15 * * * *"), target_us=TARGET_NEXT_US),
        Case(
            f"rrule `{DAILY}` (anchor yesterday)",
            rrule_anchored(YESTERDAY),
            target_us=TARGET_NEXT_US,
        ),
        Case("interval 15m (anchor yesterday)", interval_anchored(YESTERDAY)),
        Case("once, aware instant", fixed("once", once_at)),
        Case("once, local wall time", fixed("once", datetime(YEAR, 7, 1, 15, 0))),  # noqa: DTZ001
    ]


def anchor_age_pairs() -> list[tuple[str, Case, Case]]:
    pairs = [
        ("rrule `" + DAILY + "` (anchor)", rrule_anchored, next_after),
        ("cron `30 9 * * 1-5` (starts_at; cron has no anchor)", cron_starting, next_after),
        ("interval 15m (anchor)", interval_anchored, next_after),
        ("reference: raw dateutil `rrule.after()` (DTSTART)", dateutil_anchored, dateutil_after),
    ]
    result = []
    for label, factory, call in pairs:
        reference = factory is dateutil_anchored
        limit = 100 if reference else None
        young = Case(label + " yesterday", factory(YESTERDAY), call, max_samples=limit)
        old = Case(label + " 10 years ago", factory(TEN_YEARS), call, max_samples=limit)
        result.append((label, young, old))
    return result
