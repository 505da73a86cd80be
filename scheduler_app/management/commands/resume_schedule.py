"""``manage.py resume_schedule REF``: resume a paused schedule, after showing what the
catch-up will create (``--yes`` to confirm without a prompt)."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import CommandError, CommandParser

from scheduler_app import services
from scheduler_app.management.commands._oneline import OneLineErrors
from scheduler_app.management.commands._schedule_cli import (
    as_operator,
    dumps,
    find_schedule,
    iso,
    schedule_row,
)
from scheduler_app.models import ScheduleStatus

NOT_CONFIRMED = 1
SHOWN = 5
"""Slots listed by name in the preview; the rest are counted."""


class Command(OneLineErrors):
    help = "Resume a paused schedule; shows the catch-up it will create and asks first."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("schedule", help="the schedule's id, key or name")
        parser.add_argument("--yes", action="store_true", help="resume without asking")
        parser.add_argument("--note", default="", help="why (replaces the pause note)")
        parser.add_argument("--by", default=None, help="who (default: the system user)")
        parser.add_argument("--json", action="store_true", help="print preview and result as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        schedule = find_schedule(options["schedule"])
        label = f"{schedule.name or schedule.task} ({schedule.pk})"
        if schedule.status == ScheduleStatus.ACTIVE:
            self._say(options, f"{label} is already active; nothing changed", schedule, None)
            return
        if schedule.status != ScheduleStatus.PAUSED:
            raise CommandError(
                f"{label} is {schedule.status}; only a paused schedule can be resumed",
                returncode=1,
            )
        preview = services.preview_resume(schedule)
        summary = describe(preview)
        if preview.count and not options["yes"]:
            self._say(options, summary, schedule, preview)
            if options["json"] or not sys.stdin.isatty():
                raise CommandError(
                    f"{label} not resumed: confirm the catch-up with --yes",
                    returncode=NOT_CONFIRMED,
                )
            if input("Resume? [y/N] ").strip().lower() not in ("y", "yes"):
                raise CommandError(f"{label} not resumed", returncode=NOT_CONFIRMED)
        schedule = as_operator(services.resume_schedule, schedule, options, f"resume {label}")
        self._say(options, f"resumed {label}: {summary_done(preview)}", schedule, preview)

    def _say(self, options: dict[str, Any], text: str, schedule: Any, preview: Any) -> None:
        if not options["json"]:
            self.stdout.write(text)
            return
        document = schedule_row(schedule)
        if preview is not None:
            document["catch_up"] = {
                "count": preview.count,
                "catch_up": preview.caught_up,
                "on_time": preview.count - preview.caught_up,
                "skipped": preview.skipped,
                "slots": [iso(slot.scheduled_for) for slot in preview.emit],
                "next_run_at": iso(preview.next_run_at),
            }
        self.stdout.write(dumps(document))


def describe(preview: Any) -> str:
    """What resuming now will do, in words."""
    if not preview.count:
        head = "resuming creates no occurrence"
    else:
        slots = ", ".join(iso(slot.scheduled_for) or "" for slot in preview.emit[:SHOWN])
        more = f" and {preview.count - SHOWN} more" if preview.count > SHOWN else ""
        head = f"resuming creates {created(preview)} now: {slots}{more}"
    skipped = f"; {preview.skipped} missed slot(s) skipped by the misfire policy"
    tail = f"; then next run at {iso(preview.next_run_at) or 'never'}"
    return head + (skipped if preview.skipped else "") + tail


def created(preview: Any) -> str:
    """``3 occurrence(s) (2 catch-up, 1 on time)``: as they are recorded (a slot still within
    ``max_lateness`` is an on-time ``scheduled`` run, not a catch-up)."""
    on_time = preview.count - preview.caught_up
    return f"{preview.count} occurrence(s) ({preview.caught_up} catch-up, {on_time} on time)"


def summary_done(preview: Any) -> str:
    return (
        f"{created(preview)} created"
        + (f", {preview.skipped} missed slot(s) skipped" if preview.skipped else "")
        + f"; next run at {iso(preview.next_run_at) or 'never'}"
    )
