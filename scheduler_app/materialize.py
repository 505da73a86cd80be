"""Turning due schedules into occurrences: claim, decide, insert, advance, in one transaction."""

from __future__ import annotations

import json
import logging
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache, lru_cache
from typing import Any
from uuid import UUID

from django.db import DataError, IntegrityError, connection, transaction
from django.db.models import Count, Field, JSONField, Min

from scheduler_app import events
from scheduler_app.conf import get_settings
from scheduler_app.definitions import (
    idempotency_key,
    jitter_for,
    misfire_rules,
    occurrence_id,
    timing_for,
    version_id,
)
from scheduler_app.errors import SchedulerError
from scheduler_app.lifecycle import announce_finished
from scheduler_app.locking import lock_in_order, update_in_order
from scheduler_app.models import (
    ACTIVE_STATES,
    IntervalMode,
    Occurrence,
    OccurrenceState,
    OverlapPolicy,
    Schedule,
    ScheduleMode,
    ScheduleStatus,
    Trigger,
)
from scheduler_app.overlap import decide_overlap
from scheduler_app.policies import MisfireDecision, PlannedSlot, decide_misfire
from scheduler_app.timing import Kind, Timing, iter_slots, next_after, previous_slot

logger = logging.getLogger("scheduler_app.materialize")
_TICK = timedelta(microseconds=1)

ADVANCE_FIELDS = [
    "next_run_at",
    "last_scheduled_for",
    "status",
    "missed_count",
    "skipped_count",
    "caught_up_count",
    "occurrence_count",
    "last_error",
    "updated_at",
]


@dataclass(frozen=True)
class BatchResult:
    claimed: int
    created: int


def earliest_due() -> datetime | None:
    """The earliest ``next_run_at`` of an active schedule (one indexed query)."""
    result = Schedule.objects.filter(status=ScheduleStatus.ACTIVE).aggregate(Min("next_run_at"))
    value: datetime | None = result["next_run_at__min"]
    return value


Revoker = Callable[[list[str]], None]


def materialize_batch(now: datetime, batch_size: int, revoke: Revoker | None = None) -> BatchResult:
    """Claim up to ``batch_size`` due schedules (SKIP LOCKED) and materialize their slots.

    ``revoke`` is called after commit with the ids of running occurrences that a
    ``cancel_previous`` schedule asked to stop.
    """
    with transaction.atomic():
        schedules = list(
            Schedule.objects.select_for_update(skip_locked=True)
            .filter(status=ScheduleStatus.ACTIVE, next_run_at__lte=now)
            .order_by("next_run_at")[:batch_size]
        )
        if not schedules:
            return BatchResult(0, 0)
        cap = get_settings().MAX_SLOTS_PER_TICK  # read once per batch, not once per schedule
        planned = {schedule.id: plan_schedule(schedule, now, cap=cap) for schedule in schedules}
        to_stop = apply_overlap(schedules, planned, now)
        rows = [row for group in planned.values() for row in group]
        try:
            with transaction.atomic():  # a savepoint: a refused row must not stall the batch
                insert_occurrences(rows)
                save_advanced(schedules)
        except (IntegrityError, DataError) as exc:
            logger.warning(
                "batch refused by the database; materializing it schedule by schedule",
                extra={"action": "materialize.batch_refused", "error": repr(exc)},
            )
            rows = _one_by_one(schedules, planned, now)
        if to_stop and revoke is not None:
            transaction.on_commit(lambda: revoke(to_stop))
    # ``created`` counts the rows planned, a conflicting one included (as ``bulk_create``
    # with ``ignore_conflicts`` always did): the concurrency tests sum it to prove that no
    # schedule was planned twice.
    return BatchResult(len(schedules), len(rows))


def _one_by_one(
    schedules: list[Schedule], planned: dict[UUID, list[Occurrence]], now: datetime
) -> list[Occurrence]:
    """Each schedule in its own savepoint; one the database refuses is parked as stored
    (not advanced: its slots are still due when it is resumed), the others go on."""
    kept: list[Occurrence] = []
    for schedule in schedules:
        try:
            with transaction.atomic():
                insert_occurrences(planned[schedule.id])
                save_advanced([schedule])
        except (IntegrityError, DataError) as exc:
            stored = Schedule.objects.get(pk=schedule.pk)
            park(stored, exc, now)
            stored.save(update_fields=["status", "last_error", "updated_at"])
            continue
        kept.extend(planned[schedule.id])
    return kept


