"""Approving a schedule version: the action (the rules are in ``scheduler_app.safety.approval``)."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any
from uuid import UUID

from django.db import transaction

from scheduler_app.clock import Clock, SystemClock
from scheduler_app.definition.schedule import is_uuid, timing_for
from scheduler_app.errors import (
    OperatorPermissionDenied,
    ScheduleStateError,
    ScheduleValidationError,
    StaleVersion,
)
from scheduler_app.models import AuditAction, Schedule, ScheduleStatus, ScheduleVersion
from scheduler_app.safety import audit
from scheduler_app.safety.access import APPROVE, authorize
from scheduler_app.safety.actors import actor_name
from scheduler_app.safety.approval import PERMISSION, check_other_person
from scheduler_app.timing import TICK, next_after

logger = logging.getLogger("scheduler_app.safety")


def approve_schedule(
    schedule_id: UUID | str,
    *,
    version: int,
    user: Any,
    now: datetime | None = None,
    clock: Clock | None = None,
    reason: str = "",
) -> Schedule:
    """Approve ``version`` (the one the approver looked at) and activate the schedule.

    A person needs ``approve_schedule`` and the schedule's tenant; a system actor approves as
    the deployment. With ``SCHEDULER_APPROVAL_REQUIRES_OTHER_PERSON``, a person may not
    approve a version they made (``OperatorPermissionDenied``). The entry goes to the audit
    trail.
    """
    now = now or (clock or SystemClock()).now()
    if user is None:
        raise OperatorPermissionDenied(
            f"say who approves: a user with the '{PERMISSION}' permission, or the system actor"
        )
    with transaction.atomic():
        schedule = (
            Schedule.objects.select_for_update().filter(pk=schedule_id).first()
            if is_uuid(schedule_id)
            else None
        )
        if schedule is None:
            raise ScheduleValidationError(
                "schedule_id", f"no schedule with id {schedule_id}", code="not_found"
            )
        authorize(user, APPROVE, schedule)
        _check_awaiting(schedule, version)
        check_other_person(schedule, version, user)
        _activate(schedule, now)
        schedule.approved_version = version
        schedule.approved_by = actor_name(user)
        schedule.approved_at = now
        schedule.updated_at = now
        schedule.save()
        # Kept on the version too: its occurrences still waiting stay approved after a later
        # version is approved.
        ScheduleVersion.objects.filter(schedule=schedule, version=version).update(
            approved_at=now, approved_by=schedule.approved_by
        )
        audit.record(schedule, AuditAction.APPROVED, user, now, reason=reason)
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


def _check_awaiting(schedule: Schedule, version: int) -> None:
    """Refuse an approval of another version than the current one, or of a schedule that
    awaits none."""
    if schedule.version != version:
        raise StaleVersion(
            f"schedule {schedule.pk} is at version {schedule.version}, you approved version "
            f"{version}; review the current version and approve that one"
        )
    if schedule.status != ScheduleStatus.AWAITING_APPROVAL:
        raise ScheduleStateError(
            f"schedule {schedule.pk} is {schedule.status}, not awaiting approval"
        )


def _activate(schedule: Schedule, now: datetime) -> None:
    schedule.next_run_at = next_after(timing_for(schedule), now - TICK)
    schedule.status = (
        ScheduleStatus.ACTIVE if schedule.next_run_at is not None else ScheduleStatus.COMPLETED
    )
