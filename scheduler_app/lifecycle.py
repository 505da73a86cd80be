"""Occurrence transitions made by workers and the reconciler.

Every transition is a compare-and-set on the old state (and, once running, on the fencing
token), so a late or duplicate actor cannot overwrite a newer result. Transitions that end
an occurrence take the schedule's row lock first (the same order as the beat) and release
the next buffered occurrence in the same transaction.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from uuid import UUID

from django.db import transaction
from django.db.models import F

from scheduler_app import events
from scheduler_app.definitions import timing_for
from scheduler_app.models import (
    ACTIVE_STATES,
    AttemptKind,
    IntervalMode,
    Occurrence,
    OccurrenceAttempt,
    OccurrenceState,
    Schedule,
    ScheduleStatus,
)
from scheduler_app.permissions import may_run, pause_owned_schedules, refusal

logger = logging.getLogger("scheduler_app.lifecycle")

CLAIMABLE = (OccurrenceState.PENDING, OccurrenceState.DISPATCHED, OccurrenceState.RETRYING)
EARLY = timedelta(seconds=1)


@dataclass(frozen=True)
class Claim:
    """The result of a worker's attempt to start an occurrence."""

    claimed: bool
    reason: str = ""
    token: int = 0
    attempt: int = 0
    occurrence: Occurrence | None = None


def claim(
    occurrence_id: UUID | str,
    *,
    owner: str,
    now: datetime,
    lease: timedelta,
    task: str | None = None,
) -> Claim:
    """``pending/dispatched/retrying -> running``, or why not (duplicate, cancelled, expired,
    forbidden, another task's occurrence).

    ``task`` is the name of the task the message was delivered to: an occurrence of another
    task is never run by it (a forged or misrouted message), and is left as it is.
    """
    occurrence = (
        Occurrence.objects.select_related("schedule", "schedule__owner", "schedule_version")
        .filter(pk=occurrence_id)
        .first()
    )
    if occurrence is None:
        return Claim(False, "unknown_occurrence")
    if task is not None and occurrence.task != task:
        return Claim(False, "task_mismatch")
    if occurrence.state not in CLAIMABLE:
        return Claim(False, f"already_{occurrence.state}", occurrence=occurrence)
    if occurrence.state == OccurrenceState.RETRYING and now + EARLY < occurrence.not_before:
        return Claim(
            False, "retry_not_due", occurrence=occurrence
        )  # an old delivery; the retry's own message follows
    if occurrence.cancel_requested_at is not None:
        # Asked to stop before it started (``cancel_previous`` or an operator) and the revoke
        # did not reach the worker: never start it, let the newer one go.
        end(occurrence, OccurrenceState.CANCELLED, "cancel_requested", now, from_states=CLAIMABLE)
        return Claim(False, "cancel_requested")
    if occurrence.deadline_at is not None and now >= occurrence.deadline_at:
        end(occurrence, OccurrenceState.EXPIRED, "deadline_passed", now, from_states=CLAIMABLE)
        return Claim(False, "expired")
    if not may_run(occurrence.schedule):
        why = refusal(occurrence.schedule)
        end(occurrence, OccurrenceState.FAILED, "forbidden", now, from_states=CLAIMABLE, error=why)
        person = occurrence.schedule.owner
        if person is not None and not person.is_active:
            pause_owned_schedules(person, f"paused: {why}", now)
        return Claim(False, "forbidden")
    token = occurrence.fencing_token + 1
    with transaction.atomic():
        won = Occurrence.objects.filter(
            pk=occurrence.pk, state__in=CLAIMABLE, fencing_token=occurrence.fencing_token
        ).update(
            state=OccurrenceState.RUNNING,
            fencing_token=token,
            attempts=F("attempts") + 1,
            lease_owner=owner,
            lease_expires_at=now + lease,
            started_at=now,
        )
        if not won:
            return Claim(False, "claimed_by_another", occurrence=occurrence)
        OccurrenceAttempt.objects.create(
            occurrence_id=occurrence.pk,
            kind=AttemptKind.RUN,
            number=occurrence.attempts + 1,
            worker=owner[:200],
            started_at=now,
        )
    return Claim(True, "", token, occurrence.attempts + 1, occurrence)


def close_attempt(occurrence_id: UUID | str, now: datetime, outcome: str, error: str = "") -> int:
    """Finish the open run attempt of an occurrence (the one its last claim wrote)."""
    return OccurrenceAttempt.objects.filter(
        occurrence_id=occurrence_id, kind=AttemptKind.RUN, finished_at__isnull=True
    ).update(finished_at=now, outcome=outcome, error=error[:4000])


TERMINAL_STATES = frozenset(
    {
        OccurrenceState.SUCCEEDED,
        OccurrenceState.FAILED,
        OccurrenceState.EXPIRED,
        OccurrenceState.SKIPPED,
        OccurrenceState.CANCELLED,
    }
)


def announce_finished(occurrences: list[Occurrence], state: str, reason: str) -> None:
    """Send ``events.occurrence_finished`` for each row once the current transaction commits
    (at once outside one): receivers never see a write that was rolled back."""
    if not occurrences or state not in TERMINAL_STATES:
        return

    def send() -> None:
        for occurrence in occurrences:
            events.occurrence_finished.send(
                sender=Occurrence, occurrence=occurrence, state=state, reason=reason
            )

    transaction.on_commit(send)


