"""The expected-run monitor: schedules that stopped succeeding, schedules the beat left behind.

Two problems, in business words:

- **no success**: an active schedule with ``expected_every`` has no successful occurrence
  within that window (the window starts at its last success; a schedule that never succeeded
  counts from its creation, so a new schedule gets one window to prove itself);
- **overdue**: an active schedule whose ``next_run_at`` is further in the past than its
  ``max_lateness`` plus a margin (``SCHEDULER_MONITOR_MARGIN``, 60 s): no beat is working it.

A pass is one bounded query (at most ``LIMIT`` rows: the candidates plus the schedules flagged
unhealthy before). Transitions are stored on the schedule (``health``, ``health_reason``,
``health_changed_at``) with a compare-and-set, so ``schedule_unhealthy`` and
``schedule_recovered`` are sent once per transition, whichever beat or command sees it first.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db.models import F, QuerySet, Value
from django.db.models.functions import Coalesce, Greatest

from scheduler_app import events
from scheduler_app.conf import get_settings
from scheduler_app.models import (
    FINAL_STATES,
    Schedule,
    ScheduleHealth,
    ScheduleStatus,
)
from scheduler_app.models.latest import RECENT, decoded, latest
from scheduler_app.monitoring.sql import ShiftSeconds

logger = logging.getLogger("scheduler_app.monitoring")
LIMIT = 5000
"""Rows one pass looks at; beyond that the report says it is incomplete."""
LAST_ATTEMPT = ("scheduled_for", "state", "last_error", "reason")
NO_SUCCESS = "no_success"
OVERDUE = "overdue"


def monitor_margin() -> float:
    """``SCHEDULER_MONITOR_MARGIN``: seconds of lateness beyond ``max_lateness`` tolerated."""
    return get_settings().MONITOR_MARGIN


@dataclass(frozen=True)
class Problem:
    """One unhealthy schedule, with a line an operator can act on."""

    schedule_id: str
    name: str
    kind: str
    message: str
    since: datetime | None = None

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "since": self.since.isoformat() if self.since else None}


@dataclass
class MonitorReport:
    checked_at: datetime
    problems: list[Problem] = field(default_factory=list)
    became_unhealthy: list[str] = field(default_factory=list)
    recovered: list[str] = field(default_factory=list)
    complete: bool = True

    @property
    def ok(self) -> bool:
        return not self.problems


def candidates(now: datetime, margin: float) -> QuerySet[Schedule]:
    """Schedules that may be unhealthy now, and those flagged before, with what ``diagnose``
    reads.

    Each kind is found on its own index (overdue: the due index; an expected success
    missing: the partial index of schedules with ``expected_every``; flagged: the partial
    index of unhealthy ones), at most ``LIMIT + 1`` of each; one more query annotates them.
    A single query with the three conditions OR-ed scanned every schedule (2 s at 100,000
    schedules, in the beat's first tick and every ``MONITOR_INTERVAL`` after).
    """
    active = Schedule.objects.filter(status=ScheduleStatus.ACTIVE)
    overdue = active.filter(next_run_at__lt=now - timedelta(seconds=margin)).order_by("next_run_at")
    missing = _annotated(active.filter(expected_every__isnull=False), now).filter(
        success_due__lt=Value(now)  # type: ignore[misc]  # an annotation the stubs cannot see
    )
    flagged = Schedule.objects.filter(health=ScheduleHealth.UNHEALTHY)
    ids: set[Any] = set()
    for kind in (overdue, missing, flagged):
        ids.update(kind.values_list("pk", flat=True)[: LIMIT + 1])
    return _annotated(Schedule.objects.filter(pk__in=ids), now).order_by("next_run_at", "id")


def _annotated(rows: QuerySet[Schedule], now: datetime) -> QuerySet[Schedule]:
    """When a success is due by ``expected_every`` (from the schedule's own
    ``last_success_at``), and the latest ended occurrence of each schedule (``last_attempt``,
    ``models.latest``: the last five weeks' partitions first, all of them only for a schedule
    with no ended occurrence there)."""
    return rows.annotate(
        last_attempt=latest(LAST_ATTEMPT, recent=now - RECENT, state__in=FINAL_STATES),
        success_due=ShiftSeconds(
            Greatest(Coalesce("last_success_at", "created_at"), F("created_at")),
            F("expected_every"),
        ),
    )


def diagnose(schedule: Any, now: datetime, margin: float) -> Problem | None:
    """The problem of one candidate row (annotated by ``candidates``), or None: healthy."""
    if schedule.status != ScheduleStatus.ACTIVE:
        return None
    if schedule.next_run_at is not None:
        late = (now - schedule.next_run_at).total_seconds()
        if late > schedule.max_lateness + margin:
            return Problem(
                str(schedule.pk),
                str(schedule),
                OVERDUE,
                f"{schedule}: overdue by {human_duration(late)}: its run due "
                f"{_stamp(schedule.next_run_at)} was not started "
                f"(max lateness {human_duration(schedule.max_lateness)}); is a beat running?",
                schedule.next_run_at,
            )
    if schedule.expected_every:
        return _no_success(schedule, now)
    return None


def _no_success(schedule: Any, now: datetime) -> Problem | None:
    start = max(schedule.last_success_at or schedule.created_at, schedule.created_at)
    silent = (now - start).total_seconds()
    if silent <= schedule.expected_every:
        return None
    if schedule.last_success_at is not None:
        head = f"no successful run for {human_duration(silent)}"
    else:
        head = f"no successful run yet ({human_duration(silent)} since it was created)"
    return Problem(
        str(schedule.pk),
        str(schedule),
        NO_SUCCESS,
        f"{schedule}: {head}, expected within {human_duration(schedule.expected_every)}; "
        f"{_last_attempt(schedule)}",
        start,
    )


def _last_attempt(schedule: Any) -> str:
    last = decoded(getattr(schedule, "last_attempt", None))
    if not last.get("scheduled_for"):
        return "no run has finished yet"
    text = f"last attempt {_stamp(last['scheduled_for'])} {last['state']}"
    detail = _first_line(last.get("last_error")) or last.get("reason")
    return f"{text}: {detail}" if detail else text


def _first_line(error: str | None) -> str:
    """The exception line of a stored error (the last non-empty line of a traceback)."""
    lines = [line.strip() for line in (error or "").splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""


def _stamp(instant: datetime) -> str:
    return instant.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def human_duration(seconds: float) -> str:
    """``27 h``, ``1 d 3 h``, ``45 min``, ``30 s``: what a person says."""
    seconds = int(seconds)
    if seconds < 120:
        return f"{seconds} s"
    minutes = seconds // 60
    if minutes < 120:
        return f"{minutes} min"
    hours = minutes // 60
    if hours < 48:
        rest = minutes % 60
        return f"{hours} h {rest} min" if rest and hours < 10 else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h" if hours else f"{days} d"


def run_monitor(now: datetime, *, margin: float | None = None) -> MonitorReport:
    """One pass: find problems, store transitions, send each transition's signal once."""
    margin = monitor_margin() if margin is None else margin
    report = MonitorReport(checked_at=now)
    rows = list(candidates(now, margin)[: LIMIT + 1])
    if len(rows) > LIMIT:
        rows, report.complete = rows[:LIMIT], False
    for schedule in rows:
        problem = diagnose(schedule, now, margin)
        if problem is not None:
            report.problems.append(problem)
            if _mark_unhealthy(schedule, problem, now):
                report.became_unhealthy.append(problem.schedule_id)
        elif schedule.health == ScheduleHealth.UNHEALTHY and _mark_recovered(schedule, now):
            report.recovered.append(str(schedule.pk))
    return report


def problem_kind(reason: str) -> str:
    """The kind of a stored ``health_reason`` (its wording is ours, see ``diagnose``)."""
    return OVERDUE if ": overdue by " in reason else NO_SUCCESS


def _mark_unhealthy(schedule: Schedule, problem: Problem, now: datetime) -> bool:
    """ok -> unhealthy (signal). Already unhealthy: the stored reason changes only when the
    kind of problem does (not every minute as the durations in it grow); no signal."""
    if schedule.health == ScheduleHealth.UNHEALTHY:
        if problem_kind(schedule.health_reason) != problem.kind:
            Schedule.objects.filter(pk=schedule.pk, health=ScheduleHealth.UNHEALTHY).update(
                health_reason=problem.message
            )
        return False
    if not _move(schedule, ScheduleHealth.OK, ScheduleHealth.UNHEALTHY, problem.message, now):
        return False  # another beat or command saw it first and sent the signal
    logger.warning(
        problem.message,
        extra={"action": "monitor.unhealthy", "schedule_id": problem.schedule_id},
    )
    events.schedule_unhealthy.send(sender=Schedule, schedule=schedule, reason=problem.message)
    return True


def _mark_recovered(schedule: Schedule, now: datetime) -> bool:
    if not _move(schedule, ScheduleHealth.UNHEALTHY, ScheduleHealth.OK, "", now):
        return False
    logger.info(
        "schedule recovered",
        extra={"action": "monitor.recovered", "schedule_id": str(schedule.pk)},
    )
    events.schedule_recovered.send(sender=Schedule, schedule=schedule)
    return True


def _move(schedule: Schedule, was: str, health: str, reason: str, now: datetime) -> bool:
    """Compare-and-set the schedule's health from ``was`` (row and object); False when another
    beat or command moved it first."""
    changed = Schedule.objects.filter(pk=schedule.pk, health=was).update(
        health=health, health_reason=reason, health_changed_at=now
    )
    if changed:
        schedule.health, schedule.health_reason, schedule.health_changed_at = health, reason, now
    return bool(changed)


def overdue_count(now: datetime, margin: float | None = None) -> int:
    """Active schedules overdue beyond ``max_lateness`` + margin (the metric)."""
    margin = monitor_margin() if margin is None else margin
    return (
        Schedule.objects.filter(
            status=ScheduleStatus.ACTIVE, next_run_at__lt=now - timedelta(seconds=margin)
        )
        .annotate(limit=ShiftSeconds(F("next_run_at"), F("max_lateness") + margin))
        .filter(limit__lt=Value(now))
        .count()
    )
