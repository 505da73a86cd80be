"""The reconciler: finds occurrences whose worker died, whose deadline passed, or whose retry
message was lost, and moves them on. Run by the beat on a slow cadence and by
``manage.py reconcile_occurrences``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from uuid import UUID

from django.db import DataError, transaction
from django.db.models import Q

from scheduler_app.conf import get_settings
from scheduler_app.db.locking import update_in_order
from scheduler_app.errors import SchedulerError, storable_error
from scheduler_app.models import (
    ACTIVE_STATES,
    HandoffTarget,
    Occurrence,
    OccurrenceState,
    OverlapPolicy,
    PauseBehaviour,
    Schedule,
    ScheduleRuntime,
    ScheduleStatus,
)
from scheduler_app.models.core import parked_values
from scheduler_app.worker.lifecycle import close_attempt, end, release_next
from scheduler_app.worker.receiving import republish_lost_receipts

logger = logging.getLogger("scheduler_app.reconcile")
BATCH = 500
WAITING = (OccurrenceState.PENDING, OccurrenceState.DISPATCHED, OccurrenceState.RETRYING)


@dataclass(frozen=True)
class ReconcileReport:
    lost: int = 0
    requeued: int = 0
    expired: int = 0
    republished: int = 0
    released: int = 0

    @property
    def total(self) -> int:
        return self.lost + self.requeued + self.expired + self.republished + self.released


def reconcile(
    now: datetime,
    *,
    retry_grace: timedelta,
    dispatch_timeout: timedelta | None = None,
    max_publishes: int | None = None,
) -> ReconcileReport:
    """One pass over every kind of stuck occurrence (each step bounded to a batch)."""
    settings = get_settings()
    lost, requeued = _lost_workers(now)
    expired = _expired(now)
    never_started, republished = _never_started(
        now,
        dispatch_timeout or timedelta(seconds=settings.DISPATCH_TIMEOUT),
        max_publishes or settings.MAX_PUBLISHES,
    )
    receipts = republish_lost_receipts(now, BATCH)
    return ReconcileReport(
        lost=lost + never_started,
        requeued=requeued,
        expired=expired,
        republished=republished + receipts + _lost_retries(now, retry_grace),
        released=_stuck_cancellations(now) + _stranded_buffers(now),
    )


def _lost_workers(now: datetime) -> tuple[int, int]:
    """``running`` whose lease ran out: the worker died. Retry if allowed, else ``failed: lost``
    (``cancelled`` when it had been asked to stop: counted as lost)."""
    lost = requeued = 0
    stale = Occurrence.objects.filter(
        state=OccurrenceState.RUNNING, lease_expires_at__lt=now
    ).select_related("schedule")[:BATCH]
    for occurrence in stale:
        with parking(occurrence.schedule_id, now):
            one_lost, one_requeued = _lost_worker(occurrence, now)
            lost, requeued = lost + one_lost, requeued + one_requeued
    return lost, requeued


def _lost_worker(occurrence: Occurrence, now: datetime) -> tuple[int, int]:
    """(lost, requeued) for one running occurrence whose lease ran out."""
    deadline_ok = occurrence.deadline_at is None or now < occurrence.deadline_at
    if occurrence.cancel_requested_at is not None:
        # It was asked to stop anyway: do not run it again, let the next one start.
        why = ("cancel_requested", "the worker stopped heartbeating after it was asked to stop")
        return _end_running(occurrence, OccurrenceState.CANCELLED, *why, now), 0
    if stopped := _schedule_stopped(occurrence.schedule):
        # Cancelled (or paused with on_pause=cancel) while it ran: no new attempt.
        why = (stopped, "the worker stopped heartbeating; the schedule no longer runs")
        return _end_running(occurrence, OccurrenceState.CANCELLED, *why, now), 0
    if occurrence.attempts < occurrence.schedule.max_attempts and deadline_ok:
        return 0, _requeue(occurrence, now)
    why = ("lost", "the worker stopped heartbeating (killed or lost)")
    return _end_running(occurrence, OccurrenceState.FAILED, *why, now), 0


def _end_running(occurrence: Occurrence, state: str, reason: str, error: str, now: datetime) -> int:
    return int(
        end(
            occurrence,
            state,
            reason,
            now,
            from_states=(OccurrenceState.RUNNING,),
            token=occurrence.fencing_token,
            error=error,
        )
    )


def _schedule_stopped(schedule: Schedule) -> str:
    """The reason a lost run of ``schedule`` must not run again, or "" when it may."""
    if schedule.status == ScheduleStatus.CANCELLED:
        return "schedule_cancelled"
    if schedule.status == ScheduleStatus.PAUSED and schedule.on_pause == PauseBehaviour.CANCEL:
        return "paused"
    return ""


def _never_started(now: datetime, timeout: timedelta, max_publishes: int) -> tuple[int, int]:
    """``dispatched`` but never started (the broker lost the message, a worker dropped it):
    publish it again with the same task id, and after ``max_publishes`` tries end it
    ``failed: never_started`` so that it stops blocking its schedule's overlap policy."""
    failed = republished = 0
    # An event's handoff is the ledger itself (its delivery process reads it there): nothing
    # can lose it, and a backlog must not end it failed unsent.
    stale = Occurrence.objects.filter(
        state=OccurrenceState.DISPATCHED, dispatched_at__lt=now - timeout
    ).exclude(target=HandoffTarget.EVENT)[:BATCH]
    for occurrence in stale:
        with parking(occurrence.schedule_id, now):
            if occurrence.publish_count >= max_publishes:
                failed += end(
                    occurrence,
                    OccurrenceState.FAILED,
                    "never_started",
                    now,
                    from_states=(OccurrenceState.DISPATCHED,),
                    error=f"published {occurrence.publish_count} times, never started by a worker",
                )
            else:
                republished += Occurrence.objects.filter(
                    pk=occurrence.pk, state=OccurrenceState.DISPATCHED
                ).update(
                    state=OccurrenceState.PENDING, publish_lease_until=None, reason="republish"
                )
    return failed, republished


