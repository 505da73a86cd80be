"""Turning due schedules into occurrences: claim, decide, insert, advance, in one transaction."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import lru_cache
from time import monotonic
from typing import Any
from uuid import UUID

from django.db import DatabaseError, DataError, IntegrityError, transaction

from scheduler_app.conf import get_settings
from scheduler_app.db.rows import new_row
from scheduler_app.definition.schedule import (
    idempotency_key,
    jitter_for,
    misfire_rules,
    occurrence_id,
    timing_for,
)
from scheduler_app.dispatch.bulk import insert_occurrences, save_advanced
from scheduler_app.dispatch.claim import attach, claim_due, version_of
from scheduler_app.dispatch.due import Due, Walks, due_walk
from scheduler_app.dispatch.overlapping import apply_overlap
from scheduler_app.models import (
    IntervalMode,
    Occurrence,
    OccurrenceState,
    Schedule,
    ScheduleMode,
    ScheduleStatus,
    ScheduleVersion,
    Trigger,
)
from scheduler_app.partitions.ddl import moved_partition
from scheduler_app.policies.misfire import MisfireDecision, PlannedSlot, decide_misfire
from scheduler_app.timing import Kind, Timing, next_after, previous_slot

logger = logging.getLogger("scheduler_app.materialize")


@dataclass(frozen=True)
class BatchResult:
    claimed: int
    created: int
    fresh: list[Occurrence] = field(default_factory=list)
    """The outbox rows this batch really inserted, leased to this beat (``lease``) and loaded
    with their schedule and version: the caller publishes them from memory after commit,
    without reading them back through the outbox claim."""


Revoker = Callable[[list[str]], None]


def materialize_batch(
    now: datetime,
    batch_size: int,
    revoke: Revoker | None = None,
    *,
    lease_until: datetime | None = None,
) -> BatchResult:
    """Claim up to ``batch_size`` due schedules (SKIP LOCKED) and materialize their slots.

    ``revoke`` is called after commit with the ids of running occurrences that a
    ``cancel_previous`` schedule asked to stop. With ``lease_until``, the new outbox rows are
    inserted with that ``publish_lease_until`` (no other beat's outbox claim takes them until
    it runs out) and returned in ``fresh`` for this beat to publish; if it dies
    first, the outbox publishes them once the lease has run out, as after any crash.
    """
    with transaction.atomic():
        schedules = claim_due(now, batch_size)
        if not schedules:
            return BatchResult(0, 0)
        config = get_settings()  # read once per batch, not once per schedule
        planned = _plan_within_budget(
            schedules,
            now,
            config.MAX_SLOTS_PER_TICK,
            config.MAX_ROWS_PER_BATCH,
            config.PLAN_SECONDS_PER_BATCH,
        )
        schedules = [schedule for schedule in schedules if schedule.id in planned]
        schedules = _park_without_version(schedules, planned, now)
        to_stop = apply_overlap(schedules, planned, now)
        rows = [row for group in planned.values() for row in group]
        leased = _lease(rows, lease_until)
        fresh: list[Occurrence] = []
        try:
            with transaction.atomic():  # a savepoint: a refused row must not stall the batch
                inserted = insert_occurrences(rows)
                save_advanced(schedules)
                _save_parked(schedules)
            fresh = [row for row in leased if row.id in inserted]
            attach(fresh, schedules)
        except ROW_ERRORS as exc:
            logger.warning(
                "batch refused by the database; materializing it schedule by schedule",
                extra={"action": "materialize.batch_refused", "error": repr(exc)},
            )
            for row in leased:  # left to the outbox: the refused batch is rare
                row.publish_lease_until = None
            rows = _one_by_one(schedules, planned, now)
        if to_stop and revoke is not None:
            transaction.on_commit(lambda: revoke(to_stop))
    # ``created`` counts the rows planned, a conflicting one included (as ``bulk_create``
    # with ``ignore_conflicts`` always did): the concurrency tests sum it to prove that no
    # schedule was planned twice.
    return BatchResult(len(schedules), len(rows), fresh)


def _lease(rows: list[Occurrence], until: datetime | None) -> list[Occurrence]:
    """Lease the new outbox rows (pending, not buffered or skipped) to this beat."""
    if until is None:
        return []
    leased = [row for row in rows if row.state == OccurrenceState.PENDING]
    for row in leased:
        row.publish_lease_until = until
    return leased


def _plan_within_budget(
    schedules: list[Schedule], now: datetime, cap: int, budget: int, seconds: float
) -> dict[UUID, list[Occurrence]]:
    """Plan schedules in due order until ``budget`` rows are planned or ``seconds`` have
    passed (the first schedule always is planned, so every batch makes progress).

    The claim holds these schedules' row locks while they are planned: the time bound keeps
    rules that are slow to evaluate (each bounded by the search budget) from holding them, and
    the database's writers, for longer than ``PLAN_SECONDS_PER_BATCH``. The schedules left
    out are not advanced and stay due for the next batch."""
    planned: dict[UUID, list[Occurrence]] = {}
    walks: Walks = {}  # schedules that share a rule, a zone and a due slot share one walk
    started = monotonic()
    for schedule in schedules:
        if planned and (budget <= 0 or monotonic() - started >= seconds):
            break
        planned[schedule.id] = plan_schedule(schedule, now, cap=cap, walks=walks)
        budget -= len(planned[schedule.id])
    return planned


def _one_by_one(
    schedules: list[Schedule], planned: dict[UUID, list[Occurrence]], now: datetime
) -> list[Occurrence]:
    """Each schedule in its own savepoint; one the database refuses is parked as stored
    (not advanced: its slots are still due when it is resumed), the others go on. A row
    refused for a partition attached under it (``moved_partition``) parks nothing: that
    schedule is left as stored, due on the next tick."""
    kept: list[Occurrence] = []
    for schedule in schedules:
        try:
            with transaction.atomic():
                insert_occurrences(planned[schedule.id])
                save_advanced([schedule])
        except ROW_ERRORS as exc:
            if moved_partition(exc):
                logger.warning(
                    "a new partition was attached under this schedule's insert: it stays due",
                    extra={"action": "materialize.partition_race", "schedule_id": schedule.pk},
                )
                continue
            stored = Schedule.objects.get(pk=schedule.pk)
            park(stored, exc, now)
            stored.save(
                update_fields=["status", "last_error", "paused_by", "pause_note", "updated_at"]
            )
            continue
        kept.extend(planned[schedule.id])
    return kept


def plan_schedule(
    schedule: Schedule, now: datetime, *, cap: int | None = None, walks: Walks | None = None
) -> list[Occurrence]:
    """Decide this schedule's due slots, advance its fields in memory, return the new rows.

    ``cap`` is ``MAX_SLOTS_PER_TICK`` (read from the settings when not given); ``walks``: the
    batch's due walks so far (``due.due_walk``).
    """
    try:
        timing = timing_for(schedule)
        if schedule.interval_mode == IntervalMode.FIXED_DELAY:
            return _plan_fixed_delay(schedule, timing, now)
        due = due_walk(schedule, timing, now, cap, walks)
        slots = due.slots
        decision = decide_misfire(slots, now, misfire_rules(schedule), uncounted_late=due.uncounted)
        rows = build_occurrences(schedule, timing, slots, decision, now)
        advance(schedule, timing, slots, decision, now, due=due)
    except Exception as exc:
        # A definition that no longer evaluates (a zone gone from tzdata, a date out of
        # range, a row written past the service layer): park this schedule visibly instead
        # of failing the whole batch. Database errors are not this schedule's: they go up.
        if isinstance(exc, DatabaseError):
            raise
        park(schedule, exc, now)
        return []
    return rows


def _plan_fixed_delay(schedule: Schedule, timing: Timing, now: datetime) -> list[Occurrence]:
    """One slot at a time; the next one is set when this one finishes (``lifecycle.end``)."""
    slot = schedule.next_run_at
    if slot is None:
        return []
    decision = MisfireDecision(emit=(PlannedSlot(slot, False),), late=0, skipped=0)
    rows = build_occurrences(schedule, timing, [slot], decision, now)
    schedule.last_scheduled_for = slot
    schedule.occurrence_count += 1
    schedule.next_run_at = None
    if schedule.mode == ScheduleMode.SHADOW:  # nothing will finish: keep the cadence here
        schedule.next_run_at = now + timedelta(seconds=int(schedule.rule))
    schedule.updated_at = now
    return rows


def _park_without_version(
    schedules: list[Schedule], planned: dict[UUID, list[Occurrence]], now: datetime
) -> list[Schedule]:
    """A schedule whose current version row is missing (deleted past the services) would
    fail the whole batch at commit (the deferred foreign key): park it, as stored, instead.
    The claim read each schedule's version id (``current_version_id``): no query unless a
    version is missing.

    On PostgreSQL the claim can also miss a row that is there: an edit committed after the
    claim's snapshot and before it locked the schedule hands the claim the edited row (its
    new version number) while the version lookup still sees the snapshot. The row, read
    again under the lock, then finds its version: that schedule is left as stored, due, for
    the next tick to plan under the new version (never parked for an edit)."""
    if all(
        getattr(schedule, "current_version_id", None) is not None or not planned[schedule.id]
        for schedule in schedules
    ):
        return schedules
    kept: list[Schedule] = []
    for schedule in schedules:
        if getattr(schedule, "current_version_id", None) is not None or not planned[schedule.id]:
            kept.append(schedule)
            continue
        stored = Schedule.objects.get(pk=schedule.pk)  # not advanced: its slots stay due
        planned[stored.id] = []
        if not ScheduleVersion.objects.filter(schedule=stored, version=stored.version).exists():
            park(stored, LookupError(f"its version {stored.version} row is missing"), now)
        kept.append(stored)
    return kept


def _save_parked(schedules: list[Schedule]) -> None:
    """The pause note of schedules parked by this batch (rare: not among the advanced fields
    every burst writes)."""
    for schedule in schedules:
        if getattr(schedule, "parked_now", False):
            schedule.save(update_fields=["paused_by", "pause_note"])


ROW_ERRORS = (IntegrityError, DataError, TypeError, ValueError)
"""What one schedule's rows can raise on insert (a value the column or the JSON encoder
refuses): that schedule is parked, the others go on."""


def park(schedule: Schedule, error: Exception, now: datetime) -> None:
    """Park ``schedule`` in memory; the batch saves it with its advanced fields."""
    schedule.park(error, now)
    schedule.parked_now = True  # type: ignore[attr-defined]


def build_occurrences(
    schedule: Schedule,
    timing: Timing,
    slots: list[datetime],
    decision: MisfireDecision,
    now: datetime,
) -> list[Occurrence]:
    previous = _previous_slots(schedule, timing, slots)
    rows = []
    for planned in decision.emit:
        slot = planned.scheduled_for
        key = idempotency_key(schedule.id, slot)
        rows.append(
            new_row(
                Occurrence,
                **occurrence_fields(schedule, key, slot, now),
                trigger=Trigger.CATCH_UP if planned.catch_up else Trigger.SCHEDULED,
                window_start=_window_start(schedule, timing, slot, previous),
                not_before=slot + jitter_for(key, schedule.jitter),
                deadline_at=slot + timedelta(seconds=schedule.deadline)
                if schedule.deadline is not None
                else None,
            )
        )
    return rows


def occurrence_fields(
    schedule: Schedule, key: str, slot: datetime, now: datetime
) -> dict[str, Any]:
    """What every occurrence of ``schedule`` for ``slot`` holds, whatever its trigger: its
    ids, the slot (also the window's end), the schedule's current version, task, payload,
    target and zone, and its state: ``pending``, or ``skipped`` (``shadow``) for a shadow
    schedule, which runs nothing."""
    shadow = schedule.mode == ScheduleMode.SHADOW
    return {
        "id": occurrence_id(key),
        "schedule_id": schedule.pk,
        "schedule_version_id": version_of(schedule),
        "scheduled_for": slot,
        "window_end": slot,
        "timezone": schedule.timezone,
        "idempotency_key": key,
        "task": schedule.task,
        "args": schedule.args,
        "target": schedule.target,
        "kwargs": schedule.kwargs,
        "state": OccurrenceState.SKIPPED if shadow else OccurrenceState.PENDING,
        "reason": "shadow" if shadow else "",
        "created_at": now,
    }


def _window_start(
    schedule: Schedule, timing: Timing, slot: datetime, previous: dict[datetime, datetime | None]
) -> datetime:
    """The previous slot; for a one-time run its anchor when set (a debounce burst's first
    call), else the slot itself. Never after the slot (an empty window instead)."""
    if timing.kind is Kind.ONCE:
        anchor = schedule.anchor
        return anchor if anchor is not None and anchor <= slot else slot
    start = previous.get(slot) or slot
    return min(start, slot)


def _previous_slots(
    schedule: Schedule, timing: Timing, slots: list[datetime]
) -> dict[datetime, datetime | None]:
    """Map each slot to the slot before it (the start of its business window)."""
    if not slots or timing.kind is Kind.ONCE:
        return {}
    first = slots[0]
    if first == schedule.next_run_at and schedule.last_scheduled_for is not None:
        before_first: datetime | None = schedule.last_scheduled_for
    else:
        before_first = _slot_before(timing, first)
    previous = {first: before_first}
    previous.update(zip(slots[1:], slots[:-1], strict=True))
    return previous


@lru_cache(maxsize=4096)
def _slot_before(timing: Timing, slot: datetime) -> datetime | None:
    """``previous_slot`` of a slot, remembered: a schedule that never ran has no
    ``last_scheduled_for`` to take it from, and a burst is mostly schedules that share a rule,
    a zone and a due slot (the search walks back span after span for calendar rules; both
    arguments are immutable values, so the answer never changes)."""
    return previous_slot(timing, slot, inclusive=False)


def advance(
    schedule: Schedule,
    timing: Timing,
    slots: list[datetime],
    decision: MisfireDecision,
    now: datetime,
    *,
    due: Due | None = None,
) -> None:
    """Move ``next_run_at`` past ``now`` and update the counters (in memory).

    ``due`` is the walk that found ``slots``: it met the next slot after ``now`` already.
    """
    if slots:
        schedule.last_scheduled_for = slots[-1]
    schedule.missed_count += decision.late
    schedule.skipped_count += decision.skipped
    schedule.caught_up_count += decision.caught_up
    schedule.occurrence_count += len(decision.emit)
    instant = max(now, schedule.last_scheduled_for or now)
    if due is not None and due.knows_following and instant == now:
        schedule.next_run_at = due.following
    else:
        schedule.next_run_at = next_after(timing, instant)
    if schedule.next_run_at is None:
        schedule.status = ScheduleStatus.COMPLETED
    schedule.updated_at = now
    if decision.skipped:
        logger.info(
            "late slots skipped",
            extra={
                "action": "misfire.skipped",
                "schedule_id": str(schedule.id),
                "count": decision.skipped,
                "policy": schedule.misfire_policy,
            },
        )
