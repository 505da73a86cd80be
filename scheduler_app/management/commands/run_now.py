"""``manage.py run_now SCHEDULE [--reason TEXT] [--ignore-overlap]``: one run now, outside the
rule (trigger ``manual``). A thin adapter over ``services.run_now``."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from scheduler_app import services
from scheduler_app.errors import SchedulerError
from scheduler_app.management.commands._oneline import OneLineErrors
from scheduler_app.management.commands.backfill import find_schedule


class Command(OneLineErrors):
    help = "Create one occurrence of a schedule now (trigger manual), outside its rule."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("schedule", help="schedule id or key")
        parser.add_argument("--reason", default="", help="why (stored on the occurrence)")
        parser.add_argument(
            "--ignore-overlap",
            action="store_true",
            help="run even if the overlap policy would buffer or skip it",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            schedule = find_schedule(options["schedule"])
            occurrence = services.run_now(
                schedule,
                reason=options["reason"],
                respect_overlap=not options["ignore_overlap"],
            )
        except (SchedulerError, ValueError) as exc:
            raise CommandError(" ".join(str(exc).splitlines()), returncode=2) from None
        self.stdout.write(
            f"occurrence {occurrence.pk} of {schedule} is {occurrence.state} "
            f"(trigger manual, key {occurrence.idempotency_key})"
        )