def insert_occurrences(rows: Sequence[Occurrence]) -> set[UUID] | None:
    """Insert new occurrences; one that exists already (same id, idempotency key, or rule slot
    of the schedule) is left alone, as ``ON CONFLICT DO NOTHING`` does.

    On PostgreSQL one ``INSERT ... SELECT ... FROM unnest(...) ON CONFLICT DO NOTHING
    RETURNING id`` per 1,000 rows (``bulk_create`` prepares every value of every row in Python
    and sends a statement as long as the batch); returns the ids really inserted. Elsewhere
    ``bulk_create(ignore_conflicts=True)``, which cannot tell: returns None.
    """
    if not rows:
        return set() if connection.vendor == "postgresql" else None
    if connection.vendor != "postgresql":
        # One lookup tells the rows that exist already (ids are derived from the slot), so
        # that their duplicates can be reported; the insert still ignores any conflict.
        before = set(
            Occurrence.objects.filter(pk__in=[row.id for row in rows]).values_list("pk", flat=True)
        )
        Occurrence.objects.bulk_create(rows, ignore_conflicts=True, batch_size=1000)
        announce_inserted(rows, {row.id for row in rows} - before)
        return None
    inserted: set[UUID] = set()
    for start in range(0, len(rows), 1000):
        inserted.update(_insert_unnest(rows[start : start + 1000]))
    existing = len(rows) - len(inserted)
    if existing:
        logger.info(
            "occurrences existed already",
            extra={"action": "materialize.conflict", "count": existing},
        )
    announce_inserted(rows, inserted)
    return inserted


def announce_inserted(rows: Sequence[Occurrence], inserted: set[UUID]) -> None:
    """After commit: ``duplicate_prevented(kind="insert_conflict")`` for each slot whose row
    existed already, ``occurrence_finished`` for each new row born terminal (skipped by the
    overlap policy or by shadow mode)."""
    conflicts = [(str(row.schedule_id), str(row.id)) for row in rows if row.id not in inserted]
    if conflicts:

        def send() -> None:
            for schedule_id, occurrence_pk in conflicts:
                events.duplicate_prevented.send(
                    sender=None,
                    kind="insert_conflict",
                    schedule_id=schedule_id,
                    occurrence_id=occurrence_pk,
                )

        transaction.on_commit(send)
    born_skipped = [
        row for row in rows if row.id in inserted and row.state == OccurrenceState.SKIPPED
    ]
    for reason in sorted({row.reason for row in born_skipped}):
        group = [row for row in born_skipped if row.reason == reason]
        announce_finished(group, OccurrenceState.SKIPPED, reason)


def _insert_unnest(rows: Sequence[Occurrence]) -> list[UUID]:
    if not rows:
        return []
    columns = _unnest(_column_values(rows), key="id")
    names = ", ".join(f'"{field.column}"' for field, _ in _occurrence_columns())
    sql = (
        f'INSERT INTO "{Occurrence._meta.db_table}" ({names}) '
        f"SELECT {', '.join(columns.values)} FROM {columns.source} "
        "ON CONFLICT DO NOTHING RETURNING id"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, columns.params)
        return [row[0] for row in cursor.fetchall()]


@dataclass(frozen=True)
class _Unnested:
    values: list[str]
    """Per column, the SQL that gives a row's value: ``v."column"``, or a parameter."""
    source: str
    """``unnest(...) AS v(...)``."""
    params: list[Any]
    """The parameters in statement order: the single values first, then the arrays."""


