"""``manage.py export_audit [--schedule ID] [--since ISO] [--format jsonl|csv] [-o FILE]``.

The audit trail: every recorded action on schedules (who, when, what, why, at which version)
and every kill-switch change, merged in time order (oldest first). ``--schedule`` takes a
schedule's UUID (its trail outlives the schedule, so a deleted one's UUID works too), key or
name; its export holds its own entries and the kill-switch changes that covered it.
``--since`` (inclusive) bounds the instant. stdout by default; a file is written atomically.
"""

from __future__ import annotations

import heapq
import io
import json
import uuid
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import QuerySet

from scheduler_app.contract.cli import BAD_ARGUMENT, instant_argument, output_path, write_output
from scheduler_app.management.commands._schedule_cli import find_schedule
from scheduler_app.models import KillSwitchEvent, Schedule, ScheduleAuditEvent
from scheduler_app.safety import audit
from scheduler_app.safety.spreadsheet import csv_writer

COLUMNS = (
    "at",
    "kind",
    "schedule_id",
    "action",
    "by",
    "reason",
    "version",
    "scope",
    "target",
    "details",
)
"""Every record has these keys (``null`` where they do not apply): the CSV header."""
CHUNK = 1000


class Command(BaseCommand):
    help = (
        "Export the audit trail (schedule actions and kill-switch changes, oldest first) as "
        "JSON Lines or CSV; stdout by default."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--schedule", help="Only this schedule (its UUID, even once deleted; key or name)."
        )
        parser.add_argument("--since", help="Entries at or after this instant (ISO 8601).")
        parser.add_argument(
            "--format", choices=("jsonl", "csv"), default="jsonl", help="Default: jsonl."
        )
        parser.add_argument("--output", "-o", help="Write to this file instead of stdout.")

    def handle(self, *args: Any, **options: Any) -> None:
        target = output_path(options["output"]) if options["output"] else None
        since = instant_argument(options["since"], "--since") if options["since"] else None
        entries, switches = selected(options["schedule"], since)
        records = heapq.merge(
            (schedule_record(row) for row in entries.iterator(chunk_size=CHUNK)),
            (switch_record(row) for row in switches.iterator(chunk_size=CHUNK)),
            key=lambda record: datetime.fromisoformat(record["at"]),
        )
        pieces = csv_lines(records) if options["format"] == "csv" else json_lines(records)
        write_output(self.stdout, target, pieces)


def selected(
    reference: str | None, since: datetime | None
) -> tuple[QuerySet[ScheduleAuditEvent], QuerySet[KillSwitchEvent]]:
    """The entries and the kill-switch events to export, each ordered oldest first."""
    entries = ScheduleAuditEvent.objects.all()
    switches = KillSwitchEvent.objects.all()
    if reference is not None:
        schedule_id, schedule = schedule_for(reference)
        entries = audit.trail([schedule_id])
        # A deleted schedule's tenant and task are unknown: its switches cannot be chosen.
        switches = audit.switch_events_covering(schedule) if schedule else switches.none()
    if since is not None:
        entries = entries.filter(at__gte=since)
        switches = switches.filter(at__gte=since)
    return entries.order_by("at", "id"), switches.order_by("at", "id")


def schedule_for(reference: str) -> tuple[uuid.UUID, Schedule | None]:
    """The schedule's id, and the schedule when it still exists."""
    try:
        schedule_id = uuid.UUID(reference)
    except ValueError:
        schedule = find_schedule(reference)  # by key or name: a CommandError when unknown
        return schedule.pk, schedule
    found = Schedule.objects.filter(pk=schedule_id).first()
    if found is None and not ScheduleAuditEvent.objects.filter(schedule_id=schedule_id).exists():
        raise CommandError(
            f"no schedule and no audit entry with id {reference}; list schedules with "
            "`python manage.py list_schedules`",
            returncode=BAD_ARGUMENT,
        )
    return schedule_id, found


def schedule_record(row: ScheduleAuditEvent) -> dict[str, Any]:
    return {
        **dict.fromkeys(COLUMNS),  # the keys in the header's order, null where unset
        "at": row.at.isoformat(),
        "kind": "schedule",
        "schedule_id": str(row.schedule_id),
        "action": row.action,
        "by": row.by,
        "reason": row.reason,
        "version": row.version,
        "details": row.details,
    }


def switch_record(row: KillSwitchEvent) -> dict[str, Any]:
    return {
        **dict.fromkeys(COLUMNS),
        "at": row.at.isoformat(),
        "kind": "kill_switch",
        "action": "kill_switch_on" if row.enabled else "kill_switch_off",
        "by": row.by,
        "reason": row.reason,
        "scope": row.scope,
        "target": row.target,
        "details": {},
    }


def json_lines(records: Iterable[dict[str, Any]]) -> Iterator[str]:
    for record in records:
        yield json.dumps(record, ensure_ascii=False) + "\n"


def csv_lines(records: Iterable[dict[str, Any]]) -> Iterator[str]:
    """CSV with a header; ``details`` as a JSON object, empty cells for nulls; a text cell a
    spreadsheet would run as a formula starts with ``'`` (``safety.spreadsheet``)."""
    buffer = io.StringIO()
    writer = csv_writer(buffer, COLUMNS, lineterminator="\n")
    writer.writeheader()
    for record in records:
        writer.writerow({**record, "details": json.dumps(record["details"], ensure_ascii=False)})
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    yield buffer.getvalue()
