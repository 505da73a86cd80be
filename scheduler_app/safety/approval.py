"""Approval: schedules of sensitive tasks (mass mail, payments) run only once a person agrees.

A task needs approval when it is marked (``@app.task(needs_approval=True)``, or
``needs_approval=True`` on ``@scheduled``'s task) or its name matches
``SCHEDULER_APPROVAL_TASKS`` (names or fnmatch patterns). A new schedule of such a task, and
every new version of one, is stored ``awaiting_approval`` (the beat ignores it) until a user
with the ``scheduler_app.approve_schedule`` permission approves *that version*; then it is
active from the approval on (slots that passed while waiting are not run).

The rules live here (what needs approval, whether a version is approved); approving is a
service (``scheduler_app.services.approve_schedule``). The outbox and the worker claim ask
``version_approved`` again before an occurrence leaves the database or starts.
"""

from __future__ import annotations

import logging
from fnmatch import fnmatchcase

from celery import current_app

from scheduler_app.conf import get_settings
from scheduler_app.models import Schedule, ScheduleStatus

logger = logging.getLogger("scheduler_app.safety")
PERMISSION = "scheduler_app.approve_schedule"


def approval_patterns() -> tuple[str, ...]:
    """``SCHEDULER_APPROVAL_TASKS``: task names or fnmatch patterns that need approval."""
    return tuple(get_settings().APPROVAL_TASKS)


def needs_approval(task: str) -> bool:
    if any(fnmatchcase(task, pattern) for pattern in approval_patterns()):
        return True
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


def version_approved(schedule: Schedule, version: int) -> bool:
    """Whether occurrences of ``version`` of ``schedule`` may run as far as approval goes:
    the task needs none, or exactly that version was approved."""
    return schedule.approved_version == version or not needs_approval(schedule.task)