def heartbeat(occurrence_id: UUID | str, *, token: int, now: datetime, lease: timedelta) -> bool:
    """Extend the lease of a running attempt; False when the attempt lost its lease."""
    return bool(
        Occurrence.objects.filter(
            pk=occurrence_id, state=OccurrenceState.RUNNING, fencing_token=token
        ).update(lease_expires_at=now + lease)
    )


def finish(
    occurrence_id: UUID | str,
    *,
    token: int,
    state: str,
    reason: str,
    now: datetime,
    error: str = "",
) -> bool:
    """End a running attempt (succeeded, failed, cancelled, expired), if it still holds it."""
    occurrence = Occurrence.objects.filter(pk=occurrence_id).first()
    if occurrence is None:
        return False
    return end(
        occurrence,
        state,
        reason,
        now,
        from_states=(OccurrenceState.RUNNING,),
        token=token,
        error=error,
    )


def retry_later(
    occurrence_id: UUID | str, *, token: int, at: datetime, now: datetime, error: str
) -> bool:
    """``running -> retrying`` until ``at``; the same occurrence, key and slot, a new attempt."""
    with transaction.atomic():
        moved = Occurrence.objects.filter(
            pk=occurrence_id, state=OccurrenceState.RUNNING, fencing_token=token
        ).update(
            state=OccurrenceState.RETRYING,
            not_before=at,
            reason="retry",
            last_error=error[:4000],
            lease_expires_at=None,
            dispatched_at=None,  # back in the outbox: the beat publishes it with eta=at
            publish_lease_until=None,
        )
        if moved:
            close_attempt(occurrence_id, now, "retrying", error)
    return bool(moved)


def end(
    occurrence: Occurrence,
    state: str,
    reason: str,
    now: datetime,
    *,
    from_states: tuple[str, ...],
    token: int | None = None,
    error: str = "",
) -> bool:
    """Move ``occurrence`` to a final ``state`` (CAS) and release the next buffered one."""
    with transaction.atomic():
        schedule = Schedule.objects.select_for_update().get(pk=occurrence.schedule_id)
        rows = Occurrence.objects.filter(pk=occurrence.pk, state__in=from_states)
        if token is not None:
            rows = rows.filter(fencing_token=token)
        changes: dict[str, object] = {"state": state, "reason": reason, "finished_at": now}
        if error:
            changes["last_error"] = error[:4000]
        if not rows.update(**changes, lease_expires_at=None):
            return False
        close_attempt(occurrence.pk, now, state, error)
        release_next(schedule, now)
        _after_fixed_delay_run(schedule, now)
        occurrence.state, occurrence.reason, occurrence.finished_at = state, reason, now
        announce_finished([occurrence], state, reason)
    logger.info(
        "occurrence ended",
        extra={
            "action": f"occurrence.{state}",
            "occurrence_id": str(occurrence.pk),
            "schedule_id": str(occurrence.schedule_id),
            "reason": reason,
        },
    )
    return True


def release_next(schedule: Schedule, now: datetime) -> Occurrence | None:
    """Start the oldest buffered occurrence when nothing of the schedule is active.

    Call with the schedule's row lock held.
    """
    occurrences = Occurrence.objects.filter(schedule=schedule)
    if occurrences.filter(state__in=ACTIVE_STATES).exists():
        return None
    waiting = occurrences.filter(state=OccurrenceState.BUFFERED).order_by("scheduled_for").first()
    if waiting is None:
        return None
    Occurrence.objects.filter(pk=waiting.pk, state=OccurrenceState.BUFFERED).update(
        state=OccurrenceState.PENDING, reason="released"
    )
    return waiting


def _after_fixed_delay_run(schedule: Schedule, now: datetime) -> None:
    """``fixed_delay`` intervals: the next slot is this completion plus the interval."""
    if schedule.interval_mode != IntervalMode.FIXED_DELAY:
        return
    if schedule.status != ScheduleStatus.ACTIVE or schedule.next_run_at is not None:
        return
    schedule.next_run_at = next_fixed_delay_slot(schedule, now)
    if schedule.next_run_at is None:
        schedule.status = ScheduleStatus.COMPLETED
    schedule.updated_at = now
    schedule.save(update_fields=["next_run_at", "status", "updated_at"])


def next_fixed_delay_slot(schedule: Schedule, finished_at: datetime) -> datetime | None:
    """Completion + N, moved into the active window, within starts_at / ends_at / max_count.

    N counts from the slot instead when the completion reads earlier than the slot (the
    clock stepped back, or the worker's clock is behind the beat's): slots only move forward.
    """
    since = finished_at
    if schedule.last_scheduled_for is not None:
        since = max(since, schedule.last_scheduled_for)
    candidate = since + timedelta(seconds=int(schedule.rule))
    if schedule.starts_at is not None:
        candidate = max(candidate, schedule.starts_at)
    window = timing_for(schedule).window
    if window is not None:
        zone = timing_for(schedule).zone
        wall = candidate.astimezone(zone).replace(tzinfo=None)
        if not window.contains(wall):
            candidate = window.next_opening(wall).replace(tzinfo=zone).astimezone(UTC)
    if schedule.ends_at is not None and candidate > schedule.ends_at:
        return None
    if schedule.max_count is not None and schedule.occurrence_count >= schedule.max_count:
        return None
    return candidate


def cancellation_requested(occurrence_id: UUID | str) -> bool:
    """True when an operator or ``cancel_previous`` asked this occurrence to stop."""
    return Occurrence.objects.filter(pk=occurrence_id, cancel_requested_at__isnull=False).exists()
