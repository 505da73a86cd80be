"""Example tasks used by the demo (and by the end-to-end tests)."""

from __future__ import annotations

import json
import logging
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from celery import shared_task

from scheduler_app.context import current_occurrence
from scheduler_app.declarations import scheduled

logger = logging.getLogger(__name__)


@shared_task(name="demo.ping", schedulable=True)
def ping(**kwargs: object) -> str:
    logger.info("demo.ping ran with %s", kwargs)
    return "pong"


@shared_task(name="demo.record_context", schedulable=True)
def record_context(record_to: str | None = None, **kwargs: object) -> dict[str, Any] | None:
    """Return the occurrence context this run sees (stored by the result backend).

    With ``record_to`` (a file path) every execution also appends one JSON line to that file,
    so a caller can count executions.
    """
    occurrence = current_occurrence()
    seen = json.loads(json.dumps(asdict(occurrence), default=str)) if occurrence else None
    logger.info("demo.record_context ran with %s in %s", kwargs, seen)
    if record_to:
        with Path(record_to).open("a", encoding="utf-8") as out:
            out.write(json.dumps({"kwargs": kwargs, "occurrence": seen}) + "\n")
    return seen


# -- schedules declared in code (synced at beat start and by `manage.py sync_schedules`) ------


BRIEFING_PERIODS = {"daily": "yesterday", "weekly": "the past week"}


@scheduled(
    cron="0 8 * * MON-FRI",
    timezone="Europe/Paris",
    objective="daily",
    misfire="fire_once",
    deadline="2h",
    expect_success_every="26h",
)
@scheduled(
    cron="0 9 * * MON",
    timezone="Europe/Paris",
    objective="weekly",
    misfire="fire_once",
    deadline="4h",
)
@shared_task(name="demo.briefing", schedulable=True)
def briefing() -> str:
    """One task, two schedules: the objective says which briefing this run is."""
    occurrence = current_occurrence()
    if occurrence is None:
        return "daily briefing (not scheduled)"
    # The business window: from the previous slot to this one, in the schedule's zone.
    zone = ZoneInfo(occurrence.timezone)
    start, end = (moment.astimezone(zone) for moment in occurrence.window)
    logger.info(
        "demo.briefing: %s briefing covering %s (%s .. %s)",
        occurrence.objective,
        BRIEFING_PERIODS.get(occurrence.objective, "the last period"),
        start.isoformat(timespec="minutes"),
        end.isoformat(timespec="minutes"),
    )
    return f"{occurrence.objective} briefing for {start:%Y-%m-%d %H:%M} .. {end:%Y-%m-%d %H:%M}"


@scheduled(
    every="1h",
    anchor=datetime(2026, 1, 1, tzinfo=UTC),  # on the hour, not an hour after the first sync
    misfire="fire_once",
    overlap="skip",
    jitter="30s",
    expect_success_every="3h",
)
@shared_task(name="demo.hourly_sync", schedulable=True)
def hourly_sync() -> str:
    """After downtime, one run catches everything up: late slots collapse into the last one."""
    occurrence = current_occurrence()
    window = occurrence.window if occurrence else None
    logger.info("demo.hourly_sync: syncing changes in %s", window)
    return "synced"


@scheduled(
    cron="30 6 * * SUN",
    timezone="UTC",
    misfire="skip",
    max_attempts=5,
    retry_delay="5m",
    kwargs={"checks": ["disk", "certificates", "backups"]},
)
@shared_task(name="demo.infrastructure_check", schedulable=True)
def infrastructure_check(checks: list[str] | None = None) -> dict[str, str]:
    """The weekly infrastructure check; a missed week is not run late (misfire skip)."""
    results = {check: "ok" for check in checks or []}
    logger.info("demo.infrastructure_check: %s", results)
    return results


# -- one-time runs created by application events (see project/demo/events.py) -----------------


@shared_task(name="demo.lead_reminder", schedulable=True)
def lead_reminder(lead_id: int) -> str:
    """D+7 after a lead was sent: remind the salesperson (once per lead: the key says so)."""
    logger.info("demo.lead_reminder: follow up lead %s", lead_id)
    return f"reminded about lead {lead_id}"


@shared_task(name="demo.digest", schedulable=True)
def digest(topic: str) -> str:
    """Debounced: one digest after a burst of changes, covering the whole burst."""
    occurrence = current_occurrence()
    window = occurrence.window if occurrence else None
    logger.info("demo.digest: changes to %s during %s", topic, window)
    return f"digest of {topic}"


@shared_task(name="demo.echo", schedulable=True)
def echo(*args: object, **kwargs: object) -> dict[str, Any]:
    """Return the positional and keyword arguments it ran with (positional-args tests)."""
    logger.info("demo.echo ran with %s %s", args, kwargs)
    return {"args": list(args), "kwargs": kwargs}
