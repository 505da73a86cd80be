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
from scheduler_app.models import Occurrence, Schedule, ScheduleStatus

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
    if schedule.status == ScheduleStatus.CANCELLED:
        return  # a completed schedule is held too: run now and backfill run its version
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
    """Whether ``version`` of ``schedule`` may run as far as approval goes: its task needs
    none, or exactly that version was approved (the last one approved is on the schedule)."""
    return schedule.approved_version == version or not needs_approval(schedule.task)


def occurrence_approved(row: Occurrence, asked: dict[str, bool] | None = None) -> bool:
    """Whether ``row`` (with its schedule and version loaded) may run as far as approval goes.

    Asked of the occurrence's own task *and* of its schedule's current one: a row whose task
    was changed (or forced) to one that needs approval is not let through by the other's
    answer. Its version must be the one approved last, or carry its own approval.
    """
    version = row.schedule_version
    if row.schedule.approved_version == version.version or version.approved_at is not None:
        return True
    cache = {} if asked is None else asked
    for task in {row.task, row.schedule.task}:
        if task not in cache:
            cache[task] = needs_approval(task)
        if cache[task]:
            return False
    return True
