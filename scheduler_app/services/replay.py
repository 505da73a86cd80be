"""Replaying an occurrence: a failed (dead-letter), expired or cancelled one runs again."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any
from uuid import UUID

from django.db import transaction

from scheduler_app.clock import Clock, SystemClock
from scheduler_app.definition.schedule import is_uuid
from scheduler_app.errors import ScheduleStateError, ScheduleValidationError
from scheduler_app.models import (
    AttemptKind,
    AuditAction,
    Occurrence,
    OccurrenceAttempt,
    OccurrenceState,
    Schedule,
    ScheduleStatus,
)
from scheduler_app.safety import audit
from scheduler_app.safety.access import REPLAY, authorize
from scheduler_app.safety.actors import actor_name
from scheduler_app.safety.handoff import why_not_runnable

logger = logging.getLogger("scheduler_app.services")


NOT_RUNNABLE = (ScheduleStatus.CANCELLED, ScheduleStatus.AWAITING_APPROVAL)
"""Statuses in which no occurrence of a schedule may run (replayed, run now, backfilled)."""
REPLAYABLE = (OccurrenceState.FAILED, OccurrenceState.EXPIRED, OccurrenceState.CANCELLED)


def replay_occurrence(
    occurrence_id: UUID | str,
    *,
    force: bool = False,
    clock: Clock | None = None,
    by: str = "",
    note: str = "",
    user: Any = None,
) -> Occurrence:
    """Run a failed (dead-letter), expired or cancelled occurrence again.

    The same occurrence, key and ``scheduled_for``: the next attempt, its history kept (the
    replay itself is recorded as an attempt-history event with ``by`` and ``note``).
    Replaying a succeeded occurrence needs ``force=True``. The deadline no longer applies.
    """
    now = (clock or SystemClock()).now()
    allowed = (*REPLAYABLE, OccurrenceState.SUCCEEDED) if force else REPLAYABLE
    with transaction.atomic():
        occurrence = (
            Occurrence.objects.select_for_update().filter(pk=occurrence_id).first()
            if is_uuid(occurrence_id)
            else None
        )
        if occurrence is None:
            raise ScheduleValidationError(
                "occurrence_id", f"no occurrence with id {occurrence_id}", code="not_found"
            )
        schedule = Schedule.objects.select_for_update().get(pk=occurrence.schedule_id)
        authorize(user, REPLAY, schedule)
        occurrence.schedule = schedule
        _check_replayable(occurrence, schedule, allowed)
        previous = occurrence.state
        _reset_for_replay(occurrence, now)
        OccurrenceAttempt.objects.create(
            occurrence=occurrence,
            scheduled_for=occurrence.scheduled_for,
            kind=AttemptKind.REPLAY,
            number=occurrence.attempts,
            started_at=now,
            finished_at=now,
            outcome=previous,
            by=(by or actor_name(user))[:150],
            note=note,
        )
        audit.record(
            schedule, AuditAction.REPLAYED, user, now, reason=note, occurrence=str(occurrence.pk)
        )
    logger.info(
        "occurrence replayed",
        extra={"action": "occurrence.replayed", "occurrence_id": str(occurrence.pk)},
    )
    return occurrence


def _check_replayable(
    occurrence: Occurrence, schedule: Schedule, allowed: tuple[OccurrenceState, ...]
) -> None:
    """Refuse a replay of an occurrence its schedule may not run, or in a state not ``allowed``."""
    refused = why_not_runnable(occurrence)
    if refused:
        raise ScheduleStateError(
            f"occurrence {occurrence.pk} cannot run ({refused}): its schedule is "
            f"{schedule.status}, version {occurrence.schedule_version.version}; approve "
            "or restore it first"
        )
    if occurrence.state not in allowed:
        hint = " (pass force=True / --force to run a succeeded one again)" * (
            occurrence.state == OccurrenceState.SUCCEEDED
        )
        raise ScheduleStateError(
            f"occurrence {occurrence.pk} is {occurrence.state}; only failed, expired or "
            f"cancelled occurrences can be replayed{hint}"
        )


def _reset_for_replay(occurrence: Occurrence, now: datetime) -> None:
    """Make the occurrence pending again from ``now``: no deadline, no trace of its last run."""
    occurrence.state = OccurrenceState.PENDING
    occurrence.reason = "replay"
    occurrence.deadline_at = None
    occurrence.not_before = now
    occurrence.finished_at = None
    occurrence.dispatched_at = None
    occurrence.publish_lease_until = None
    occurrence.cancel_requested_at = None
    occurrence.save()
