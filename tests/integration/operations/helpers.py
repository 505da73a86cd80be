"""Shared pieces of the operations tests: ending occurrences the way a worker does."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from scheduler_app import events
from scheduler_app.clock import FakeClock
from scheduler_app.models import Occurrence, Schedule
from scheduler_app.worker.lifecycle import record_success
from tests.integration.support import MemoryPublisher, rows, ticker


def finish(occurrence: Occurrence, state: str, at: datetime, error: str = "") -> Occurrence:
    """Write a final state (as the worker does, with a success noted on the schedule row)
    and send ``occurrence_finished``."""
    Occurrence.objects.filter(pk=occurrence.pk).update(
        state=state,
        started_at=occurrence.scheduled_for + timedelta(seconds=2),
        finished_at=at,
        last_error=error,
        reason="" if state == "succeeded" else "error",
    )
    occurrence.refresh_from_db()
    if state == "succeeded":
        record_success(Schedule.objects.get(pk=occurrence.schedule_id), at)
    events.occurrence_finished.send(
        sender=Occurrence, occurrence=occurrence, state=state, reason=occurrence.reason
    )
    return occurrence


def run_due(target: Schedule, clock: FakeClock, **settings: Any) -> list[Occurrence]:
    """One tick at the clock's time; the schedule's occurrences, oldest first."""
    ticker(MemoryPublisher(), clock, **settings).tick()
    return rows(target)
