"""Backfill: the slots of a past range created as occurrences (``trigger = backfill``), planned
first (``BackfillPlan``: how many, how many exist already, what the overlap policy does), in
chunks, bounded (``SCHEDULER_BACKFILL_MAX`` needs a second confirmation,
``HARD_BACKFILL_LIMIT`` never). Used by the admin, the ``backfill`` command and the API.

Every function takes the acting ``user`` (``None``: the system, no checks). A user must
belong to the schedule's tenant (``scheduler_app.safety.tenancy``) and hold the permission the
action needs (``run_schedule``); otherwise ``TenantForbidden`` / ``OperatorPermissionDenied``
and nothing is written.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any
from uuid import UUID

from django.db import transaction

from scheduler_app.clock import Clock, SystemClock
from scheduler_app.conf import get_settings
from scheduler_app.definition.schedule import (
    idempotency_key,
    timing_for,
)
from scheduler_app.dispatch.bulk import insert_occurrences
from scheduler_app.dispatch.materialize import apply_overlap
from scheduler_app.errors import (
    ScheduleStateError,
    ScheduleValidationError,
)
from scheduler_app.models import (
    Occurrence,
    OverlapPolicy,
    Schedule,
    Trigger,
)
from scheduler_app.models.audit import AuditAction
from scheduler_app.safety import audit
from scheduler_app.safety.access import RUN, authorize
from scheduler_app.services.operator import check_runnable, locked, new_occurrence, valid_pk
from scheduler_app.timing import TICK, ensure_aware, iter_between, previous_slot

__all__ = ["BackfillPlan", "backfill", "backfill_max", "backfill_slots"]
logger = logging.getLogger("scheduler_app.services")

HARD_BACKFILL_LIMIT = 100_000


@dataclass(frozen=True, kw_only=True)
class BackfillPlan:
    """What a backfill of ``[start, end]`` does (``created`` is 0 for a dry run)."""

    schedule_id: UUID
    start: datetime
    end: datetime
    count: int
    """Slots of the rule in the range."""
    existing: int
    """Of those, slots that already have an occurrence (any trigger): left alone."""
    first: datetime | None
    last: datetime | None
    estimated_cost: float | None
    """``count - existing`` times the schedule's ``cost_estimate`` (None when not set)."""
    overlap: str
    over_max: bool
    """More new occurrences than ``SCHEDULER_BACKFILL_MAX``: needs ``confirm_over_max``."""
    dry_run: bool
    created: int = 0

    @property
    def new(self) -> int:
        return self.count - self.existing


def backfill_max() -> int:
    return int(get_settings().BACKFILL_MAX)


def backfill(
    schedule: Schedule | UUID | str,
    *,
    start: datetime,
    end: datetime,
    user: Any = None,
    reason: str = "",
    overlap: str = OverlapPolicy.BUFFER_ALL,
    max_count: int | None = None,
    confirm_over_max: bool = False,
    dry_run: bool = False,
    clock: Clock | None = None,
) -> BackfillPlan:
    """Create an occurrence (trigger ``backfill``) for every slot of the rule in
    ``[start, end]`` that has none yet, whatever that one's trigger.

    The slots and the payload are those of the schedule's *current* definition (its current
    version is recorded on each occurrence). ``overlap`` replaces the schedule's overlap
    policy for these rows (default ``buffer_all``: they run one after the other, oldest
    first). More than ``max_count`` (default ``SCHEDULER_BACKFILL_MAX``) new occurrences
    are refused unless ``confirm_over_max``. ``dry_run`` computes the plan, writes nothing.
    """
    now = (clock or SystemClock()).now()
    start, end = ensure_aware(start, "start"), ensure_aware(end, "end")
    _check_range(start, end, now, overlap)
    limit = backfill_max() if max_count is None else max_count
    # The plan (up to HARD_BACKFILL_LIMIT rule slots) is computed before any lock is taken,
    # from the version read here; the transaction re-checks that version and writes.
    seen = _readable(schedule, user)
    slots = backfill_slots(seen, start, end)
    keys = {idempotency_key(seen.pk, slot): slot for slot in slots}
    with transaction.atomic():  # reads only: on SQLite no write lock is taken here
        _current(schedule, user, seen)
        taken = _existing(seen, keys)
    fresh = [slot for key, slot in keys.items() if key not in taken]
    plan = _plan(seen, start, end, slots, len(slots) - len(fresh), overlap, limit, dry_run)
    _check_over_max(plan, limit, confirm_over_max)
    if dry_run or not fresh:
        return plan
    rows = _backfill_rows(seen, fresh, now, user, reason)
    created = 0
    for index in range(0, len(rows), BACKFILL_CHUNK):
        chunk = rows[index : index + BACKFILL_CHUNK]
        created += _insert_chunk(schedule, user, seen, chunk, overlap, now, done=created)
    _audit_backfill(seen, user, now, reason, start, end, created, overlap)
    logger.info(
        "schedule backfilled",
        extra={"action": "schedule.backfilled", "schedule_id": str(seen.pk), "count": created},
    )
    return replace(plan, created=created)


