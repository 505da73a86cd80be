"""Operator services: run now, backfill, undo a cancel. Used by the admin, commands and the API.

Every function takes the acting ``user`` (``None``: the system, no checks). A user must
belong to the schedule's tenant (``scheduler_app.safety.tenancy``) and hold the permission the
action needs (``run_schedule`` for run now and backfill, ``change_schedule`` to undo a
cancel); otherwise ``TenantForbidden`` / ``OperatorPermissionDenied`` and nothing is written.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from django.db import transaction

from scheduler_app.clock import Clock, SystemClock
from scheduler_app.conf import get_settings
from scheduler_app.definition.schedule import (
    idempotency_key,
    jitter_for,
    occurrence_id,
    timing_for,
    version_id,
)
from scheduler_app.dispatch.bulk import insert_occurrences
from scheduler_app.dispatch.materialize import apply_overlap
from scheduler_app.errors import (
    OperatorPermissionDenied,
    ScheduleStateError,
    ScheduleValidationError,
)
from scheduler_app.models import (
    AttemptKind,
    Occurrence,
    OccurrenceAttempt,
    OccurrenceState,
    OverlapPolicy,
    Schedule,
    ScheduleMode,
    ScheduleStatus,
    Trigger,
)
from scheduler_app.models.audit import AuditAction
from scheduler_app.safety import audit
from scheduler_app.safety.access import CHANGE, RUN, authorize
from scheduler_app.safety.actors import actor_name, is_system
from scheduler_app.safety.approval import check_runner_edit, hold_for_approval, version_approved
from scheduler_app.services.replay import NOT_RUNNABLE
from scheduler_app.timing import ensure_aware, iter_between, next_after, previous_slot

__all__ = ["BackfillPlan", "OperatorPermissionDenied", "backfill", "restore_schedule", "run_now"]
logger = logging.getLogger("scheduler_app.services")
RUN_PERMISSION = RUN
CHANGE_PERMISSION = CHANGE
HARD_BACKFILL_LIMIT = 100_000
"""No backfill creates more occurrences than this, confirmed or not (split the range)."""
_TICK = timedelta(microseconds=1)


def _who(user: Any) -> str:
    return "" if is_system(user) else actor_name(user)


def _valid_pk(schedule: Schedule | UUID | str) -> UUID:
    pk = schedule.pk if isinstance(schedule, Schedule) else schedule
    try:
        return UUID(str(pk))
    except ValueError:
        raise ScheduleValidationError(
            "schedule", f"no schedule with id {pk}", code="not_found"
        ) from None


def _locked(schedule: Schedule | UUID | str) -> Schedule:
    pk = _valid_pk(schedule)
    found = Schedule.objects.select_for_update().filter(pk=pk).first()
    if found is None:
        raise ScheduleValidationError("schedule", f"no schedule with id {pk}", code="not_found")
    return found


def run_now(
    schedule: Schedule | UUID | str,
    *,
    user: Any = None,
    reason: str = "",
    window_start: datetime | None = None,
    window_end: datetime | None = None,
    respect_overlap: bool = True,
    clock: Clock | None = None,
) -> Occurrence:
    """Create one occurrence with trigger ``manual`` for now, outside the rule.

    Its idempotency key contains ``manual`` and a random part, so it never equals a rule
    slot's key (those are the schedule id and the slot instant). The business window
    defaults to the instant itself. With ``respect_overlap`` the schedule's overlap policy
    decides as for any slot (it may be buffered or skipped); without it, it runs regardless.
    """
    now = (clock or SystemClock()).now()
    start = ensure_aware(window_start, "window_start") if window_start else now
    end = ensure_aware(window_end, "window_end") if window_end else max(now, start)
    if start > end:
        raise ScheduleValidationError(
            "window_start", "the window starts after it ends; swap the two", code="bad_window"
        )
    with transaction.atomic():
        target = _locked(schedule)
        authorize(user, RUN, target)
        _check_runnable(target)
        key = f"{target.pk}:manual:{uuid.uuid4().hex}"
        row = _occurrence(target, key, now, Trigger.MANUAL, now, user, reason)
        row.window_start, row.window_end = start, end
        if respect_overlap and row.state == OccurrenceState.PENDING:
            apply_overlap([target], {target.pk: [row]}, now)
        row.save(force_insert=True)
        audit.record(target, AuditAction.RUN_NOW, user, now, reason=reason, occurrence=str(row.pk))
    logger.info(
        "occurrence run now",
        extra={
            "action": "occurrence.run_now",
            "schedule_id": str(target.pk),
            "occurrence_id": str(row.pk),
        },
    )
    return row


def _check_runnable(schedule: Schedule) -> None:
    if schedule.status in NOT_RUNNABLE:
        raise ScheduleStateError(
            f"schedule {schedule.pk} is {schedule.status}; it cannot be run "
            "(restore or approve it first)"
        )
    if not version_approved(schedule, schedule.version):
        raise ScheduleStateError(
            f"version {schedule.version} of schedule {schedule.pk} is not approved; a user "
            "with approve_schedule must approve it before it can run"
        )


def _occurrence(
    schedule: Schedule,
    key: str,
    slot: datetime,
    trigger: str,
    now: datetime,
    user: Any,
    reason: str,
) -> Occurrence:
    shadow = schedule.mode == ScheduleMode.SHADOW
    deadline = (
        slot + timedelta(seconds=schedule.deadline)
        if schedule.deadline is not None and trigger == Trigger.MANUAL
        else None
    )
    return Occurrence(
        id=occurrence_id(key),
        schedule_id=schedule.pk,
        schedule_version_id=version_id(schedule.pk, schedule.version),
        trigger=trigger,
        scheduled_for=slot,
        window_start=slot,
        window_end=slot,
        timezone=schedule.timezone,
        idempotency_key=key,
        task=schedule.task,
        args=schedule.args,
        target=schedule.target,
        kwargs=schedule.kwargs,
        not_before=now if trigger == Trigger.MANUAL else slot + jitter_for(key, schedule.jitter),
        deadline_at=deadline,
        state=OccurrenceState.SKIPPED if shadow else OccurrenceState.PENDING,
        reason="shadow" if shadow else "",
        created_at=now,
        requested_by=_who(user),
        note=reason[:2000],
    )


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
    if plan.over_max and not confirm_over_max:
        raise ScheduleValidationError(
            "end",
            f"this backfill creates {plan.new} occurrences, more than the limit of {limit} "
            "(SCHEDULER_BACKFILL_MAX); narrow the range or confirm a second time "
            "(confirm_over_max=True, --yes)",
            code="over_backfill_max",
        )
    if dry_run or not fresh:
        return plan
    windows = _windows(seen, fresh)
    rows = [
        _occurrence(seen, idempotency_key(seen.pk, slot), slot, Trigger.BACKFILL, now, user, reason)
        for slot in fresh
    ]
    for row in rows:
        row.window_start = windows[row.scheduled_for]
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


BACKFILL_CHUNK = 500
"""Rows a backfill writes per transaction. The slots and rows are computed before any lock;
each chunk takes the schedule's lock, re-checks it and writes (on SQLite the database's
write lock is held for one chunk, about a tenth of a second, not for the whole plan). A
backfill interrupted between chunks is completed by running it again: slots are idempotent."""


def _current(schedule: Schedule | UUID | str, user: Any, seen: Schedule) -> Schedule:
    """The schedule locked, still allowed, runnable and at the version the plan was made of."""
    target = _locked(schedule)
    authorize(user, RUN, target)
    _check_runnable(target)
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
    pk = _valid_pk(schedule)
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
    for slot in iter_between(timing, start - _TICK, end, ceiling=ceiling):
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


def restore_schedule(
    schedule: Schedule | UUID | str,
    *,
    user: Any = None,
    clock: Clock | None = None,
    reason: str = "",
) -> Schedule:
    """Undo a cancel: the schedule comes back *paused* (resume it to see what catching up
    would run), and occurrences the cancel stopped before they started are recorded as
    restorable in their attempt history (replay them to run them)."""
    now = (clock or SystemClock()).now()
    with transaction.atomic():
        target = _locked(schedule)
        authorize(user, CHANGE, target)
        # Undoing a cancel makes the schedule run again (once resumed), with its owner's rights.
        check_runner_edit(user, (), target.owner, restarts=True)
        if target.status != ScheduleStatus.CANCELLED:
            raise ScheduleStateError(
                f"schedule {target.pk} is {target.status}, not cancelled: nothing to undo"
            )
        timing = timing_for(target)
        target.status = ScheduleStatus.PAUSED
        target.paused_at = now
        target.pause_note = f"restored after a cancel by {_who(user) or 'the system'}"
        target.paused_by = _who(user)
        target.next_run_at = next_after(timing, (target.last_scheduled_for or now))
        if target.next_run_at is None:
            target.status = ScheduleStatus.COMPLETED
        hold_for_approval(target)  # a version never approved waits again, it is not paused
        target.updated_at = now
        target.save()
        stopped = Occurrence.objects.filter(
            schedule=target, state=OccurrenceState.CANCELLED, reason="schedule_cancelled"
        )
        OccurrenceAttempt.objects.bulk_create(
            [
                OccurrenceAttempt(
                    occurrence_id=pk,
                    scheduled_for=slot,
                    kind=AttemptKind.RESTORE,
                    number=attempts,
                    started_at=now,
                    finished_at=now,
                    outcome="restorable",
                    by=_who(user),
                    note="the schedule's cancel was undone; replay this occurrence to run it",
                )
                for pk, attempts, slot in stopped.values_list("pk", "attempts", "scheduled_for")
            ]
        )
        audit.record(target, AuditAction.RESTORED, user, now, reason=reason)
    logger.info(
        "schedule restored", extra={"action": "schedule.restored", "schedule_id": str(target.pk)}
    )
    return target
