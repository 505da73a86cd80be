"""``manage.py pause_schedule REF``: stop new occurrences of a schedule, with a note."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from scheduler_app import services
from scheduler_app.management.commands._oneline import OneLineErrors
from scheduler_app.management.commands._schedule_cli import (
    as_operator,
    dumps,
    find_schedule,
    schedule_row,
)


class Command(OneLineErrors):
    help = "Pause a schedule (by id, key or name): no new occurrences until it is resumed."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("schedule", help="the schedule's id, key or name")
        parser.add_argument("--note", default="", help="why (stored as the pause note)")
        parser.add_argument("--by", default=None, help="who (default: the system user)")
        parser.add_argument("--json", action="store_true", help="print the schedule as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        schedule = find_schedule(options["schedule"])
        was = schedule.status
        schedule = as_operator(services.pause_schedule, schedule, options, f"pause {schedule.pk}")
        if options["json"]:
            self.stdout.write(dumps({**schedule_row(schedule), "changed": was != schedule.status}))
            return
        label = schedule.name or schedule.task
        if was == schedule.status:
            self.stdout.write(f"{label} ({schedule.pk}) was already paused; nothing changed")
        else:
            self.stdout.write(f"paused {label} ({schedule.pk})")
