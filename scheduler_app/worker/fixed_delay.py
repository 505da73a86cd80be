"""``fixed_delay`` intervals: the next slot is set when a run ends (its completion plus the
interval), by the transaction that records the outcome."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.db import DatabaseError

from scheduler_app.definition.schedule import timing_for
from scheduler_app.models import IntervalMode, Schedule, ScheduleStatus


def after_fixed_delay_run(schedule: Schedule, now: datetime) -> None:
    """``fixed_delay`` intervals: the next slot is this completion plus the interval.

    A definition that no longer evaluates (a row changed past the services) parks the
    schedule instead of failing the outcome's transaction: the outcome is recorded once, and
    the task never runs again for this slot."""
    if schedule.interval_mode != IntervalMode.FIXED_DELAY:
        return
    if schedule.status != ScheduleStatus.ACTIVE or schedule.next_run_at is not None:
        return
    try:
        following = next_fixed_delay_slot(schedule, now)
    except Exception as exc:
        if isinstance(exc, DatabaseError):
            raise
        fields = schedule.park(exc, now)
        schedule.save(update_fields=fields)
        return
    schedule.next_run_at = following
    if schedule.next_run_at is None:
        schedule.status = ScheduleStatus.COMPLETED
    schedule.updated_at = now
    schedule.save(update_fields=["next_run_at", "status", "updated_at"])


def next_fixed_delay_slot(schedule: Schedule, finished_at: datetime) -> datetime | None:
    """Completion + N, moved into the active window, within starts_at / ends_at / max_count.

    N counts from the slot instead when the completion reads earlier than the slot (the
    clock stepped back, or the worker's clock is behind the beat's): slots only move forward.
    """
    since = finished_at
    if schedule.last_scheduled_for is not None:
        since = max(since, schedule.last_scheduled_for)
    candidate = since + timedelta(seconds=int(schedule.rule))
    if schedule.starts_at is not None:
        candidate = max(candidate, schedule.starts_at)
    window = timing_for(schedule).window
    if window is not None:
        zone = timing_for(schedule).zone
        wall = candidate.astimezone(zone).replace(tzinfo=None)
        if not window.contains(wall):
            candidate = window.next_opening(wall).replace(tzinfo=zone).astimezone(UTC)
    if schedule.ends_at is not None and candidate > schedule.ends_at:
        return None
    if schedule.max_count is not None and schedule.occurrence_count >= schedule.max_count:
        return None
    return candidate
