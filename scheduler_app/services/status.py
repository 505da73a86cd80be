"""A schedule's status, changed by the service layer: pause (on_pause: keep, skip, cancel),
resume (with its preview: what the misfire policy does with the slots missed meanwhile),
cancel and delete. Creating and editing a definition are in ``schedules``."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from django.db import transaction

from scheduler_app.clock import Clock, SystemClock
from scheduler_app.db.locking import update_in_order
from scheduler_app.definition.schedule import (
    misfire_rules,
    timing_for,
)
from scheduler_app.dispatch.due import due_slots
from scheduler_app.dispatch.materialize import apply_overlap, insert_occurrences, plan_schedule
from scheduler_app.errors import (
    ScheduleStateError,
)
from scheduler_app.models import (
    Occurrence,
    OccurrenceState,
    PauseBehaviour,
    Schedule,
    ScheduleStatus,
)
from scheduler_app.models.audit import AuditAction
from scheduler_app.policies.misfire import PlannedSlot, decide_misfire
from scheduler_app.safety import audit
from scheduler_app.safety.access import (
    CHANGE,
    DELETE,
    PAUSE,
    authorize,
)
from scheduler_app.safety.actors import actor_name
from scheduler_app.safety.approval import hold_for_approval
from scheduler_app.services.rows import clock_of, locked
from scheduler_app.services.schedules import restart
from scheduler_app.timing import (
    ensure_aware,
    next_after,
)
from scheduler_app.worker.lifecycle import announce_finished

logger = logging.getLogger("scheduler_app.services")


def pause_schedule(
    schedule_id: UUID | str,
    *,
    clock: Clock | None = None,
    note: str = "",
    by: str = "",
    user: Any = None,
) -> Schedule:
    """Stop new occurrences; pending ones are kept or cancelled per ``on_pause``.

    ``note`` (why) and ``by`` (who) are stored on the schedule as ``pause_note``/``paused_by``.
    With ``user``, their tenants are checked first (``TenantForbidden``), as for every change.
    """
    now = clock_of(clock).now()
    with transaction.atomic():
        schedule = locked(schedule_id, user)
        authorize(user, PAUSE, schedule)
        if schedule.status == ScheduleStatus.PAUSED:
            return schedule
        if schedule.status != ScheduleStatus.ACTIVE:
            raise ScheduleStateError(
                f"only an active schedule can be paused (it is {schedule.status})"
            )
        schedule.status = ScheduleStatus.PAUSED
        schedule.paused_at = now
        schedule.pause_note = note
        schedule.paused_by = (by or actor_name(user))[:150]
        schedule.updated_at = now
        schedule.save(
            update_fields=["status", "paused_at", "pause_note", "paused_by", "updated_at"]
        )
        if schedule.on_pause == PauseBehaviour.CANCEL:
            _cancel_waiting(schedule, "paused", now)
        audit.record(schedule, AuditAction.PAUSED, user, now, reason=note)
    return schedule


@dataclass(frozen=True)
class ResumePreview:
    """What resuming now would do, computed without writing anything."""

    emit: tuple[PlannedSlot, ...]
    skipped: int
    next_run_at: datetime | None

    @property
    def count(self) -> int:
        return len(self.emit)

    @property
    def caught_up(self) -> int:
        """How many are late slots the misfire policy runs (recorded ``trigger=catch_up``);
        the others are on time (within ``max_lateness``, recorded ``trigger=scheduled``)."""
        return sum(1 for slot in self.emit if slot.catch_up)


def preview_resume(schedule: Schedule, now: datetime | None = None) -> ResumePreview:
    """How many occurrences resuming at ``now`` (default: the system clock's now) would
    create, and for which slots."""
    now = ensure_aware(now, "now") if now is not None else SystemClock().now()
    timing = timing_for(schedule)
    if schedule.next_run_at is None or schedule.next_run_at > now:
        return ResumePreview((), 0, schedule.next_run_at)
    slots, uncounted = due_slots(schedule, timing, now)
    decision = decide_misfire(slots, now, misfire_rules(schedule), uncounted_late=uncounted)
    return ResumePreview(decision.emit, decision.skipped, next_after(timing, now))


def resume_schedule(
    schedule_id: UUID | str,
    *,
    clock: Clock | None = None,
    note: str = "",
    by: str = "",
    user: Any = None,
) -> Schedule:
    """Reactivate; slots missed while paused go through the misfire policy right away.

    The pause's note is replaced by ``note`` (why it was resumed) and ``paused_by`` by ``by``
    (who resumed it), so the last person to change the state is on record.
    """
    now = clock_of(clock).now()
    with transaction.atomic():
        schedule = locked(schedule_id, user)
        authorize(user, PAUSE, schedule)
        if schedule.status == ScheduleStatus.ACTIVE:
            return schedule
        if schedule.status != ScheduleStatus.PAUSED:
            raise ScheduleStateError(
                f"only a paused schedule can be resumed (it is {schedule.status})"
            )
        schedule.status = ScheduleStatus.ACTIVE
        schedule.paused_at = None
        schedule.pause_note = note
        schedule.paused_by = (by or actor_name(user))[:150]
        if schedule.next_run_at is None:
            restart(schedule, timing_for(schedule), now)
        # A version that was never approved (paused, or restored after a cancel, while it
        # waited) goes back to waiting instead of running.
        hold_for_approval(schedule)
        rows: list[Occurrence] = []
        if (
            schedule.status == ScheduleStatus.ACTIVE
            and schedule.next_run_at is not None
            and schedule.next_run_at <= now
        ):
            rows = plan_schedule(schedule, now)
            # The same overlap rules as the beat (the schedule row is locked here too).
            apply_overlap([schedule], {schedule.id: rows}, now)
        schedule.updated_at = now
        schedule.save()
        insert_occurrences(rows)
        audit.record(schedule, AuditAction.RESUMED, user, now, reason=note, created=len(rows))
    return schedule


def cancel_schedule(
    schedule_id: UUID | str,
    *,
    clock: Clock | None = None,
    user: Any = None,
    reason: str = "",
    permission: str = CHANGE,
) -> Schedule:
    """No future occurrences; waiting ones are cancelled; history is kept."""
    now = clock_of(clock).now()
    with transaction.atomic():
        schedule = locked(schedule_id, user)
        authorize(user, permission, schedule)
        if schedule.status == ScheduleStatus.CANCELLED:
            return schedule
        schedule.status = ScheduleStatus.CANCELLED
        schedule.next_run_at = None
        schedule.updated_at = now
        schedule.save(update_fields=["status", "next_run_at", "updated_at"])
        _cancel_waiting(schedule, "schedule_cancelled", now)
        audit.record(schedule, AuditAction.CANCELLED, user, now, reason=reason)
    return schedule


def delete_schedule(
    schedule_id: UUID | str, *, clock: Clock | None = None, user: Any = None, reason: str = ""
) -> str:
    """Delete a schedule without history; one with occurrences is cancelled instead.

    Returns ``"deleted"`` or ``"cancelled"``.
    """
    now = clock_of(clock).now()
    with transaction.atomic():
        schedule = locked(schedule_id, user)
        authorize(user, DELETE, schedule)
        if schedule.occurrences.exists():
            cancel_schedule(schedule.id, clock=clock, user=user, reason=reason, permission=DELETE)
            return "cancelled"
        audit.record(schedule, AuditAction.DELETED, user, now, reason=reason)
        schedule.delete()
    return "deleted"


WAITING_STATES = (
    OccurrenceState.PENDING,
    OccurrenceState.BUFFERED,
    OccurrenceState.DISPATCHED,
    OccurrenceState.RETRYING,
)
"""Occurrences not started yet: pause (on_pause=cancel) and cancel stop them; a running one
finishes normally and its result is recorded."""


def _cancel_waiting(schedule: Schedule, reason: str, now: datetime) -> int:
    waiting = Occurrence.objects.filter(schedule=schedule, state__in=WAITING_STATES)
    stopped = list(waiting.select_for_update().order_by("pk"))
    count = update_in_order(
        waiting, state=OccurrenceState.CANCELLED, reason=reason, finished_at=now
    )
    announce_finished(stopped, OccurrenceState.CANCELLED, reason)
    return count
