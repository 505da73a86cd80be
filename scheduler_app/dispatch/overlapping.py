"""Carrying out the overlap policy on new occurrences (``overlap`` decides, this writes).

Called with the schedules' row locks held (the beat's batch, run now, backfill). What an
overlap policy acts on is a run that *overran*: one still going when the next slot comes.
A backlog is not that: the rows a downtime left (created together, run one after another,
``catch_up`` or on time) and the rows that joined them since wait because the schedule asked
for each of them, not because a run took too long. While a schedule drains such a backlog and
none of its runs overran, a new slot joins the end of the backlog under ``skip`` (as
``buffer_all`` always does); see ``overlap.decide_overlap``.

A run overran when the one running now has run for at least the spacing of the new slot
(``window_end - window_start``: the time since the slot before), or when the last run that
finished took at least that long. Both are read in one query each, for all the schedules of a
batch, and only for schedules that are draining a backlog when a new slot arrives.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from uuid import UUID

from django.db.models import (
    Count,
    DurationField,
    ExpressionWrapper,
    F,
    Max,
    Min,
    OuterRef,
    Subquery,
)

from scheduler_app.db.arrays import AnyOf
from scheduler_app.db.locking import lock_in_order, update_in_order
from scheduler_app.models import (
    ACTIVE_STATES,
    Occurrence,
    OccurrenceState,
    OverlapPolicy,
    Schedule,
    Trigger,
)
from scheduler_app.policies.overlap import decide_overlap
from scheduler_app.worker.lifecycle import announce_finished

RELEASED = ("released", "released_after_grace")
"""Reasons of rows that waited in ``buffered`` and were let go: a backlog's run."""
LATE_ROW = timedelta(seconds=1)
"""A row made this long after its slot was made by a beat coming back from a downtime (a
running beat makes a slot's row within milliseconds of it): a backlog's row, whatever its
trigger. A slot late by less than ``max_lateness`` is caught up as ``scheduled``, and its run,
still going when the next slot came, made that on-time slot ``skipped: overlap`` under
``skip`` (after a 9 s outage of an every-5-seconds schedule with 0.6 s runs)."""


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
    draining = _draining(schedules, planned, counts, now)
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
            catching_up=schedule.id in draining,
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
    backlog: bool = False
    """An open row waits in, or came from, a backlog: ``buffered``, a catch-up run, a row
    released from ``buffered``, or one made late (``LATE_ROW``)."""
    started: datetime | None = None
    """When the earliest run still ``running`` started."""


def _open_counts(schedule_ids: list[UUID]) -> dict[UUID, _OpenCounts]:
    """Open occurrences per schedule, by kind, in one query."""
    if not schedule_ids:
        return {}
    counts: dict[UUID, _OpenCounts] = {}
    rows = (
        Occurrence.objects.filter(
            AnyOf(F("schedule_id"), schedule_ids),
            state__in=(*ACTIVE_STATES, OccurrenceState.BUFFERED),
        )
        .values_list("schedule_id", "state", "trigger", "reason")
        .annotate(
            n=Count("id"),
            started=Min("started_at"),
            late=Max(
                ExpressionWrapper(
                    F("created_at") - F("scheduled_for"), output_field=DurationField()
                )
            ),
        )
        .order_by()
    )
    for schedule_id, state, trigger, reason, n, started, late in rows:
        found = counts.setdefault(schedule_id, _OpenCounts())
        if state == OccurrenceState.BUFFERED:
            found.buffered += n
        else:
            found.active += n
        found.backlog |= (
            state == OccurrenceState.BUFFERED
            or trigger == Trigger.CATCH_UP
            or reason in RELEASED
            or (late is not None and late > LATE_ROW)
        )
        if state == OccurrenceState.RUNNING and started is not None:
            found.started = started if found.started is None else min(found.started, started)
    return counts


def _draining(
    schedules: list[Schedule],
    planned: dict[UUID, list[Occurrence]],
    counts: dict[UUID, _OpenCounts],
    now: datetime,
) -> set[UUID]:
    """The schedules that drain a backlog none of whose runs overran the new slot's spacing."""
    spacing: dict[UUID, timedelta] = {}
    for schedule in schedules:
        found = counts.get(schedule.id)
        fresh = _fresh(planned[schedule.id])
        if found is None or not found.backlog or not fresh:
            continue
        gap = fresh[0].window_end - fresh[0].window_start
        running_for = now - found.started if found.started is not None else timedelta(0)
        if gap > timedelta(0) and running_for < gap:
            spacing[schedule.id] = gap
    if not spacing:
        return set()
    last = _last_run_lengths(list(spacing))
    return {sid for sid, gap in spacing.items() if last.get(sid, timedelta(0)) < gap}


_FINISHED_RUNS = (
    Occurrence.objects.filter(
        schedule_id=OuterRef("pk"), finished_at__isnull=False, started_at__isnull=False
    )
    .exclude(state__in=(*ACTIVE_STATES, OccurrenceState.BUFFERED))
    .order_by("-scheduled_for")
)
"""A schedule's runs that ended, newest slot first (the ``(schedule, -scheduled_for)`` index)."""


def _last_run_lengths(schedule_ids: list[UUID]) -> dict[UUID, timedelta]:
    """How long the last finished run (by slot) of each schedule took, in one query."""
    rows = (
        Schedule.objects.filter(AnyOf(F("pk"), schedule_ids))
        .annotate(
            run_started=Subquery(_FINISHED_RUNS.values("started_at")[:1]),
            run_finished=Subquery(_FINISHED_RUNS.values("finished_at")[:1]),
        )
        .values_list("pk", "run_started", "run_finished")
    )
    return {
        pk: finished - started
        for pk, started, finished in rows
        if started is not None and finished is not None
    }


def _request_stop(schedule_ids: list[UUID], now: datetime) -> list[str]:
    if not schedule_ids:
        return []
    running = Occurrence.objects.filter(
        schedule_id__in=schedule_ids, state__in=ACTIVE_STATES, cancel_requested_at__isnull=True
    )
    locked = lock_in_order(running)
    Occurrence.objects.filter(pk__in=locked).update(cancel_requested_at=now)
    return [str(pk) for pk in locked]
