"""What the health view and ``scheduler_status`` report: beats, backlogs, lateness, switches."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import Min

from scheduler_app.dispatch.outbox import UNPUBLISHED
from scheduler_app.models import (
    BeatHeartbeat,
    KillSwitch,
    Occurrence,
    OccurrenceState,
    Schedule,
    ScheduleHealth,
    ScheduleStatus,
    Trigger,
)
from scheduler_app.monitoring.heartbeat import alive, last_tick
from scheduler_app.monitoring.lateness import (
    APART_TRIGGERS,
    HOUR,
    SUMMARY_TRIGGERS,
    Lag,
    figures,
    read,
)

Figures = dict[str, float | int | str | None]


@dataclass(frozen=True)
class BeatHealth:
    ok: bool
    beats_alive: int
    last_tick_age: float | None
    stale_after: float
    message: str


def beat_health(now: datetime, stale: float) -> BeatHealth:
    """OK when at least one beat ticked within ``stale`` seconds."""
    count = alive(now, stale).count()
    last = last_tick()
    age = (now - last).total_seconds() if last else None
    if count:
        message = f"{count} beat(s) alive, last tick {age:.0f} s ago"
    elif age is None:
        message = "no beat has ever ticked: start one (celery beat -S scheduler_app.beat:...)"
    else:
        message = (
            f"no beat has ticked for {age:.0f} s (limit {stale:.0f} s): nothing is being "
            "scheduled; start or restart the beat"
        )
    return BeatHealth(count > 0, count, age, stale, message)


@dataclass
class Status:
    """The figures ``scheduler_status`` prints."""

    checked_at: datetime
    health: BeatHealth
    beats: list[dict[str, Any]] = field(default_factory=list)
    due_backlog: int = 0
    outbox_backlog: int = 0
    outbox_oldest_age: float | None = None
    lateness_last_hour: Figures = field(default_factory=dict)
    """Dispatch lag of the scheduled and catch-up runs only (``SUMMARY_TRIGGERS``)."""
    start_lateness_last_hour: Figures = field(default_factory=dict)
    """Start lag of the same runs."""
    lateness_by_trigger: dict[str, Figures] = field(default_factory=dict)
    """The dispatch lag of each trigger, ``manual`` and ``backfill`` included."""
    kill_switches: list[dict[str, Any]] = field(default_factory=list)
    unhealthy_schedules: int = 0

    def as_dict(self) -> dict[str, Any]:
        result = asdict(self)
        result["checked_at"] = self.checked_at.isoformat()
        return result


def gather_status(now: datetime, stale: float) -> Status:
    status = Status(checked_at=now, health=beat_health(now, stale))
    status.beats = [
        _beat(row, now, stale) for row in BeatHeartbeat.objects.order_by("-last_tick_at")[:50]
    ]
    status.due_backlog = Schedule.objects.filter(
        status=ScheduleStatus.ACTIVE, next_run_at__lte=now
    ).count()
    status.outbox_backlog = Occurrence.objects.filter(UNPUBLISHED).count()
    oldest = oldest_pending()
    status.outbox_oldest_age = (now - oldest).total_seconds() if oldest else None
    by_trigger = lateness_by_trigger(now)
    status.lateness_last_hour = by_trigger.pop("summary")
    status.start_lateness_last_hour = by_trigger.pop("summary_start")
    status.lateness_by_trigger = by_trigger
    status.kill_switches = [
        {
            "scope": switch.scope,
            "target": switch.target,
            "by": switch.changed_by,
            "since": switch.changed_at.isoformat(),
            "reason": switch.reason,
        }
        for switch in KillSwitch.objects.filter(enabled=True).order_by("scope", "target")
    ]
    status.unhealthy_schedules = Schedule.objects.filter(health=ScheduleHealth.UNHEALTHY).count()
    return status


def oldest_pending() -> datetime | None:
    """When the oldest occurrence still waiting for the broker was created (None: none waits)."""
    pending = Occurrence.objects.filter(state=OccurrenceState.PENDING)
    return pending.aggregate(oldest=Min("created_at"))["oldest"]


def _beat(row: BeatHeartbeat, now: datetime, stale: float) -> dict[str, Any]:
    age = (now - row.last_tick_at).total_seconds()
    return {
        "id": str(row.id),
        "host": row.host,
        "pid": row.pid,
        "version": row.version,
        "started_at": row.started_at.isoformat(),
        "last_tick_at": row.last_tick_at.isoformat(),
        "last_tick_age": age,
        "alive": row.stopped_at is None and age <= stale,
        "stopped_at": row.stopped_at.isoformat() if row.stopped_at else None,
        "last_batch_size": row.last_batch_size,
        "last_error": row.last_error,
        "clock_skew": row.clock_skew,
    }


def lateness_by_trigger(now: datetime) -> dict[str, Figures]:
    """The summary's dispatch and start lag (``"summary"``, ``"summary_start"``) and the
    dispatch lag of every trigger apart, from one read (``monitoring.lateness``: the monitoring
    page's definition)."""
    window, within = HOUR
    samples = read(
        Occurrence.objects.all(),
        now=now,
        within=within,
        triggers=SUMMARY_TRIGGERS + APART_TRIGGERS,
    )
    summary = [sample for sample in samples if sample.trigger in SUMMARY_TRIGGERS]
    result = {
        "summary": figures(summary, Lag.DISPATCH, window).as_dict(),
        "summary_start": figures(summary, Lag.START, window).as_dict(),
    }
    for trigger in Trigger:
        mine = [sample for sample in samples if sample.trigger == trigger]
        result[trigger.value] = figures(mine, Lag.DISPATCH, window).as_dict()
    return result
