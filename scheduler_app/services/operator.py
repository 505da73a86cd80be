"""Operator services: run now, undo a cancel (backfill: ``backfills``). Used by the admin,
commands and the API.

Every function takes the acting ``user`` (``None``: the system, no checks). A user must
belong to the schedule's tenant (``scheduler_app.safety.tenancy``) and hold the permission the
action needs (``run_schedule`` for run now and backfill, ``change_schedule`` to undo a
cancel); otherwise ``TenantForbidden`` / ``OperatorPermissionDenied`` and nothing is written.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from django.db import transaction

from scheduler_app.clock import Clock, SystemClock
from scheduler_app.definition.schedule import (
    jitter_for,
    timing_for,
)
from scheduler_app.dispatch.materialize import apply_overlap, occurrence_fields
from scheduler_app.errors import (
    OperatorPermissionDenied,
    ScheduleStateError,
    ScheduleValidationError,
)
from scheduler_app.models import (
    AttemptKind,
    Occurrence,
    OccurrenceAttempt,
    OccurrenceState,
    Schedule,
    ScheduleStatus,
    Trigger,
)
from scheduler_app.models.audit import AuditAction
from scheduler_app.safety import audit
from scheduler_app.safety.access import CHANGE, RUN, authorize
from scheduler_app.safety.actors import actor_name, is_system
from scheduler_app.safety.approval import check_runner_edit, hold_for_approval, version_approved
from scheduler_app.services.replay import NOT_RUNNABLE
from scheduler_app.timing import ensure_aware, next_after

__all__ = ["OperatorPermissionDenied", "restore_schedule", "run_now"]
logger = logging.getLogger("scheduler_app.services")
RUN_PERMISSION = RUN
CHANGE_PERMISSION = CHANGE
"""No backfill creates more occurrences than this, confirmed or not (split the range)."""


def _who(user: Any) -> str:
    return "" if is_system(user) else actor_name(user)


def valid_pk(schedule: Schedule | UUID | str) -> UUID:
    pk = schedule.pk if isinstance(schedule, Schedule) else schedule
    try:
        return UUID(str(pk))
    except ValueError:
        raise ScheduleValidationError(
            "schedule", f"no schedule with id {pk}", code="not_found"
        ) from None


def locked(schedule: Schedule | UUID | str) -> Schedule:
    pk = valid_pk(schedule)
    found = Schedule.objects.select_for_update().filter(pk=pk).first()
    if found is None:
        raise ScheduleValidationError("schedule", f"no schedule with id {pk}", code="not_found")
    return found


def run_now(
    schedule: Schedule | UUID | str,
    *,
    user: Any = None,
    reason: str = "",
    window_start: datetime | None = None,
    window_end: datetime | None = None,
    respect_overlap: bool = True,
    clock: Clock | None = None,
) -> Occurrence:
    """Create one occurrence with trigger ``manual`` for now, outside the rule.

    Its idempotency key contains ``manual`` and a random part, so it never equals a rule
    slot's key (those are the schedule id and the slot instant). The business window
    defaults to the instant itself. With ``respect_overlap`` the schedule's overlap policy
    decides as for any slot (it may be buffered or skipped); without it, it runs regardless.
    """
    now = (clock or SystemClock()).now()
    start = ensure_aware(window_start, "window_start") if window_start else now
    end = ensure_aware(window_end, "window_end") if window_end else max(now, start)
    if start > end:
        raise ScheduleValidationError(
            "window_start", "the window starts after it ends; swap the two", code="bad_window"
        )
    with transaction.atomic():
        target = locked(schedule)
        authorize(user, RUN, target)
        check_runnable(target)
        key = f"{target.pk}:manual:{uuid.uuid4().hex}"
        row = new_occurrence(target, key, now, Trigger.MANUAL, now, user, reason)
        row.window_start, row.window_end = start, end
        if respect_overlap and row.state == OccurrenceState.PENDING:
            apply_overlap([target], {target.pk: [row]}, now)
        row.save(force_insert=True)
        audit.record(target, AuditAction.RUN_NOW, user, now, reason=reason, occurrence=str(row.pk))
    logger.info(
        "occurrence run now",
        extra={
            "action": "occurrence.run_now",
            "schedule_id": str(target.pk),
            "occurrence_id": str(row.pk),
        },
    )
    return row


def check_runnable(schedule: Schedule) -> None:
    if schedule.status in NOT_RUNNABLE:
        raise ScheduleStateError(
            f"schedule {schedule.pk} is {schedule.status}; it cannot be run "
            "(restore or approve it first)"
        )
    if not version_approved(schedule, schedule.version):
        raise ScheduleStateError(
            f"version {schedule.version} of schedule {schedule.pk} is not approved; a user "
            "with approve_schedule must approve it before it can run"
        )


def new_occurrence(
    schedule: Schedule,
    key: str,
    slot: datetime,
    trigger: str,
    now: datetime,
    user: Any,
    reason: str,
) -> Occurrence:
    deadline = (
        slot + timedelta(seconds=schedule.deadline)
        if schedule.deadline is not None and trigger == Trigger.MANUAL
        else None
    )
    return Occurrence(
        **occurrence_fields(schedule, key, slot, now),
        trigger=trigger,
        window_start=slot,
        not_before=now if trigger == Trigger.MANUAL else slot + jitter_for(key, schedule.jitter),
        deadline_at=deadline,
        requested_by=_who(user),
        note=reason[:2000],
    )


def restore_schedule(
    schedule: Schedule | UUID | str,
    *,
    user: Any = None,
    clock: Clock | None = None,
    reason: str = "",
) -> Schedule:
    """Undo a cancel: the schedule comes back *paused* (resume it to see what catching up
    would run), and occurrences the cancel stopped before they started are recorded as
    restorable in their attempt history (replay them to run them)."""
    now = (clock or SystemClock()).now()
    with transaction.atomic():
        target = locked(schedule)
        authorize(user, CHANGE, target)
        # Undoing a cancel makes the schedule run again (once resumed), with its owner's rights.
        check_runner_edit(user, (), target.owner, restarts=True)
        if target.status != ScheduleStatus.CANCELLED:
            raise ScheduleStateError(
                f"schedule {target.pk} is {target.status}, not cancelled: nothing to undo"
            )
        timing = timing_for(target)
        target.status = ScheduleStatus.PAUSED
        target.paused_at = now
        target.pause_note = f"restored after a cancel by {_who(user) or 'the system'}"
        target.paused_by = _who(user)
        target.next_run_at = next_after(timing, (target.last_scheduled_for or now))
        if target.next_run_at is None:
            target.status = ScheduleStatus.COMPLETED
        hold_for_approval(target)  # a version never approved waits again, it is not paused
        target.updated_at = now
        target.save()
        stopped = Occurrence.objects.filter(
            schedule=target, state=OccurrenceState.CANCELLED, reason="schedule_cancelled"
        )
        OccurrenceAttempt.objects.bulk_create(
            [
                OccurrenceAttempt(
                    occurrence_id=pk,
                    scheduled_for=slot,
                    kind=AttemptKind.RESTORE,
                    number=attempts,
                    started_at=now,
                    finished_at=now,
                    outcome="restorable",
                    by=_who(user),
                    note="the schedule's cancel was undone; replay this occurrence to run it",
                )
                for pk, attempts, slot in stopped.values_list("pk", "attempts", "scheduled_for")
            ]
        )
        audit.record(target, AuditAction.RESTORED, user, now, reason=reason)
    logger.info(
        "schedule restored", extra={"action": "schedule.restored", "schedule_id": str(target.pk)}
    )
    return target
