"""Small helpers shared by the time-engine tests (no fixtures, plain functions)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any
from unittest import mock

from scheduler_app.timing import Timing, build_timing, engine, slots_between


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


@contextmanager
def candidates_counted() -> Iterator[list[int]]:
    """While open, counts the candidate times the engine evaluates (the items of
    ``walks.rule_items``): ``count[0]``. Work is counted, never timed."""
    count = [0]
    real = engine.rule_items

    def items(*args: Any) -> Iterator[Any]:
        for item in real(*args):
            count[0] += 1
            yield item

    with mock.patch.object(engine, "rule_items", items):
        yield count