def _requeue(occurrence: Occurrence, now: datetime) -> int:
    """Back to the outbox for another attempt (same id, same key); the history stays.

    ``not_before`` stays as it was (passed): a lost run is due at once, not a deliberate
    delay. Stamped with the reconciler's "now", a clock stepped back afterwards would hold it
    back (an ``eta``, a ``not_due`` claim) for as long as the step."""
    error = "the worker stopped heartbeating (killed or lost); retrying"
    with transaction.atomic():
        moved = Occurrence.objects.filter(
            pk=occurrence.pk, state=OccurrenceState.RUNNING, fencing_token=occurrence.fencing_token
        ).update(
            state=OccurrenceState.PENDING,
            reason="lost_retry",
            last_error=error,
            lease_expires_at=None,
            publish_lease_until=None,
        )
        if moved:
            close_attempt(occurrence.pk, now, "lost", error, occurrence.scheduled_for)
    return moved


def _expired(now: datetime) -> int:
    """Not started before the deadline (waiting in the outbox, the broker, a retry or behind
    the overlap policy): ``expired``, never run late."""
    count = 0
    waiting = (*WAITING, OccurrenceState.BUFFERED)
    overdue = Occurrence.objects.filter(state__in=waiting, deadline_at__lte=now)[:BATCH]
    for occurrence in overdue:
        with parking(occurrence.schedule_id, now):
            count += end(
                occurrence, OccurrenceState.EXPIRED, "deadline_passed", now, from_states=waiting
            )
    return count


def _lost_retries(now: datetime, grace: timedelta) -> int:
    """``retrying`` long past its retry time: the retry message was lost; publish it again."""
    return update_in_order(
        Occurrence.objects.filter(
            state=OccurrenceState.RETRYING, dispatched_at__isnull=False, not_before__lt=now - grace
        ),
        dispatched_at=None,
        publish_lease_until=None,
    )


def _stuck_cancellations(now: datetime) -> int:
    """``cancel_previous``: start the waiting occurrence once every open one was asked to stop
    and had its grace period (the schedule's ``cancel_grace``)."""
    released = 0
    asked = (
        Occurrence.objects.filter(
            state__in=ACTIVE_STATES,
            cancel_requested_at__isnull=False,
            schedule__overlap_policy=OverlapPolicy.CANCEL_PREVIOUS,
        )
        .values_list("schedule_id", flat=True)
        .distinct()[:BATCH]
    )
    for schedule_id in set(asked):
        with parking(schedule_id, now):
            released += _release_after_grace(schedule_id, now)
    return released