def _unnest(columns: Iterable[tuple[str, str, list[Any]]], *, key: str) -> _Unnested:
    """Rows given column by column, as ``unnest`` of one array per column.

    A column with the same value in every row (a state, a counter, ``created_at``...) is sent
    as one parameter instead of an array: the arrays are what costs (psycopg quotes every
    element in Python). The ``key`` column is always an array, so there is always one.
    """
    values: list[str] = []
    singles: list[Any] = []
    arrays: list[list[Any]] = []
    specs: list[str] = []
    aliases: list[str] = []
    for column, sql_type, column_values in columns:
        first = column_values[0]
        if column != key and all(value == first for value in column_values):
            values.append(f"%s::{sql_type}")
            singles.append(first)
            continue
        values.append(f'v."{column}"')
        specs.append(f"%s::{sql_type}[]")
        aliases.append(f'"{column}"')
        arrays.append(column_values)
    source = f"unnest({', '.join(specs)}) AS v({', '.join(aliases)})"
    return _Unnested(values, source, [*singles, *arrays])


def _column_values(rows: Sequence[Occurrence]) -> Iterator[tuple[str, str, list[Any]]]:
    """(column, SQL type, the rows' values) for every column of the occurrence table."""
    for field, sql_type in _occurrence_columns():
        column_values = [getattr(row, field.attname) for row in rows]
        if isinstance(field, JSONField):
            column_values = [json.dumps(value, cls=field.encoder) for value in column_values]
        yield field.column, sql_type, column_values


@cache
def _occurrence_columns() -> list[tuple[Field[Any, Any], str]]:
    """Each concrete field of ``Occurrence`` with the PostgreSQL type its values are cast to."""
    return [(field, _cast_type(field)) for field in Occurrence._meta.concrete_fields]


def _cast_type(field: Field[Any, Any]) -> str:
    if isinstance(field, JSONField):
        return "jsonb"  # the values are sent as JSON text
    db_type = str(field.db_type(connection))
    # An explicit cast to varchar(n) would cut a longer value silently; a cast to text leaves
    # the length check to the column, which refuses it as an INSERT of the row would.
    return "text" if db_type.startswith("varchar") else db_type


_SQL_TYPES = {
    "next_run_at": "timestamptz",
    "last_scheduled_for": "timestamptz",
    "status": "text",
    "missed_count": "bigint",
    "skipped_count": "bigint",
    "caught_up_count": "bigint",
    "occurrence_count": "bigint",
    "last_error": "text",
    "updated_at": "timestamptz",
}


def save_advanced(schedules: list[Schedule]) -> None:
    """Write the advanced fields of a claimed batch in one statement.

    On PostgreSQL one ``UPDATE ... FROM unnest(...)`` (Django's ``bulk_update`` builds a
    CASE expression per field and row, the slowest part of a burst); elsewhere
    ``bulk_update``.
    """
    if connection.vendor != "postgresql":
        Schedule.objects.bulk_update(schedules, ADVANCE_FIELDS, batch_size=1000)
        return
    columns = [("id", "uuid", [schedule.pk for schedule in schedules])] + [
        (_column(name), _SQL_TYPES[name], [getattr(schedule, name) for schedule in schedules])
        for name in ADVANCE_FIELDS
    ]
    unnested = _unnest(columns, key="id")
    assignments = ", ".join(
        f'"{column}" = {value}'
        for (column, _, _), value in zip(columns[1:], unnested.values[1:], strict=True)
    )
    sql = (
        f'UPDATE "{Schedule._meta.db_table}" AS s SET {assignments} '
        f"FROM {unnested.source} WHERE s.id = v.id"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, unnested.params)


def _column(name: str) -> str:
    field = Schedule._meta.get_field(name)
    if not isinstance(field, Field):  # pragma: no cover - ADVANCE_FIELDS are concrete
        raise TypeError(f"{name} is not a concrete field")
    return field.column


