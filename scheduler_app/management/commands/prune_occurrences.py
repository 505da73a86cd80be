"""``manage.py prune_occurrences --older-than 90d [--dry-run] [--batch N]``."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scheduler_app.clock import SystemClock
from scheduler_app.errors import ScheduleValidationError
from scheduler_app.monitoring.retention import DEFAULT_BATCH, parse_age, prune


class Command(BaseCommand):
    help = (
        "Delete finished occurrences (skipped ones included) older than --older-than, in "
        "batches (on a partitioned ledger, partitions wholly older go whole first); never a "
        "schedule's latest occurrence; the schedules' counters are kept."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--older-than", required=True, help="age, e.g. 90d, 12h, P30D")
        parser.add_argument("--dry-run", action="store_true", help="count, delete nothing")
        parser.add_argument(
            "--batch", type=int, default=DEFAULT_BATCH, help="rows per transaction (1000)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["batch"] < 1:
            raise CommandError("--batch must be at least 1")
        try:
            age = parse_age(options["older_than"])
        except ScheduleValidationError as exc:
            raise CommandError(f"--older-than: {exc.message}") from None
        report = prune(age, SystemClock().now(), batch=options["batch"], dry_run=options["dry_run"])
        cutoff = report.cutoff.isoformat(timespec="seconds")
        if report.dry_run:
            self.stdout.write(
                f"would delete {report.deleted} occurrence(s) finished before {cutoff}"
            )
        else:
            dropped = report.partitions
            whole = f" and {len(dropped)} partition(s) dropped whole" if dropped else ""
            self.stdout.write(
                f"deleted {report.deleted} occurrence(s) finished before {cutoff} "
                f"in {report.batches} batch(es){whole}"
            )
