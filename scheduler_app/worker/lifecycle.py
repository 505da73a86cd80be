"""Occurrence transitions made by workers and the reconciler.

Every transition is a compare-and-set on the old state (and, once running, on the fencing
token), so a late or duplicate actor cannot overwrite a newer result. Transitions that end
an occurrence take the schedule's row lock first (the same order as the beat) and release
the next buffered occurrence in the same transaction.

A statement keyed by an occurrence's id also names its slot (``scheduled_for``, the ledger's
partition key) whenever the caller knows it: from the row it read, or, for the claim, from
the message as a hint that is checked (a slot no row with that id has means "look by the id
alone").
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from django.db import transaction
from django.db.models import QuerySet

from scheduler_app import events
from scheduler_app.errors import storable_error
from scheduler_app.models import (
    ACTIVE_STATES,
    FINAL_STATES,
    AttemptKind,
    IntervalMode,
    Occurrence,
    OccurrenceAttempt,
    OccurrenceState,
    OverlapPolicy,
    Schedule,
)
from scheduler_app.worker import sql as worker_sql
from scheduler_app.worker.fixed_delay import after_fixed_delay_run

logger = logging.getLogger("scheduler_app.lifecycle")


def close_attempt(
    occurrence_id: UUID | str,
    now: datetime,
    outcome: str,
    error: str = "",
    scheduled_for: datetime | None = None,
) -> int:
    """Finish the open run attempt of an occurrence (the one its last claim wrote), looked up
    with its slot (the attempts' partition key) when the caller has it."""
    slot = {} if scheduled_for is None else {"scheduled_for": scheduled_for}
    return OccurrenceAttempt.objects.filter(
        occurrence_id=occurrence_id, kind=AttemptKind.RUN, finished_at__isnull=True, **slot
    ).update(finished_at=now, outcome=outcome, error=storable_error(error))


def announce_finished(
    occurrences: list[Occurrence], state: str, reason: str, *, schedule: Schedule | None = None
) -> None:
    """Send ``events.occurrence_finished`` for each row once the current transaction commits
    (at once outside one): receivers never see a write that was rolled back.

    ``schedule``: the schedule row as the write that ended them read it under its lock, when
    the sender has it; sent along (``schedule=``) so receivers need not read it again.
    """
    if not occurrences or state not in FINAL_STATES:
        return
    extra = {} if schedule is None else {"schedule": schedule}

    def send() -> None:
        for occurrence in occurrences:
            events.occurrence_finished.send(
                sender=Occurrence, occurrence=occurrence, state=state, reason=reason, **extra
            )

    transaction.on_commit(send)


def heartbeat(
    occurrence_id: UUID | str,
    *,
    token: int,
    now: datetime,
    lease: timedelta,
    scheduled_for: datetime | None = None,
) -> bool:
    """Extend the lease of a running attempt; False when the attempt lost its lease.

    ``scheduled_for``: the slot its claim read (the partition key), when the caller has it."""
    return bool(
        by_id(occurrence_id, scheduled_for)
        .filter(state=OccurrenceState.RUNNING, fencing_token=token)
        .update(lease_expires_at=now + lease)
    )


def by_id(occurrence_id: UUID | str, scheduled_for: datetime | None = None) -> QuerySet[Occurrence]:
    """The occurrence with this id, by its slot too when known (the ledger's partition key:
    one partition read instead of every partition's index)."""
    if scheduled_for is None:
        return Occurrence.objects.filter(pk=occurrence_id)
    return Occurrence.objects.filter(pk=occurrence_id, scheduled_for=scheduled_for)


def slot_of(occurrence: Occurrence) -> datetime | None:
    """The slot of a row as loaded, or None when it was not (a deferred field is never read
    just to name the partition)."""
    slot = occurrence.__dict__.get("scheduled_for")
    return slot if isinstance(slot, datetime) else None


def finish(
    occurrence_id: UUID | str,
    *,
    token: int,
    state: str,
    reason: str,
    now: datetime,
    error: str = "",
    claimed: Occurrence | None = None,
    result: Mapping[str, Any] | None = None,
    on_result_written: Callable[[], None] | None = None,
) -> bool:
    """End a running attempt (succeeded, failed, cancelled, expired), if it still holds it.

    ``claimed`` is the occurrence as its claim read it (with its schedule): on PostgreSQL,
    for a schedule that neither buffers nor runs at a fixed delay, the outcome is then one
    statement, which also writes ``result`` (the result backend's row, ``worker.results``)
    when given, and then calls ``on_result_written``. Elsewhere ``result`` is not written:
    the result backend writes its row itself.
    """
    if claimed is not None and _one_statement_finish(claimed):
        return _finish_in_one_statement(
            claimed,
            token=token,
            state=state,
            reason=reason,
            now=now,
            error=error,
            result=result,
            on_result_written=on_result_written,
        )
    occurrence = by_id(occurrence_id, slot_of(claimed) if claimed is not None else None).first()
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


BUFFERING = (OverlapPolicy.BUFFER_ONE, OverlapPolicy.BUFFER_ALL)


def _one_statement_finish(claimed: Occurrence) -> bool:
    """Schedules that buffer or run at a fixed delay keep the ORM path: releasing the next
    occurrence and computing the next slot need reads taken under the schedule's lock."""
    schedule = claimed.schedule
    return (
        worker_sql.available()
        and schedule.overlap_policy not in BUFFERING
        and schedule.interval_mode != IntervalMode.FIXED_DELAY
    )


def _finish_in_one_statement(
    claimed: Occurrence,
    *,
    token: int,
    state: str,
    reason: str,
    now: datetime,
    error: str,
    result: Mapping[str, Any] | None,
    on_result_written: Callable[[], None] | None,
) -> bool:
    ended = worker_sql.finish(
        str(claimed.pk),
        scheduled_for=claimed.scheduled_for,  # the row's, as its claim read it
        schedule_id=claimed.schedule_id,
        token=token,
        state=state,
        reason=reason,
        now=now,
        error=error,
        result=result,
    )
    if ended is None:
        return False
    if result is not None and on_result_written is not None:
        on_result_written()
    schedule = ended.schedule
    if ended.buffered or schedule.overlap_policy in BUFFERING:
        # Edited to a buffering policy while this ran, or rows left buffered by one: the
        # release needs a fresh read under the lock.
        with transaction.atomic():
            release_next(Schedule.objects.select_for_update().get(pk=schedule.pk), now)
    if schedule.interval_mode == IntervalMode.FIXED_DELAY:  # edited to it while this ran
        with transaction.atomic():
            after_fixed_delay_run(Schedule.objects.select_for_update().get(pk=schedule.pk), now)
    occurrence = ended.occurrence
    if "schedule_version" in claimed._state.fields_cache:
        occurrence.schedule_version = claimed.schedule_version
    announce_finished([occurrence], state, reason, schedule=schedule)
    _log_ended(occurrence, state, reason)
    return True


def retry_later(
    occurrence_id: UUID | str,
    *,
    token: int,
    at: datetime,
    now: datetime,
    error: str,
    scheduled_for: datetime | None = None,
) -> bool:
    """``running -> retrying`` until ``at``; the same occurrence, key and slot, a new attempt.

    ``scheduled_for``: the slot its claim read (the partition key), when the caller has it."""
    if worker_sql.available():
        return worker_sql.retry_later(
            str(occurrence_id),
            scheduled_for=scheduled_for,
            token=token,
            at=at,
            now=now,
            error=error,
        )
    with transaction.atomic():
        moved = (
            by_id(occurrence_id, scheduled_for)
            .filter(state=OccurrenceState.RUNNING, fencing_token=token)
            .update(
                state=OccurrenceState.RETRYING,
                not_before=at,
                reason="retry",
                last_error=storable_error(error),
                lease_expires_at=None,
                dispatched_at=None,  # back in the outbox: the beat publishes it with eta=at
                publish_lease_until=None,
            )
        )
        if moved:
            close_attempt(occurrence_id, now, "retrying", error, scheduled_for)
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
        rows = by_id(occurrence.pk, slot_of(occurrence)).filter(state__in=from_states)
        if token is not None:
            rows = rows.filter(fencing_token=token)
        changes: dict[str, object] = {"state": state, "reason": reason, "finished_at": now}
        if error or state == OccurrenceState.SUCCEEDED:
            # A success clears the error an earlier attempt left (its attempt row keeps it).
            changes["last_error"] = storable_error(error)
        if not rows.update(**changes, lease_expires_at=None):
            return False
        close_attempt(occurrence.pk, now, state, error, slot_of(occurrence))
        if state == OccurrenceState.SUCCEEDED:
            record_success(schedule, now)
        release_next(schedule, now)
        after_fixed_delay_run(schedule, now)
        occurrence.state, occurrence.reason, occurrence.finished_at = state, reason, now
        announce_finished([occurrence], state, reason)
    _log_ended(occurrence, state, reason)
    return True


def record_success(schedule: Schedule, at: datetime) -> None:
    """A success of ``schedule`` at ``at``: its ``last_success_at`` moves forward (the ORM
    path's write; the one-statement outcome does it in SQL). Call with its row lock held."""
    if schedule.note_success(at):
        Schedule.objects.filter(pk=schedule.pk).update(last_success_at=at)


def _log_ended(occurrence: Occurrence, state: str, reason: str) -> None:
    if not logger.isEnabledFor(logging.INFO):
        return
    logger.info(
        "occurrence ended",
        extra={
            "action": f"occurrence.{state}",
            "occurrence_id": str(occurrence.pk),
            "schedule_id": str(occurrence.schedule_id),
            "reason": reason,
        },
    )


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
    by_id(waiting.pk, slot_of(waiting)).filter(state=OccurrenceState.BUFFERED).update(
        state=OccurrenceState.PENDING, reason="released"
    )
    return waiting


def cancellation_requested(
    occurrence_id: UUID | str, scheduled_for: datetime | None = None
) -> bool:
    """True when an operator or ``cancel_previous`` asked this occurrence to stop.

    ``scheduled_for``: a hint (the partition key); when no row has it, the id alone decides."""
    asked = by_id(occurrence_id, scheduled_for).values_list("cancel_requested_at", flat=True)
    found = list(asked[:1])
    if not found and scheduled_for is not None:
        found = list(by_id(occurrence_id).values_list("cancel_requested_at", flat=True)[:1])
    return bool(found) and found[0] is not None
