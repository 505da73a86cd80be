"""The reconciler: finds occurrences whose worker died, whose deadline passed, or whose retry
message was lost, and moves them on. Run by the beat on a slow cadence and by
``manage.py reconcile_occurrences``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction

from scheduler_app.lifecycle import end, release_next
from scheduler_app.models import (
    Occurrence,
    OccurrenceState,
    OverlapPolicy,
    Schedule,
)

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


def reconcile(now: datetime, *, retry_grace: timedelta) -> ReconcileReport:
    """One pass over every kind of stuck occurrence (each step bounded to a batch)."""
    lost, requeued = _lost_workers(now)
    return ReconcileReport(
        lost=lost,
        requeued=requeued,
        expired=_expired(now),
        republished=_lost_retries(now, retry_grace),
        released=_stuck_cancellations(now),
    )


def _lost_workers(now: datetime) -> tuple[int, int]:
    """``running`` whose lease ran out: the worker died. Retry if allowed, else ``failed: lost``."""
    lost = requeued = 0
    stale = Occurrence.objects.filter(
        state=OccurrenceState.RUNNING, lease_expires_at__lt=now
    ).select_related("schedule")[:BATCH]
    for occurrence in stale:
        deadline_ok = occurrence.deadline_at is None or now < occurrence.deadline_at
        if occurrence.attempts < occurrence.schedule.max_attempts and deadline_ok:
            requeued += _requeue(occurrence, now)
        else:
            lost += end(
                occurrence,
                OccurrenceState.FAILED,
                "lost",
                now,
                from_states=(OccurrenceState.RUNNING,),
                token=occurrence.fencing_token,
                error="the worker stopped heartbeating (killed or lost)",
            )
    return lost, requeued


def _requeue(occurrence: Occurrence, now: datetime) -> int:
    """Back to the outbox for another attempt (same id, same key); the history stays."""
    return Occurrence.objects.filter(
        pk=occurrence.pk, state=OccurrenceState.RUNNING, fencing_token=occurrence.fencing_token
    ).update(
        state=OccurrenceState.PENDING,
        reason="lost_retry",
        last_error="the worker stopped heartbeating (killed or lost); retrying",
        lease_expires_at=None,
        publish_lease_until=None,
        not_before=now,
    )


def _expired(now: datetime) -> int:
    """Not started before the deadline: ``expired``, never run late."""
    count = 0
    overdue = Occurrence.objects.filter(state__in=WAITING, deadline_at__lte=now)[:BATCH]
    for occurrence in overdue:
        count += end(
            occurrence, OccurrenceState.EXPIRED, "deadline_passed", now, from_states=WAITING
        )
    return count


def _lost_retries(now: datetime, grace: timedelta) -> int:
    """``retrying`` long past its retry time: the retry message was lost; publish it again."""
    return Occurrence.objects.filter(
        state=OccurrenceState.RETRYING, dispatched_at__isnull=False, not_before__lt=now - grace
    ).update(dispatched_at=None, publish_lease_until=None)


def _stuck_cancellations(now: datetime) -> int:
    """``cancel_previous``: start the waiting occurrence once the old one had its grace period
    (the schedule's ``cancel_grace``)."""
    released = 0
    asked = Occurrence.objects.filter(
        state__in=(*WAITING, OccurrenceState.RUNNING),
        cancel_requested_at__isnull=False,
        schedule__overlap_policy=OverlapPolicy.CANCEL_PREVIOUS,
    ).values_list("schedule_id", "cancel_requested_at", "schedule__cancel_grace")[:BATCH]
    stuck = {
        schedule_id
        for schedule_id, asked_at, grace in asked
        if isinstance(asked_at, datetime) and asked_at + timedelta(seconds=int(grace)) < now
    }
    for schedule_id in stuck:
        with transaction.atomic():
            schedule = Schedule.objects.select_for_update().get(pk=schedule_id)
            waiting = (
                Occurrence.objects.filter(schedule=schedule, state=OccurrenceState.BUFFERED)
                .order_by("scheduled_for")
                .first()
            )
            if waiting is not None:
                released += Occurrence.objects.filter(
                    pk=waiting.pk, state=OccurrenceState.BUFFERED
                ).update(state=OccurrenceState.PENDING, reason="released_after_grace")
    return released


__all__ = ["ReconcileReport", "reconcile", "release_next"]