def plan_schedule(schedule: Schedule, now: datetime, *, cap: int | None = None) -> list[Occurrence]:
    """Decide this schedule's due slots, advance its fields in memory, return the new rows.

    ``cap`` is ``MAX_SLOTS_PER_TICK`` (read from the settings when not given).
    """
    try:
        timing = timing_for(schedule)
        if schedule.interval_mode == IntervalMode.FIXED_DELAY:
            return _plan_fixed_delay(schedule, timing, now)
        due = _due(schedule, timing, now, cap)
        slots = due.slots
        decision = decide_misfire(slots, now, misfire_rules(schedule), uncounted_late=due.uncounted)
        rows = build_occurrences(schedule, timing, slots, decision, now)
        advance(schedule, timing, slots, decision, now, due=due)
    except (SchedulerError, ArithmeticError, ValueError) as exc:
        # A definition that no longer evaluates (a zone gone from tzdata, a date out of
        # range): park this schedule visibly instead of failing the whole batch.
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


def apply_overlap(
    schedules: list[Schedule], planned: dict[UUID, list[Occurrence]], now: datetime
) -> list[str]:
    """Set each new occurrence's state by its schedule's overlap policy (schedules locked).

    Returns the ids of open occurrences that ``cancel_previous`` asks to stop.
    """
    guarded = [
        s.id for s in schedules if s.overlap_policy != OverlapPolicy.ALLOW and _fresh(planned[s.id])
    ]
    counts = _open_counts(guarded)
    superseded: list[UUID] = []
    stopping: list[UUID] = []
    for schedule in schedules:
        fresh = _fresh(planned[schedule.id])
        if not fresh:
            continue
        open_rows = counts.get(schedule.id, _OpenCounts())
        decision = decide_overlap(
            schedule.overlap_policy,
            active=open_rows.active,
            buffered=open_rows.buffered,
            new=len(fresh),
            catching_up=open_rows.catch_up > 0,
            new_catch_up=sum(1 for row in fresh if row.trigger == Trigger.CATCH_UP),
        )
        for row, state in zip(fresh, decision.states, strict=True):
            row.state = state
            row.reason = "overlap" if state == OccurrenceState.SKIPPED else ""
        if decision.supersede_buffered:
            superseded.append(schedule.id)
        if decision.cancel_active:
            stopping.append(schedule.id)
    if superseded:
        waiting = Occurrence.objects.filter(
            schedule_id__in=superseded, state=OccurrenceState.BUFFERED
        )
        replaced = list(waiting.select_for_update().order_by("pk"))
        update_in_order(
            waiting, state=OccurrenceState.CANCELLED, reason="superseded", finished_at=now
        )
        announce_finished(replaced, OccurrenceState.CANCELLED, "superseded")
    return _request_stop(stopping, now)


def _fresh(rows: list[Occurrence]) -> list[Occurrence]:
    return [row for row in rows if row.state == OccurrenceState.PENDING]


@dataclass
class _OpenCounts:
    active: int = 0
    buffered: int = 0
    catch_up: int = 0
    """Open catch-up occurrences: the schedule is draining its backlog."""


def _open_counts(schedule_ids: list[UUID]) -> dict[UUID, _OpenCounts]:
    """Open occurrences per schedule, by kind, in one query."""
    if not schedule_ids:
        return {}
    counts: dict[UUID, _OpenCounts] = {}
    rows = (
        Occurrence.objects.filter(
            schedule_id__in=schedule_ids, state__in=(*ACTIVE_STATES, OccurrenceState.BUFFERED)
        )
        .values_list("schedule_id", "state", "trigger")
        .annotate(n=Count("id"))
    )
    for schedule_id, state, trigger, n in rows:
        found = counts.setdefault(schedule_id, _OpenCounts())
        if state == OccurrenceState.BUFFERED:
            found.buffered += n
        else:
            found.active += n
        found.catch_up += n if trigger == Trigger.CATCH_UP else 0
    return counts


def _request_stop(schedule_ids: list[UUID], now: datetime) -> list[str]:
    if not schedule_ids:
        return []
    running = Occurrence.objects.filter(
        schedule_id__in=schedule_ids, state__in=ACTIVE_STATES, cancel_requested_at__isnull=True
    )
    locked = lock_in_order(running)
    Occurrence.objects.filter(pk__in=locked).update(cancel_requested_at=now)
    return [str(pk) for pk in locked]


