"""``manage.py import_celery_beat [--dry-run] [--mode shadow|live]``: migrate from the incumbents.

Reads Celery's ``beat_schedule`` and, when its tables exist, django-celery-beat's
``PeriodicTask`` rows; shows each source entry with the schedule it maps to, what is not carried
over, and what is refused and why. See docs/migrating.md.
"""

from __future__ import annotations

from typing import Any

from celery import current_app
from django.core.management.base import BaseCommand, CommandError, CommandParser

from scheduler_app.celery_beat_import import (
    Mapping,
    MigrationPlan,
    Refused,
    app_timezone_name,
    apply_migration,
    from_beat_schedule,
    from_django_celery_beat,
    plan_migration,
)
from scheduler_app.clock import SystemClock
from scheduler_app.errors import SchedulerError
from scheduler_app.importing import describe_change


class Command(BaseCommand):
    help = "Create schedules from Celery's beat_schedule and django-celery-beat's PeriodicTasks."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--dry-run", action="store_true", help="Show the mapping; write nothing."
        )
        parser.add_argument(
            "--mode",
            choices=("live", "shadow"),
            help="Set the schedules' mode (shadow: recorded, not run). Default: new schedules "
            "are live, existing ones keep their mode.",
        )
        parser.add_argument(
            "--source",
            choices=("all", "beat-schedule", "django-celery-beat"),
            default="all",
            help="Which incumbent to read (default: both).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        clock = SystemClock()
        now = clock.now()
        mappings: list[Mapping] = []
        try:
            if options["source"] in ("all", "beat-schedule"):
                app = current_app
                entries = app.conf.beat_schedule or {}
                mappings += from_beat_schedule(entries, app_timezone_name(app))
            if options["source"] in ("all", "django-celery-beat"):
                mappings += from_django_celery_beat(now)
        except Refused as exc:
            raise CommandError(str(exc)) from None
        migration = plan_migration(mappings, now, mode=options["mode"])
        self._report(migration)
        if options["dry_run"]:
            self.stdout.write("dry run: nothing written")
            return
        try:
            apply_migration(migration, clock=clock)
        except SchedulerError as exc:
            raise CommandError(f"nothing was imported: {exc}") from None

    def _report(self, migration: MigrationPlan) -> None:
        for mapping in migration.mappings:
            self.stdout.write(f"{mapping.label}\n    from: {mapping.source}")
            change = migration.change_for(mapping.label)
            refusal = migration.refused.get(mapping.label)
            if refusal:
                self.stdout.write(f"    NOT IMPORTED: {refusal}")
            elif change is not None:
                self.stdout.write(f"    to:   {describe_change(change)}")
            for note in mapping.notes:
                self.stdout.write(f"    note: {note}")
        plan = migration.plan
        self.stdout.write(
            f"{plan.count('create')} to create, {plan.count('update')} to update, "
            f"{plan.count('unchanged')} unchanged, {len(migration.refused)} not imported"
        )
        if migration.refused:
            self.stderr.write(
                f"{len(migration.refused)} entr(y/ies) not imported; see NOT IMPORTED above"
            )