def _check_over_max(plan: BackfillPlan, limit: int, confirm_over_max: bool) -> None:
    """Refuse a plan with more new occurrences than ``limit`` unless confirmed a second time."""
    if plan.over_max and not confirm_over_max:
        raise ScheduleValidationError(
            "end",
            f"this backfill creates {plan.new} occurrences, more than the limit of {limit} "
            "(SCHEDULER_BACKFILL_MAX); narrow the range or confirm a second time "
            "(confirm_over_max=True, --yes)",
            code="over_backfill_max",
        )


def _backfill_rows(
    seen: Schedule, fresh: list[datetime], now: datetime, user: Any, reason: str
) -> list[Occurrence]:
    """The new occurrences (trigger ``backfill``) of the ``fresh`` slots, with their windows."""
    windows = _windows(seen, fresh)
    rows = [
        new_occurrence(
            seen, idempotency_key(seen.pk, slot), slot, Trigger.BACKFILL, now, user, reason
        )
        for slot in fresh
    ]
    for row in rows:
        row.window_start = windows[row.scheduled_for]
    return rows


BACKFILL_CHUNK = 500
"""Rows a backfill writes per transaction. The slots and rows are computed before any lock;
each chunk takes the schedule's lock, re-checks it and writes (on SQLite the database's
write lock is held for one chunk, about a tenth of a second, not for the whole plan). A
backfill interrupted between chunks is completed by running it again: slots are idempotent."""


def _current(schedule: Schedule | UUID | str, user: Any, seen: Schedule) -> Schedule:
    """The schedule locked, still allowed, runnable and at the version the plan was made of."""
    target = locked(schedule)
    authorize(user, RUN, target)
    check_runnable(target)
    if target.version != seen.version:
        raise ScheduleStateError(
            f"schedule {target.pk} changed while the backfill was planned or written; run it "
            "again (the slots already written are kept and not repeated)"
        )
    return target


def _insert_chunk(
    schedule: Schedule | UUID | str,
    user: Any,
    seen: Schedule,
    rows: list[Occurrence],
    overlap: str,
    now: datetime,
    *,
    done: int,
) -> int:
    with transaction.atomic():
        try:
            target = _current(schedule, user, seen)
        except ScheduleStateError as exc:
            raise ScheduleStateError(f"{exc} ({done} created before it changed)") from None
        policy = target.overlap_policy
        target.overlap_policy = overlap
        apply_overlap([target], {target.pk: rows}, now)
        target.overlap_policy = policy
        return len(insert_occurrences(rows))


def _audit_backfill(
    schedule: Schedule,
    user: Any,
    now: datetime,
    reason: str,
    start: datetime,
    end: datetime,
    created: int,
    overlap: str,
) -> None:
    audit.record(
        schedule,
        AuditAction.BACKFILL,
        user,
        now,
        reason=reason,
        start=start,
        end=end,
        created=created,
        overlap=str(overlap),
    )


