"""Shared by the everyday operator commands (list/pause/resume/run_schedule): finding a
schedule by id, key or name with one clear error, naming the operator, pausing or resuming
it as them, and printing JSON or a table."""

from __future__ import annotations

import getpass
import json
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.core.management.base import CommandError

from scheduler_app.errors import SchedulerError
from scheduler_app.models import Occurrence, Schedule
from scheduler_app.safety.actors import COMMAND

NOT_FOUND = 2
"""A schedule that does not exist is a bad argument, like any other (exit 2)."""


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


def operator_name() -> str:
    try:
        return f"{getpass.getuser()} (manage.py)"
    except (KeyError, OSError):  # no user name in this environment
        return "manage.py"


def as_operator(
    service: Callable[..., Schedule], schedule: Schedule, options: dict[str, Any], what: str
) -> Schedule:
    """``service`` (pause or resume) on the schedule with the command's ``--note`` and
    ``--by``; its refusal is a ``cannot <what>: ...`` error (exit 1)."""
    by = options["by"] or operator_name()
    try:
        return service(schedule.pk, note=options["note"], by=by, user=COMMAND)
    except SchedulerError as exc:
        raise CommandError(f"cannot {what}: {exc}", returncode=1) from exc


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


def aligned(rows: list[tuple[Any, ...]]) -> list[str]:
    """The rows as lines of columns two spaces apart, each as wide as its widest cell."""
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def dumps(document: Any) -> str:
    return json.dumps(document, indent=2, default=str)
