"""Receivers of the scheduler's own signals: metrics, pause after failures, archive on completion.

Connected by ``SchedulerAppConfig.ready()`` (``connect()``), so every process that loads the
app has them, worker and web alike. The module sits on top: it reacts to the ledger's events
with the services (pausing a schedule), so nothing below imports it.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import DatabaseError, transaction
from django.db.models import F

from scheduler_app import events
from scheduler_app.clock import SystemClock
from scheduler_app.models import OPEN_STATES, Occurrence, OccurrenceState, Schedule, ScheduleStatus
from scheduler_app.monitoring.monitor import _first_line
from scheduler_app.observability.instruments import DUPLICATES_PREVENTED, observe_finished
from scheduler_app.safety.actors import SYSTEM
from scheduler_app.services import pause_schedule
from scheduler_app.worker.lifecycle import by_id, slot_of

logger = logging.getLogger("scheduler_app.monitoring")
SYSTEM_USER = "scheduler"
"""``paused_by`` of a schedule the scheduler paused itself."""


def on_occurrence_finished(
    sender: Any, occurrence: Any, state: str, reason: str = "", schedule: Any = None, **_: Any
) -> None:
    """Sent by whoever wrote the final state, after the write. A database error here is
    logged, never raised into the sender (a worker recording an outcome, the beat)."""
    try:
        observe_finished(occurrence, state, reason)
        now = SystemClock().now()
        count_failures(occurrence, state, now, schedule)
        archive_if_done(occurrence, state, now, schedule)
    except DatabaseError:
        logger.exception(
            "failure handling after an occurrence ended did not complete",
            extra={"action": "occurrence.finish_hooks_failed", "occurrence_id": str(occurrence.pk)},
        )


def on_duplicate_prevented(sender: Any, kind: str = "", **_: Any) -> None:
    DUPLICATES_PREVENTED.labels(kind or "unknown").inc()


def count_failures(occurrence: Any, state: str, now: Any, schedule: Any = None) -> None:
    """``failed`` adds one to ``consecutive_failures``; ``succeeded`` resets it. At
    ``pause_after_failures`` the schedule pauses itself with a note saying why.

    ``schedule``: the row as the outcome's write locked it (sent by the worker), if given."""
    if state == OccurrenceState.SUCCEEDED:
        if schedule is not None and schedule.consecutive_failures == 0:
            return  # nothing to reset (and no queryset built: this is every success)
        Schedule.objects.filter(pk=occurrence.schedule_id).exclude(consecutive_failures=0).update(
            consecutive_failures=0
        )
        return
    if state != OccurrenceState.FAILED:
        return
    rows = Schedule.objects.filter(pk=occurrence.schedule_id)
    with transaction.atomic():
        rows.update(consecutive_failures=F("consecutive_failures") + 1)
        schedule = rows.select_for_update().first()
        if schedule is None:
            return
        limit = schedule.pause_after_failures
        if limit and schedule.consecutive_failures >= limit and schedule.status == "active":
            _pause(schedule, occurrence, now)


def _pause(schedule: Any, occurrence: Any, now: Any) -> None:
    error = by_id(occurrence.pk, slot_of(occurrence)).values_list("last_error", flat=True)
    detail = _first_line(next(iter(error), "")) or occurrence.reason or "no error recorded"
    note = (
        f"paused after {schedule.consecutive_failures} consecutive failures; "
        f"last: occurrence {occurrence.pk}: {detail}"
    )
    pause_schedule(schedule.pk, note=note, by=SYSTEM_USER, user=SYSTEM)
    logger.warning(
        note, extra={"action": "schedule.paused_after_failures", "schedule_id": str(schedule.pk)}
    )


def archive_if_done(occurrence: Any, state: str, now: Any, loaded: Any = None) -> None:
    """A one-time schedule with ``archive_on_completion`` is archived once its run ended."""
    if loaded is not None and (not loaded.archive_on_completion or loaded.kind != "once"):
        return  # never archived: no need to read it again
    schedule = Schedule.objects.filter(pk=occurrence.schedule_id).first()
    if (
        schedule is None
        or not schedule.archive_on_completion
        or schedule.kind != "once"
        or schedule.archived_at is not None
        or schedule.status != ScheduleStatus.COMPLETED
    ):
        return
    if Occurrence.objects.filter(schedule=schedule, state__in=OPEN_STATES).exists():
        return  # a retry or another attempt is still to come
    Schedule.objects.filter(pk=schedule.pk, archived_at__isnull=True).update(archived_at=now)
    logger.info(
        "one-time schedule archived",
        extra={"action": "schedule.archived", "schedule_id": str(schedule.pk), "state": state},
    )


def connect() -> None:
    """Connect the receivers (once: ``dispatch_uid``); called by ``AppConfig.ready()``."""
    events.occurrence_finished.connect(
        on_occurrence_finished, dispatch_uid="scheduler_app.monitoring.finished"
    )
    events.duplicate_prevented.connect(
        on_duplicate_prevented, dispatch_uid="scheduler_app.monitoring.duplicates"
    )
