"""Approval: schedules of sensitive tasks (mass mail, payments) run only once a person agrees.

A task needs approval when it is marked (``@app.task(needs_approval=True)``, or
``needs_approval=True`` on ``@scheduled``'s task) or its name matches
``SCHEDULER_APPROVAL_TASKS`` (names or fnmatch patterns). A new schedule of such a task, and
every new version of one, is stored ``awaiting_approval`` (the beat ignores it) until a user
with the ``scheduler_app.approve_schedule`` permission approves *that version*; then it is
active from the approval on (slots that passed while waiting are not run).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from fnmatch import fnmatchcase
from typing import Any
from uuid import UUID

from django.db import transaction

from scheduler_app.conf import get_settings
from scheduler_app.errors import ScheduleStateError, ScheduleValidationError, StaleVersion
from scheduler_app.models import Schedule, ScheduleStatus

logger = logging.getLogger("scheduler_app.safety")
PERMISSION = "scheduler_app.approve_schedule"
_TICK = timedelta(microseconds=1)


def approval_patterns() -> tuple[str, ...]:
    """``SCHEDULER_APPROVAL_TASKS``: task names or fnmatch patterns that need approval."""
    return tuple(get_settings().APPROVAL_TASKS)


def needs_approval(task: str) -> bool:
    if any(fnmatchcase(task, pattern) for pattern in approval_patterns()):
        return True
    from celery import current_app

    registered = current_app.tasks.get(task)
    return bool(getattr(registered, "needs_approval", False))


def hold_for_approval(schedule: Schedule) -> None:
    """Called before every write: an unapproved version of such a task waits."""
    if schedule.status in (ScheduleStatus.CANCELLED, ScheduleStatus.COMPLETED):
        return
    if schedule.approved_version == schedule.version or not needs_approval(schedule.task):
        return
    if schedule.status != ScheduleStatus.AWAITING_APPROVAL:
        logger.info(
            "schedule version waits for approval",
            extra={
                "action": "schedule.awaiting_approval",
                "schedule_id": str(schedule.pk),
                "version": schedule.version,
            },
        )
    schedule.status = ScheduleStatus.AWAITING_APPROVAL


def approve_schedule(
    schedule_id: UUID | str, *, version: int, user: Any, now: datetime
) -> Schedule:
    """Approve ``version`` (the one the approver looked at) and activate the schedule."""
    if user is None or not user.has_perm(PERMISSION):
        name = getattr(user, "username", None) or "this user"
        raise PermissionError(
            f"{name} may not approve schedules: grant the '{PERMISSION}' permission"
        )
    with transaction.atomic():
        schedule = Schedule.objects.select_for_update().filter(pk=schedule_id).first()
        if schedule is None:
            raise ScheduleValidationError(
                "schedule_id", f"no schedule with id {schedule_id}", code="not_found"
            )
        if schedule.version != version:
            raise StaleVersion(
                f"schedule {schedule.pk} is at version {schedule.version}, you approved version "
                f"{version}; review the current version and approve that one"
            )
        if schedule.status != ScheduleStatus.AWAITING_APPROVAL:
            raise ScheduleStateError(
                f"schedule {schedule.pk} is {schedule.status}, not awaiting approval"
            )
        _activate(schedule, now)
        schedule.approved_version = version
        schedule.approved_by = user.get_username()
        schedule.approved_at = now
        schedule.updated_at = now
        schedule.save()
    logger.info(
        "schedule approved",
        extra={
            "action": "schedule.approved",
            "schedule_id": str(schedule.pk),
            "version": version,
            "by": schedule.approved_by,
        },
    )
    return schedule


def _activate(schedule: Schedule, now: datetime) -> None:
    from scheduler_app.definitions import timing_for
    from scheduler_app.timing import next_after

    schedule.next_run_at = next_after(timing_for(schedule), now - _TICK)
    schedule.status = (
        ScheduleStatus.ACTIVE if schedule.next_run_at is not None else ScheduleStatus.COMPLETED
    )
