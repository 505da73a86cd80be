"""Small helpers shared by the time-engine tests (no fixtures, plain functions)."""

from __future__ import annotations

from datetime import UTC, datetime

from scheduler_app.timing import Timing, build_timing, slots_between


def utc(*args: int) -> datetime:
    """``utc(2024, 3, 31, 1)`` -> an aware UTC datetime."""
    return datetime(*args, tzinfo=UTC)


def iso(value: datetime) -> str:
    """A UTC instant as ``2024-03-31T01:00Z`` (compact, easy to compare in tables)."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%MZ")


def window(timing: Timing, after: datetime, until: datetime) -> list[str]:
    """The slots in ``(after, until]`` as compact UTC strings."""
    return [iso(slot) for slot in slots_between(timing, after, until)]


def cron(rule: str, zone: str = "UTC", **kwargs: object) -> Timing:
    return build_timing(kind="cron", rule=rule, timezone=zone, **kwargs)  # type: ignore[arg-type]