def _readable(schedule: Schedule | UUID | str, user: Any) -> Schedule:
    """The schedule without a lock, for planning; a person must be allowed to see it."""
    pk = valid_pk(schedule)
    found = Schedule.objects.filter(pk=pk).first()
    if found is None:
        raise ScheduleValidationError("schedule", f"no schedule with id {pk}", code="not_found")
    authorize(user, RUN, found)
    return found


def _check_range(start: datetime, end: datetime, now: datetime, overlap: str) -> None:
    if start > end:
        raise ScheduleValidationError("start", "start is after end; swap them", code="bad_range")
    if end > now:
        raise ScheduleValidationError(
            "end",
            f"end {end.isoformat()} is in the future; a backfill covers past slots only "
            "(future ones run on their own)",
            code="future_backfill",
        )
    if overlap not in OverlapPolicy.values:
        choices = ", ".join(OverlapPolicy.values)
        raise ScheduleValidationError(
            "overlap", f"unknown overlap policy {overlap!r}; use one of: {choices}"
        )


BACKFILL_CANDIDATES_PER_SLOT = 10
"""A backfill's walk evaluates at most the search budget plus this many candidates per slot
it may hold (``HARD_BACKFILL_LIMIT``), in all."""


def backfill_slots(schedule: Schedule, start: datetime, end: datetime) -> list[datetime]:
    """The rule's slots in ``[start, end]`` (current definition), at most the hard limit;
    the walk is bounded in all (``BACKFILL_CANDIDATES_PER_SLOT``), not only per slot."""
    timing = timing_for(schedule)
    ceiling = timing.budget.candidates + BACKFILL_CANDIDATES_PER_SLOT * HARD_BACKFILL_LIMIT
    slots: list[datetime] = []
    for slot in iter_between(timing, start - TICK, end, ceiling=ceiling):
        slots.append(slot)
        if len(slots) > HARD_BACKFILL_LIMIT:
            raise ScheduleValidationError(
                "end",
                f"the range holds more than {HARD_BACKFILL_LIMIT} slots; backfill it in parts",
                code="backfill_too_large",
            )
    return slots


def _existing(schedule: Schedule, keys: dict[str, datetime]) -> set[str]:
    """Keys already used, and slots that have an occurrence of any trigger."""
    if not keys:
        return set()
    slots = list(keys.values())
    first, last = min(slots), max(slots)
    found = Occurrence.objects.filter(
        schedule=schedule, scheduled_for__gte=first, scheduled_for__lte=last
    ).values_list("idempotency_key", "scheduled_for")
    at = {slot for _, slot in found}
    used = {key for key, _ in found}
    return {key for key, slot in keys.items() if key in used or slot in at}


def _plan(
    schedule: Schedule,
    start: datetime,
    end: datetime,
    slots: list[datetime],
    existing: int,
    overlap: str,
    limit: int,
    dry_run: bool,
) -> BackfillPlan:
    new = len(slots) - existing
    cost = None if schedule.cost_estimate is None else new * schedule.cost_estimate
    return BackfillPlan(
        schedule_id=schedule.pk,
        start=start,
        end=end,
        count=len(slots),
        existing=existing,
        first=slots[0] if slots else None,
        last=slots[-1] if slots else None,
        estimated_cost=cost,
        overlap=str(overlap),
        over_max=new > limit,
        dry_run=dry_run,
    )


def _windows(schedule: Schedule, slots: list[datetime]) -> dict[datetime, datetime]:
    """Each backfilled slot covers the business period since the rule's previous slot."""
    timing = timing_for(schedule)
    before: datetime | None = None
    starts: dict[datetime, datetime] = {}
    for slot in slots:
        previous = before or previous_slot(timing, slot, inclusive=False)
        starts[slot] = min(previous or slot, slot)
        before = slot
    return starts
