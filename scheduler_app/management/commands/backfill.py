"""``manage.py backfill SCHEDULE --start --end [--dry-run] [--max N] [--yes]``.

Creates the missing occurrences (trigger ``backfill``) of a schedule's slots in a past range,
with a progress bar. SCHEDULE is an id or a key. Times without an offset are local to the
schedule's zone. More than ``--max`` (default ``SCHEDULER_BACKFILL_MAX``) new occurrences
need ``--yes``; ``--dry-run`` shows the plan of any size and says when the run would need it.
A thin adapter over ``services.backfill``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from django.core.management.base import CommandParser
from tqdm import tqdm

from scheduler_app import services
from scheduler_app.errors import SchedulerError, ScheduleValidationError
from scheduler_app.management.commands._oneline import OneLineErrors, bad_argument
from scheduler_app.management.commands._schedule_cli import find_schedule
from scheduler_app.models import OverlapPolicy, Schedule
from scheduler_app.safety.actors import COMMAND
from scheduler_app.services.backfills import BackfillPlan, backfill_max, backfill_slots

CHUNK = 500
"""Slots written per transaction (and per step of the progress bar)."""


class Command(OneLineErrors):
    help = (
        "Create the missing occurrences of a schedule's slots in a past range (trigger backfill)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("schedule", help="schedule id or key")
        parser.add_argument("--start", required=True, metavar="ISO", help="first instant")
        parser.add_argument("--end", required=True, metavar="ISO", help="last instant (past)")
        parser.add_argument("--dry-run", action="store_true", help="show the plan, write nothing")
        parser.add_argument("--max", type=int, metavar="N", help="refuse more than N without --yes")
        parser.add_argument("--yes", action="store_true", help="confirm more than --max")
        parser.add_argument(
            "--overlap",
            default=OverlapPolicy.BUFFER_ALL.value,
            choices=OverlapPolicy.values,
            help="overlap policy for these occurrences (default buffer_all)",
        )
        parser.add_argument("--reason", default="", help="why (stored on each occurrence)")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            schedule = find_schedule(options["schedule"])
            zone = ZoneInfo(schedule.timezone)
            start = _instant(options["start"], zone, "--start")
            end = _instant(options["end"], zone, "--end")
            limit = options["max"] if options["max"] is not None else backfill_max()
            if limit < 0:
                raise ValueError(f"--max: must be 0 or more, got {limit}")
            plan = services.backfill(
                schedule,
                start=start,
                end=end,
                max_count=limit,
                dry_run=True,
                overlap=options["overlap"],
                user=COMMAND,
                confirm_over_max=True,
            )
            self.stdout.write(_describe(plan, schedule))
            if options["dry_run"]:  # the plan, whatever its size: the run is what needs --yes
                if plan.over_max:
                    self.stdout.write(
                        f"dry run: the real run creates {plan.new} occurrences, more than --max "
                        f"{limit}: it needs --yes (or a narrower range)"
                    )
                return
            if plan.over_max and not options["yes"]:
                raise ValueError(
                    f"this creates {plan.new} occurrences, more than --max {limit}; "
                    "narrow the range or add --yes"
                )
            created = self._create(schedule, start, end, options)
        except ScheduleValidationError as exc:
            raise bad_argument(f"{exc.field}: {exc.message}") from None
        except (SchedulerError, ValueError) as exc:
            raise bad_argument(str(exc)) from None
        self.stdout.write(f"created {created} occurrence(s)")

    def _create(
        self, schedule: Schedule, start: datetime, end: datetime, options: dict[str, Any]
    ) -> int:
        slots = backfill_slots(schedule, start, end)
        created = 0
        with tqdm(total=len(slots), unit="slot", disable=None, file=self.stderr) as bar:
            for index in range(0, len(slots), CHUNK):
                part = slots[index : index + CHUNK]
                result = services.backfill(
                    schedule,
                    start=part[0],
                    end=part[-1],
                    overlap=options["overlap"],
                    reason=options["reason"],
                    confirm_over_max=True,
                    user=COMMAND,
                )
                created += result.created
                bar.update(len(part))
        return created


def _instant(text: str, zone: ZoneInfo, option: str) -> datetime:
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(
            f"{option}: {text[:60]!r} is not an ISO 8601 date-time, e.g. 2026-03-01T00:00"
        ) from None
    return value if value.tzinfo is not None else value.replace(tzinfo=zone)


def _describe(plan: BackfillPlan, schedule: Schedule) -> str:
    zone = ZoneInfo(schedule.timezone)
    first = "-" if plan.first is None else plan.first.astimezone(zone).isoformat(sep=" ")
    last = "-" if plan.last is None else plan.last.astimezone(zone).isoformat(sep=" ")
    cost = "-" if plan.estimated_cost is None else f"{plan.estimated_cost:g}"
    return (
        f"{schedule}: {plan.count} slot(s) in range, {plan.existing} already have an occurrence, "
        f"{plan.new} new; first {first}, last {last}; estimated cost {cost}; "
        f"overlap {plan.overlap}"
    )
