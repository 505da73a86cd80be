"""Where "now" comes from. Everything time-dependent takes a clock; tests pass a FakeClock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Protocol

from scheduler_app.timing import ensure_aware


class Clock(Protocol):
    def now(self) -> datetime: ...


class SystemClock:
    """The real wall clock, in UTC."""

    def now(self) -> datetime:
        return datetime.now(UTC)


class FakeClock:
    """A clock that only moves when told to."""

    def __init__(self, start: datetime) -> None:
        self._now = ensure_aware(start, "start")

    def now(self) -> datetime:
        return self._now

    def advance(self, delta: timedelta | float) -> datetime:
        step = delta if isinstance(delta, timedelta) else timedelta(seconds=delta)
        self._now += step
        return self._now

    def set(self, instant: datetime) -> None:
        self._now = ensure_aware(instant, "instant")
