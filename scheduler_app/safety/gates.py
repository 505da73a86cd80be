"""Checks every schedule write passes through (``services.create_schedule``/``update_schedule``)."""

from __future__ import annotations

from datetime import datetime

from scheduler_app.models import Schedule


def before_write(schedule: Schedule, *, creating: bool, now: datetime) -> None:
    """Called inside the write's transaction, before the row is saved.

    May change the row (e.g. hold a version that needs approval) or raise
    ``ScheduleValidationError`` (e.g. a quota) to refuse the write.
    """
