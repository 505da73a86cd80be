"""``manage.py list_schedules``: every schedule with its next run and its last occurrence.

Like the admin list, it names an unnamed schedule by its key, else by its task and rule (the
admin's ``display_name``), and never shows what will not happen: a schedule that is paused,
cancelled, awaiting approval or covered by a kill switch has no next run (``null`` in
``--json``), and says why (``paused``, ``kill_switched``).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser
from django.db.models import OuterRef, Subquery

from scheduler_app.admin.display import display_name
from scheduler_app.management.commands._oneline import OneLineErrors
from scheduler_app.management.commands._schedule_cli import aligned, dumps, schedule_row
from scheduler_app.models import Occurrence, Schedule, ScheduleStatus
from scheduler_app.safety.killswitch import Switches, switches_on


class Command(OneLineErrors):
    help = "List schedules: id, name, task, rule, status, next run and the last occurrence."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--status",
            choices=[choice.value for choice in ScheduleStatus],
            help="only schedules in this status",
        )
        parser.add_argument("--task", help="only schedules of this task name")
        parser.add_argument("--tenant", help="only schedules of this tenant")
        parser.add_argument("--limit", type=int, default=1000, help="at most this many rows")
        parser.add_argument("--json", action="store_true", help="print JSON for scripts")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["limit"] < 1:
            self._reject_arguments(f"--limit must be 1 or more, not {options['limit']}")
        latest = Occurrence.objects.filter(schedule=OuterRef("pk")).order_by("-scheduled_for")
        query = Schedule.objects.annotate(
            last_id=Subquery(latest.values("pk")[:1]),
        ).order_by("name", "task", "pk")
        for field in ("status", "task", "tenant"):
            if options[field] is not None:
                query = query.filter(**{field: options[field]})
        schedules = list(query[: options["limit"]])
        last = Occurrence.objects.in_bulk([s.last_id for s in schedules if s.last_id])
        switches = switches_on()
        rows = [listed_row(s, last.get(s.last_id), switches) for s in schedules]
        if options["json"]:
            self.stdout.write(dumps(rows))
            return
        if not rows:
            self.stdout.write("no schedules")
            return
        self.stdout.write(table(rows))


def listed_row(schedule: Schedule, last: Occurrence | None, switches: Switches) -> dict[str, Any]:
    """``schedule_row`` with ``next_run_at`` only when it will happen, ``kill_switched``, and
    ``display_name``: the admin's name for it (its name or key; an unnamed schedule reads as its
    task and rule, never as ``-``)."""
    row = schedule_row(schedule, last)
    row["display_name"] = display_name(schedule)
    row["kill_switched"] = switches.stops(schedule.tenant, schedule.task)
    if schedule.status != ScheduleStatus.ACTIVE or row["kill_switched"]:
        row["next_run_at"] = None
    return row


def table(rows: list[dict[str, Any]]) -> str:
    header = ("id", "name", "task", "rule", "status", "next run (UTC)", "last run")
    lines = [
        (
            row["id"],
            row["display_name"],
            row["task"],
            f"{row['kind']} {rule_text(row)} ({row['timezone']})",
            row["status"] + " (kill switch)" * row["kill_switched"],
            (row["next_run_at"] or "-")[:19],
            "-" if row["last_run"] is None else row["last_run"]["state"],
        )
        for row in rows
    ]
    return "\n".join(aligned([header, *lines]))


def rule_text(row: dict[str, Any]) -> str:
    """The rule as typed: intervals are stored in seconds."""
    return f"{row['rule']}s" if row["kind"] == "interval" else str(row["rule"])