def _stranded_buffers(now: datetime) -> int:
    """Buffered occurrences of a schedule with nothing active: the run they waited for ended
    but its release never committed (the worker ends a run in one statement and releases the
    next one in a second transaction; a worker killed between the two strands the queue, and
    new slots would only queue behind it). Release the oldest, as the worker would have."""
    active = Occurrence.objects.filter(state__in=ACTIVE_STATES).values("schedule_id")
    stranded = (
        Occurrence.objects.filter(state=OccurrenceState.BUFFERED)
        .exclude(schedule_id__in=active)
        .values_list("schedule_id", flat=True)
        .distinct()[:BATCH]
    )
    released = 0
    for schedule_id in set(stranded):
        with parking(schedule_id, now):  # in a transaction: the lock is held to its end
            locked = Schedule.objects.select_for_update().get(pk=schedule_id)
            released += release_next(locked, now) is not None
    return released


def _release_after_grace(schedule_id: UUID | str, now: datetime) -> int:
    with transaction.atomic():
        schedule = Schedule.objects.select_for_update().get(pk=schedule_id)
        if _within_grace(schedule, now):
            return 0
        waiting = (
            Occurrence.objects.filter(schedule=schedule, state=OccurrenceState.BUFFERED)
            .order_by("scheduled_for")
            .first()
        )
        if waiting is None:
            return 0
        return Occurrence.objects.filter(pk=waiting.pk, state=OccurrenceState.BUFFERED).update(
            state=OccurrenceState.PENDING, reason="released_after_grace"
        )


PARKED_ERRORS = (ArithmeticError, ValueError, TypeError, SchedulerError, DataError)
"""What a row the reconciler cannot process raises (a stored value out of range, say)."""


@contextmanager
def parking(schedule_id: UUID | str, now: datetime) -> Iterator[None]:
    """Run one schedule's step (every per-row step of the pass runs in one) in its own
    transaction (a savepoint inside another: its writes roll back with it, and a database
    error in it leaves the connection usable for the others). If its stored values make it
    fail, the error is kept and the pass carries on with the others: an active schedule is
    paused as the materializer parks one (``paused_by`` the scheduler, the error in
    ``last_error`` and the pause note); a paused, cancelled or completed one keeps its state
    and its operator's note, with the error in ``last_error``. An error raised after the step
    committed (a receiver run on its commit) is not the row's: it is logged, nothing parked."""
    committed = False
    try:
        with transaction.atomic():
            yield
            committed = True  # what raises from here on runs after the step's commit
    except PARKED_ERRORS as exc:
        if committed:
            logger.exception(
                "a callback run after a reconciled row committed raised",
                extra={"action": "reconcile.callback_failed", "schedule_id": str(schedule_id)},
            )
            return
        _park(schedule_id, exc, now)


def _park(schedule_id: UUID | str, error: Exception, now: datetime) -> None:
    why = storable_error(f"reconciler: {type(error).__name__}: {error}", 1000)
    paused = Schedule.objects.filter(pk=schedule_id, status=ScheduleStatus.ACTIVE).update(
        **parked_values(why), updated_at=now
    )
    if not paused:  # paused by someone, cancelled or completed: its state stays
        ScheduleRuntime.objects.filter(pk=schedule_id).update(last_error=why, updated_at=now)
    logger.error(
        "reconciler cannot process a schedule; paused"
        if paused
        else "reconciler cannot process a schedule; its error is recorded",
        extra={"action": "reconcile.parked", "schedule_id": str(schedule_id), "error": repr(error)},
    )


def _within_grace(schedule: Schedule, now: datetime) -> bool:
    """An open occurrence not asked to stop, or asked less than ``cancel_grace`` ago: wait.

    Each one gets its own grace: an older run that ignores the request must not cut short
    the grace of a newer one asked later.
    """
    asked_before = now - timedelta(seconds=int(schedule.cancel_grace))
    return (
        Occurrence.objects.filter(schedule=schedule, state__in=ACTIVE_STATES)
        .filter(Q(cancel_requested_at__isnull=True) | Q(cancel_requested_at__gte=asked_before))
        .exists()
    )


__all__ = ["ReconcileReport", "reconcile", "release_next"]
