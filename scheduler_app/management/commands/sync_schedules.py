"""``manage.py sync_schedules [--dry-run]``: write the @scheduled declarations to the database."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scheduler_app.authoring.sync import sync_schedules


class Command(BaseCommand):
    help = (
        "Create, update (new version), keep or retire the schedules declared with @scheduled; "
        "one line per schedule."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--dry-run", action="store_true", help="show what would change; write nothing"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        report = sync_schedules(dry_run=options["dry_run"])
        for entry in report.entries:
            self.stdout.write(entry.line())
        self.stdout.write(report.summary())
        if not report.ok:
            raise CommandError(
                f"{len(report.errors)} declaration(s) could not be synced (see above)",
                returncode=2,
            )
