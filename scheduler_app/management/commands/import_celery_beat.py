"""``manage.py import_celery_beat [--dry-run] [--mode shadow|live] [--json]``: migrate from the
incumbents.

Reads Celery's ``beat_schedule`` and, when its tables exist, django-celery-beat's
``PeriodicTask`` rows. Prints every entry that is not imported (and why) and every entry with
something not carried over; ``-v 2`` prints every entry with the schedule it maps to. The last
line says what was done (or, with ``--dry-run``, what would be). Exit status: 0 when every
entry was imported, 1 when some were refused (the others are imported), 2 for bad arguments.
See docs/migrating.md.
"""

from __future__ import annotations

import json
from typing import Any, TextIO, cast

from celery import current_app
from django.core.management.base import CommandError, CommandParser

from scheduler_app.authoring.celery_beat_import import app_timezone_name, from_beat_schedule
from scheduler_app.authoring.celery_beat_migration import (
    MigrationPlan,
    apply_migration,
    plan_migration,
)
from scheduler_app.authoring.celery_beat_tables import from_django_celery_beat
from scheduler_app.authoring.celery_beat_values import Mapping, Refused, one_line
from scheduler_app.authoring.importing import describe_change
from scheduler_app.clock import SystemClock
from scheduler_app.contract.cli import Progress, add_progress_arguments
from scheduler_app.management.commands._oneline import OneLineErrors

REFUSED = 1
ACTIONS = (("create", "created", "to create"), ("update", "updated", "to update"))


def summary(migration: MigrationPlan, *, applied: bool) -> str:
    """What was done, or in a dry run what would be."""
    plan = migration.plan
    counts = [
        f"{label if applied else todo} {plan.count(action)}" for action, label, todo in ACTIONS
    ]
    counts.append(f"unchanged {plan.count('unchanged')}")
    counts.append(f"not imported {len(migration.refused)}")
    text = ", ".join(counts)
    if applied:
        return f"imported: {text}"
    return f"dry run, nothing written: {text}"


class Command(OneLineErrors):
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
        parser.add_argument(
            "--json", action="store_true", help="Print the mapping and the outcome as JSON."
        )
        add_progress_arguments(parser)

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
            raise CommandError(str(exc), returncode=REFUSED) from None
        migration = plan_migration(mappings, now, mode=options["mode"])
        applied = not options["dry_run"]
        if applied:
            stream = cast(TextIO, self.stderr._out)  # the raw stream: tqdm writes "\r" itself
            bar = Progress(stream, enabled=options["progress"])(
                "importing", len(migration.plan.changes)
            )
            with bar:
                migration = apply_migration(migration, clock=clock, progress=bar.update)
        if options["json"]:
            self.stdout.write(json.dumps(document(migration, applied=applied), indent=2))
        else:
            self._report(migration, verbose=options["verbosity"] >= 2)
            self.stdout.write(summary(migration, applied=applied))
        if migration.refused:
            raise CommandError(
                f"{len(migration.refused)} of {len(migration.mappings)} entries not imported "
                "(see NOT IMPORTED above); fix or remove them and run the command again",
                returncode=REFUSED,
            )

    def _report(self, migration: MigrationPlan, *, verbose: bool) -> None:
        for mapping in migration.mappings:
            refusal = migration.refused.get(mapping.label)
            if not (verbose or refusal or mapping.notes):
                continue
            # Names, sources and reasons echo the entry: one printable line each, whatever
            # it holds (a newline or a lone surrogate would break the report or the terminal).
            self.stdout.write(f"{one_line(mapping.label)}\n    from: {one_line(mapping.source)}")
            change = migration.change_for(mapping.label)
            if refusal:
                self.stdout.write(f"    NOT IMPORTED: {one_line(refusal)}")
            elif change is not None:
                self.stdout.write(f"    to:   {one_line(describe_change(change))}")
            for note in mapping.notes:
                self.stdout.write(f"    note: {one_line(note)}")


def document(migration: MigrationPlan, *, applied: bool) -> dict[str, Any]:
    entries = []
    for mapping in migration.mappings:
        change = migration.change_for(mapping.label)
        entries.append(
            {
                "key": mapping.label,
                "source": mapping.source,
                "action": change.action if change is not None else None,
                "refused": migration.refused.get(mapping.label),
                "notes": list(mapping.notes),
            }
        )
    plan = migration.plan
    counts = {action: plan.count(action) for action in ("create", "update", "unchanged")}
    return {
        "applied": applied,
        "counts": {**counts, "refused": len(migration.refused)},
        "entries": entries,
    }
