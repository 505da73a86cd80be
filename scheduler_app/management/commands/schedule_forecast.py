"""``manage.py schedule_forecast``: the load ahead, counted from every active schedule.

    python manage.py schedule_forecast --days 2 --rate 50
    python manage.py schedule_forecast --from 2027-03-27T00:00:00Z --days 3 --json

Prints the slots per day and per tenant and target, the busiest minutes (UTC) with the
schedules behind them and, with ``--rate``, the jitter that would spread each of them under
that many runs per second; and the days a time zone changes its offset or a holiday excludes
slots. Slots are counted before jitter, with windows, holidays and bounds applied.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from typing import Any

from django.core.management.base import CommandParser
from django.utils import timezone

from scheduler_app.forecast.counts import MAX_DAYS, Forecast, check_rate, forecast
from scheduler_app.management.commands._oneline import OneLineErrors
from scheduler_app.models import Schedule, ScheduleStatus

LAST_YEAR = 9999
"""A forecast ends up to a week after its start: it starts before the last year a date has."""


class Command(OneLineErrors):
    help = "Count the slots of every active schedule per minute for the next days."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--days", type=int, default=1, help=f"1 to {MAX_DAYS} (default 1)")
        parser.add_argument(
            "--from",
            dest="start",
            help="count from this instant (ISO 8601 with an offset, e.g. 2027-03-27T00:00Z) "
            "instead of now",
        )
        parser.add_argument(
            "--rate", type=float, help="runs per second you can take: the jitter a herd needs"
        )
        parser.add_argument("--top", type=int, default=10, help="busiest minutes listed")
        parser.add_argument("--tenant", help="only schedules of this tenant")
        parser.add_argument("--target", help="only schedules of this target (celery, ...)")
        parser.add_argument("--json", action="store_true", help="print JSON for scripts")

    def handle(self, *args: Any, **options: Any) -> None:
        if not 1 <= options["days"] <= MAX_DAYS:
            self._reject_arguments(f"--days must be 1 to {MAX_DAYS}, not {options['days']}")
        try:
            check_rate(options["rate"])
        except ValueError as exc:
            self._reject_arguments(f"--rate: {exc}")
        if options["top"] < 1:
            self._reject_arguments(f"--top must be 1 or more, not {options['top']}")
        start = _start(self, options["start"])
        query = Schedule.objects.filter(status=ScheduleStatus.ACTIVE).order_by("pk")
        for field in ("tenant", "target"):
            if options[field] is not None:
                query = query.filter(**{field: options[field]})
        result = forecast(
            query.iterator(chunk_size=2000),
            start,
            days=options["days"],
            top=options["top"],
            rate=options["rate"],
        )
        self.stdout.write(dumps(result) if options["json"] else text(result))


def _start(command: Command, value: str | None) -> datetime:
    if value is None:
        return timezone.now().replace(microsecond=0)
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        parsed = None
    if parsed is None or parsed.tzinfo is None or parsed.year >= LAST_YEAR:
        command._reject_arguments(
            f"--from {value!r} is not an ISO 8601 instant with an offset before the year "
            f"{LAST_YEAR}; write e.g. 2027-03-27T00:00:00Z"
        )
    return parsed


def as_data(result: Forecast) -> dict[str, Any]:
    per_day: Counter[str] = Counter()
    for minute, count in result.minutes.items():
        per_day[minute.date().isoformat()] += count
    return {
        "from": result.start.isoformat(),
        "until": result.end.isoformat(),
        "schedules": result.schedules,
        "slots": result.total,
        "per_day": dict(sorted(per_day.items())),
        "per_lane": [
            {"tenant": tenant, "target": target, "slots": count}
            for (tenant, target), count in sorted(result.lanes.items())
        ],
        "busiest": [
            {
                "minute": busy.minute.isoformat(),
                "slots": busy.count,
                "schedules": [{"schedule": name, "slots": n} for name, n in busy.schedules],
                "jitter_seconds": busy.jitter,
            }
            for busy in result.busiest
        ],
        "marked_days": [
            {
                "day": mark.day.isoformat(),
                "kind": mark.kind,
                "what": mark.label,
                "schedules": mark.schedules,
            }
            for mark in result.marked
        ],
        "not_forecast": [{"schedule": name, "why": why} for name, why in result.unforecast],
        "left_out": result.partial,
    }


def dumps(result: Forecast) -> str:
    return json.dumps(as_data(result), indent=2)


def text(result: Forecast) -> str:
    data = as_data(result)
    lines = [
        f"{data['slots']} slot(s) of {data['schedules']} schedule(s) from "
        f"{result.start:%Y-%m-%d %H:%M} to {result.end:%Y-%m-%d %H:%M} UTC (before jitter)",
        "",
        "per day (UTC): " + ", ".join(f"{day} {n}" for day, n in data["per_day"].items()),
        "per tenant and target: "
        + ", ".join(
            f"{row['tenant'] or '-'}/{row['target']} {row['slots']}" for row in data["per_lane"]
        ),
        "",
        "busiest minutes (UTC):",
    ]
    for busy in result.busiest:
        behind = ", ".join(f"{name} x{n}" for name, n in busy.schedules)
        spread = f"; jitter {busy.jitter} s spreads it under the rate" if busy.jitter else ""
        lines.append(f"  {busy.minute:%Y-%m-%d %H:%M}  {busy.count} slot(s): {behind}{spread}")
    for mark in result.marked:
        lines.append(f"{mark.kind} {mark.day}: {mark.label} ({mark.schedules} schedule(s))")
    for name, why in result.unforecast:
        lines.append(f"not forecast: {name}: {why}")
    if result.partial:
        lines.append(
            f"partial: {result.partial} schedule(s) left out after {result.total} slots; "
            "narrow it with --days, --tenant or --target"
        )
    return "\n".join(lines)
