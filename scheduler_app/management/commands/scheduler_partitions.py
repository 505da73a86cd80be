"""``manage.py scheduler_partitions [list] [--create-ahead N] [--drop-before DATE]``."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scheduler_app.clock import SystemClock
from scheduler_app.conf import get_settings
from scheduler_app.models import FINAL_STATES
from scheduler_app.partitions import ddl
from scheduler_app.partitions.drop import drop_before
from scheduler_app.partitions.maintain import create_ahead
from scheduler_app.partitions.ranges import Interval

NOT_PARTITIONED = (
    "the occurrence ledger is not partitioned: partitions need PostgreSQL and migration "
    "0014_partition_ledger (manage.py migrate scheduler_app)"
)


class Command(BaseCommand):
    help = (
        "List the occurrence ledger's partitions (PostgreSQL), create those of the coming "
        "periods, or drop those wholly older than a date (keeping the rows retention keeps)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", nargs="?", choices=["list"], default="list")
        group = parser.add_mutually_exclusive_group()
        group.add_argument(
            "--create-ahead",
            type=int,
            metavar="N",
            help="create the partitions of the current period and the N after it",
        )
        group.add_argument(
            "--drop-before",
            metavar="DATE",
            help="drop the partitions wholly older than DATE (UTC, e.g. 2026-01-01); rows not "
            "finished by then and each schedule's latest are kept",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if not ddl.is_partitioned():
            raise CommandError(NOT_PARTITIONED)
        now = SystemClock().now()
        if options["create_ahead"] is not None:
            self.create(now, options["create_ahead"])
        elif options["drop_before"] is not None:
            self.drop(now, options["drop_before"])
        self.list()

    def create(self, now: datetime, count: int) -> None:
        if not 0 <= count <= 1000:
            raise CommandError(f"--create-ahead must be from 0 to 1000, not {count}")
        interval = Interval(get_settings().PARTITION_INTERVAL)
        report = create_ahead(now, count=count, interval=interval)
        if report.busy:
            raise CommandError("another process is changing the partitions; try again shortly")
        self.stdout.write(
            f"created {len(report.created)} partition(s) ({interval} each), "
            f"moved {report.moved} row(s) out of DEFAULT"
        )

    def drop(self, now: datetime, text: str) -> None:
        cutoff = parse_date(text)
        if cutoff > now:
            raise CommandError(f"--drop-before {text} is in the future; give a past date")
        report = drop_before(cutoff, FINAL_STATES)
        if report.busy:
            raise CommandError("another process is changing the partitions; try again shortly")
        self.stdout.write(
            f"dropped {len(report.partitions)} partition(s) before {cutoff:%Y-%m-%d %H:%M} UTC: "
            f"{report.rows} occurrence(s) and {report.attempts} attempt(s) removed, "
            f"{report.kept} kept (moved to DEFAULT)"
        )

    def list(self) -> None:
        self.stdout.write(f"{'partition':<44} {'from (UTC)':<12} {'to (UTC)':<12} rows (estimate)")
        for partition in ddl.partitions():
            span = partition.range
            start, end = (
                ("DEFAULT", "")
                if span is None
                else (f"{span.start:%Y-%m-%d}", f"{span.end:%Y-%m-%d}")
            )
            rows = "?" if partition.estimated_rows < 0 else str(partition.estimated_rows)
            self.stdout.write(f"{partition.name:<44} {start:<12} {end:<12} {rows}")


def parse_date(text: str) -> datetime:
    """``2026-01-01`` or an ISO date-time; without an offset it is UTC."""
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError:
        raise CommandError(
            f"--drop-before: {text!r} is not a date; write it as 2026-01-01 (UTC)"
        ) from None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
