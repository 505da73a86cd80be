"""The Python API for one-time runs, delays, deadlines and debounce (sugar over ``services``).

from scheduler_app import api  # the public path (this module, re-exported)
api.run_once("billing.close", at=datetime(2026, 12, 31, 18, 0), timezone="Europe/Riga")
api.run_in("emails.follow_up", "20m", kwargs={"user_id": 7})
api.run_after("leads.remind", event_at=lead.sent_at, delay="7d", key=f"lead:{lead.pk}:d7")
api.deadline_alarm("ops.escalate", deadline=contract.due_at, kwargs={"id": contract.pk})
api.debounce("search.reindex", key="catalog", quiet="10m")
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, transaction

from scheduler_app import services
from scheduler_app.clock import Clock, SystemClock
from scheduler_app.errors import DuplicateKey, ScheduleValidationError
from scheduler_app.models import Schedule, ScheduleStatus
from scheduler_app.timing import ensure_aware, parse_duration

logger = logging.getLogger("scheduler_app.api")
IF_PAST = ("error", "run_now", "skip")


def run_once(
    task: str,
    *,
    at: datetime,
    timezone: str = "UTC",
    clock: Clock | None = None,
    **options: Any,
) -> Schedule:
    """One run at ``at``: an aware instant, or a naive local date-time in ``timezone``
    (DST policies apply: a nonexistent local time is shifted, an ambiguous one is the first)."""
    if not isinstance(at, datetime):
        raise ScheduleValidationError("at", "a datetime is required")
    return services.create_schedule(
        task=task, kind="once", rule=at, timezone=timezone, clock=clock, **options
    )


def run_in(
    task: str, delay: timedelta | str | int, *, clock: Clock | None = None, **options: Any
) -> Schedule:
    """One run ``delay`` from now ("in 20 minutes": ``"20m"``)."""
    now = (clock or SystemClock()).now()
    return run_once(task, at=now + parse_duration(delay, "delay"), clock=clock, **options)


def run_after(
    task: str,
    *,
    event_at: datetime,
    delay: timedelta | str | int,
    if_past: str = "error",
    clock: Clock | None = None,
    **options: Any,
) -> Schedule | None:
    """One run ``delay`` after an event ("3 days after the lead was sent").

    When that instant has already passed: ``if_past="error"`` (default) raises,
    ``"run_now"`` runs at once, ``"skip"`` creates nothing and returns None.
    """
    if if_past not in IF_PAST:
        raise ScheduleValidationError("if_past", f"use one of: {', '.join(IF_PAST)}")
    at = ensure_aware(event_at, "event_at") + parse_duration(delay, "delay")
    now = (clock or SystemClock()).now()
    if at < now:
        if if_past == "skip":
            return None
        if if_past == "error":
            raise ScheduleValidationError(
                "event_at",
                f"{at.isoformat()} (event + delay) has already passed; pass if_past='run_now' "
                "to run it at once or if_past='skip' to ignore it",
                code="no_future_slot",
            )
        at = now
    return run_once(task, at=at, clock=clock, **options)


def deadline_alarm(
    task: str, *, deadline: datetime, clock: Clock | None = None, **options: Any
) -> Schedule:
    """A one-time run at ``deadline`` whose task escalates or notifies (objective "deadline")."""
    options.setdefault("objective", "deadline")
    return run_once(task, at=ensure_aware(deadline, "deadline"), clock=clock, **options)


def debounce(
    task: str,
    *,
    key: str,
    quiet: timedelta | str | int,
    kwargs: dict[str, Any] | None = None,
    timezone: str = "UTC",
    clock: Clock | None = None,
) -> Schedule:
    """Run ``task`` once, ``quiet`` after the last of a burst of calls with the same ``key``.

    Each call moves the pending run to now + quiet. When it fires, its occurrence's window
    starts at the first call of the burst and ends at the run. Safe under concurrent
    callers (the schedule row is locked; a creation race is retried). Moving the run time
    does not create a schedule version; starting a new burst does.
    """
    now = (clock or SystemClock()).now()
    fire_at = now + parse_duration(quiet, "quiet")
    schedule_key = f"debounce:{key}"
    for _ in range(3):
        try:
            with transaction.atomic():
                return _debounce_once(task, schedule_key, fire_at, now, kwargs, timezone, clock)
        except (IntegrityError, DuplicateKey):
            continue  # another caller created it first: lock theirs and move it
    raise ScheduleValidationError("key", f"could not debounce {key!r}: too much contention")


def _debounce_once(
    task: str,
    schedule_key: str,
    fire_at: datetime,
    now: datetime,
    kwargs: dict[str, Any] | None,
    timezone: str,
    clock: Clock | None,
) -> Schedule:
    current = Schedule.objects.select_for_update().filter(key=schedule_key).first()
    if current is not None and current.status == ScheduleStatus.CANCELLED:
        # A cancelled debounce keeps its history under another key; a new one starts now.
        Schedule.objects.filter(pk=current.pk).update(
            key=f"{schedule_key}~retired~{current.pk.hex[:12]}"
        )
        current = None
    burst: dict[str, Any] = {"rule": fire_at, "anchor": now, "kwargs": kwargs or {}}
    if current is None:
        return services.create_schedule(
            task=task, kind="once", key=schedule_key, timezone=timezone, clock=clock, **burst
        )
    if current.status == ScheduleStatus.ACTIVE and current.next_run_at is not None:
        # The burst goes on: move the pending run, keep the window's start.
        current.rule = fire_at.isoformat()
        current.next_run_at = fire_at
        current.updated_at = now
        current.save(update_fields=["rule", "next_run_at", "updated_at"])
        return current
    # The last burst already fired: a new burst starts now. (A paused debounce stays paused:
    # its run moves, and fires after it is resumed.)
    return services.update_schedule(
        current.pk, expected_version=current.version, clock=clock, **burst
    )
