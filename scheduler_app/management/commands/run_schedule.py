"""``manage.py run_schedule REF``: run a schedule once now, outside its rule.

The occurrence records who asked (``requested_by``, the admin's "Requested by"): ``--by``, else
the operating-system user, as ``pause_schedule`` and ``resume_schedule`` name theirs. The
service records no name for a system actor, so the command writes it in the same transaction
that creates the row: the beat never sees the occurrence without it.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.db import transaction

from scheduler_app.errors import SchedulerError
from scheduler_app.management.commands._oneline import OneLineErrors
from scheduler_app.management.commands._schedule_cli import dumps, find_schedule, iso, operator_name
from scheduler_app.models import Occurrence
from scheduler_app.safety.actors import COMMAND
from scheduler_app.services.operator import run_now


class Command(OneLineErrors):
    help = "Run a schedule (by id, key or name) once now; its rule is not changed."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("schedule", help="the schedule's id, key or name")
        parser.add_argument("--reason", default="", help="why (stored on the occurrence)")
        parser.add_argument(
            "--by", default=None, help="who asked (default: the operating-system user)"
        )
        parser.add_argument(
            "--ignore-overlap",
            action="store_true",
            help="run even when an earlier run is still going (default: the overlap policy)",
        )
        parser.add_argument("--json", action="store_true", help="print the occurrence as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        schedule = find_schedule(options["schedule"])
        label = f"{schedule.name or schedule.task} ({schedule.pk})"
        try:
            with transaction.atomic():
                occurrence = run_now(
                    schedule,
                    user=COMMAND,
                    reason=options["reason"] or "manage.py run_schedule",
                    respect_overlap=not options["ignore_overlap"],
                )
                occurrence.requested_by = (options["by"] or operator_name())[:150]
                Occurrence.objects.filter(
                    pk=occurrence.pk, scheduled_for=occurrence.scheduled_for, requested_by=""
                ).update(requested_by=occurrence.requested_by)
        except SchedulerError as exc:
            raise CommandError(f"cannot run {label}: {exc}", returncode=1) from exc
        if options["json"]:
            document = {
                "schedule_id": str(schedule.pk),
                "occurrence_id": str(occurrence.pk),
                "state": occurrence.state,
                "reason": occurrence.reason,
                "requested_by": occurrence.requested_by,
                "scheduled_for": iso(occurrence.scheduled_for),
            }
            self.stdout.write(dumps(document))
            return
        if occurrence.state == "pending":
            self.stdout.write(
                f"run of {label} queued as occurrence {occurrence.pk}; "
                "the beat hands it to a worker within its next tick"
            )
        else:
            self.stdout.write(
                f"run of {label} not started: occurrence {occurrence.pk} is "
                f"{occurrence.state} ({occurrence.reason}); --ignore-overlap runs it anyway"
            )
