"""Shared by the everyday operator commands (list/pause/resume/run_schedule): finding a
schedule by id, key or name with one clear error, and printing JSON."""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from typing import Any

from django.core.management.base import CommandError

from scheduler_app.models import Occurrence, Schedule

NOT_FOUND = 2
"""A schedule that does not exist is a bad argument, like any other (exit 2)."""
"""Exit status when the schedule does not exist (bad arguments exit 2)."""


def find_schedule(reference: str) -> Schedule:
    """The schedule whose id, key or name is ``reference``; a CommandError otherwise."""
    query = Schedule.objects.all()
    try:
        return query.get(pk=uuid.UUID(reference))
    except (ValueError, Schedule.DoesNotExist):
        pass
    by_key = list(query.filter(key=reference)[:2]) if reference else []
    if len(by_key) == 1:
        return by_key[0]
    by_name = list(query.filter(name=reference)[:2]) if reference else []
    if len(by_name) == 1:
        return by_name[0]
    if len(by_name) > 1 or len(by_key) > 1:
        raise CommandError(
            f"{reference!r} names several schedules; give the id (see list_schedules)",
            returncode=2,
        )
    raise CommandError(
        f"no schedule with id, key or name {reference!r}; list them with "
        "`python manage.py list_schedules`",
        returncode=NOT_FOUND,
    )


def iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def schedule_row(schedule: Schedule, last: Occurrence | None = None) -> dict[str, Any]:
    """What list/pause/resume print about a schedule (never the payload)."""
    return {
        "id": str(schedule.pk),
        "name": schedule.name,
        "key": schedule.key,
        "task": schedule.task,
        "kind": schedule.kind,
        "rule": schedule.rule,
        "timezone": schedule.timezone,
        "status": schedule.status,
        "next_run_at": iso(schedule.next_run_at),
        "last_run": None
        if last is None
        else {"id": str(last.pk), "scheduled_for": iso(last.scheduled_for), "state": last.state},
        "pause_note": schedule.pause_note,
    }


def dumps(document: Any) -> str:
    return json.dumps(document, indent=2, default=str)