def park(schedule: Schedule, error: Exception, now: datetime) -> None:
    logger.error(
        "schedule cannot be evaluated; paused",
        extra={"action": "schedule.parked", "schedule_id": str(schedule.id), "error": repr(error)},
    )
    schedule.status = ScheduleStatus.PAUSED
    schedule.last_error = f"{type(error).__name__}: {error}"[:1000]
    schedule.updated_at = now


@dataclass(frozen=True)
class _Due:
    slots: list[datetime]
    uncounted: int
    following: datetime | None = None
    """The first slot after ``now`` (None: there is none), met where the walk stopped."""
    knows_following: bool = False
    """False when the walk did not start at or before ``now``: ``following`` says nothing."""


def due_slots(
    schedule: Schedule, timing: Timing, now: datetime, *, cap: int | None = None
) -> tuple[list[datetime], int]:
    """Slots from ``next_run_at`` through ``now``, oldest first.

    Slots older than the catch-up horizon are not listed one by one (after a long outage a
    dense rule may have millions): only the most recent of them is, and the rest are counted.
    ``cap`` is ``MAX_SLOTS_PER_TICK`` (read from the settings when not given).
    """
    due = _due(schedule, timing, now, cap)
    return due.slots, due.uncounted


def _due(schedule: Schedule, timing: Timing, now: datetime, cap: int | None) -> _Due:
    start = schedule.next_run_at
    if start is None:
        return _Due([], 0)
    horizon = timedelta(seconds=max(schedule.catch_up_window, schedule.max_lateness))
    cut = now - horizon
    if cap is None:
        cap = get_settings().MAX_SLOTS_PER_TICK
    if start > cut:
        return _recent(timing, start - _TICK, now, cap)
    older = 0
    for older, _ in enumerate(_until(iter_slots(timing, start - _TICK), cut), start=1):
        if older >= cap:
            break
    last_old = previous_slot(timing, cut) if older else None
    recent = _recent(timing, cut, now, cap)
    slots = ([last_old] if last_old is not None and last_old >= start else []) + recent.slots
    return _Due(
        slots,
        max(older - 1, 0) + recent.uncounted,
        recent.following,
        recent.knows_following,
    )


def _recent(timing: Timing, after: datetime, until: datetime, cap: int) -> _Due:
    """The last ``cap`` slots in (after, until], how many older ones were dropped, and the
    first slot after ``until`` (the walk has to look at it to stop)."""
    kept: deque[datetime] = deque(maxlen=cap)
    seen = 0
    following = None
    for slot in iter_slots(timing, after):
        if slot > until:
            following = slot
            break
        kept.append(slot)
        seen += 1
    return _Due(list(kept), seen - len(kept), following, knows_following=after <= until)


def _until(slots: Iterable[datetime], until: datetime) -> Iterator[datetime]:
    for slot in slots:
        if slot > until:
            return
        yield slot


def build_occurrences(
    schedule: Schedule,
    timing: Timing,
    slots: list[datetime],
    decision: MisfireDecision,
    now: datetime,
) -> list[Occurrence]:
    previous = _previous_slots(schedule, timing, slots)
    shadow = schedule.mode == ScheduleMode.SHADOW
    rows = []
    for planned in decision.emit:
        slot = planned.scheduled_for
        key = idempotency_key(schedule.id, slot)
        window_start = _window_start(schedule, timing, slot, previous)
        rows.append(
            Occurrence(
                id=occurrence_id(key),
                schedule_id=schedule.id,
                schedule_version_id=version_id(schedule.id, schedule.version),
                trigger=Trigger.CATCH_UP if planned.catch_up else Trigger.SCHEDULED,
                scheduled_for=slot,
                window_start=window_start,
                window_end=slot,
                timezone=schedule.timezone,
                idempotency_key=key,
                task=schedule.task,
                kwargs=schedule.kwargs,
                not_before=slot + jitter_for(key, schedule.jitter),
                deadline_at=slot + timedelta(seconds=schedule.deadline)
                if schedule.deadline is not None
                else None,
                state=OccurrenceState.SKIPPED if shadow else OccurrenceState.PENDING,
                reason="shadow" if shadow else "",
                created_at=now,
            )
        )
    return rows


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
    due: _Due | None = None,
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
