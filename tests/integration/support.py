"""Shared pieces for the scheduler integration tests: a fake broker, a ticker, row helpers."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from scheduler_app.clock import FakeClock
from scheduler_app.conf import SchedulerSettings
from scheduler_app.handoff.protocol import PartialPublish
from scheduler_app.models import Occurrence, Schedule
from scheduler_app.services import create_schedule
from scheduler_app.ticker import Ticker

# A Monday, well clear of any DST transition.
START = datetime(2026, 1, 5, 0, 0, 10, tzinfo=UTC)
TASK = "demo.ping"


class MemoryPublisher:
    """A broker in a list. ``down`` refuses everything; ``fail_after`` fails midway."""

    def __init__(self) -> None:
        self.sent: list[Occurrence] = []
        self.down = False
        self.fail_after: int | None = None

    def publish(self, occurrences: Sequence[Occurrence]) -> list[Occurrence]:
        if self.down:
            raise PartialPublish(published=[], cause="broker down")
        batch = list(occurrences)
        if self.fail_after is not None and len(batch) > self.fail_after:
            done = batch[: self.fail_after]
            self.sent.extend(done)
            raise PartialPublish(published=done, cause="connection lost midway")
        self.sent.extend(batch)
        return batch

    @property
    def ids(self) -> list[str]:
        return [str(row.id) for row in self.sent]


def ticker(
    publisher: MemoryPublisher, clock: FakeClock, owner: str = "test-beat", **settings: Any
) -> Ticker:
    return Ticker(publisher, clock=clock, settings=SchedulerSettings(**settings), owner=owner)


def schedule(clock: FakeClock, **fields: Any) -> Schedule:
    """``create_schedule`` with the demo task unless told otherwise.

    Overlap is ``allow`` unless a test asks otherwise: these tests are about misfire and the
    outbox; the overlap policies have their own tests.
    """
    fields.setdefault("task", TASK)
    fields.setdefault("overlap_policy", "allow")
    return create_schedule(clock=clock, **fields)


def rows(target: Schedule) -> list[Occurrence]:
    """The schedule's occurrences, oldest slot first."""
    return list(Occurrence.objects.filter(schedule=target).order_by("scheduled_for"))


def slots(target: Schedule) -> list[datetime]:
    return [row.scheduled_for for row in rows(target)]


def reload(target: Schedule) -> Schedule:
    return Schedule.objects.get(pk=target.pk)


def admin_form(**overrides: Any) -> dict[str, Any]:
    """POST data of a valid schedule add form; ``None`` drops a field."""
    data = {
        "name": "daily report",
        "tenant": "",
        "task": "demo.ping",
        "kwargs": "{}",
        "objective": "",
        "kind": "cron",
        "rule": "0 8 * * MON-FRI",
        "timezone": "Europe/Paris",
        "dst_nonexistent": "auto",
        "dst_ambiguous": "auto",
        "misfire_policy": "catch_up",
        "max_lateness": 60,
        "catch_up_window": 86400,
        "catch_up_limit": 12,
        "overlap_policy": "skip",
        "on_pause": "keep",
        "interval_mode": "fixed_rate",
        "max_attempts": 3,
        "retry_delay": 10,
        "cancel_grace": 60,
        "active_window": "",
        "window_policy": "defer",
        "jitter": 0,
        "mode": "live",
        "expected_version": 0,
    }
    data.update(overrides)
    return {key: value for key, value in data.items() if value is not None}
