"""``manage.py check_schedules``: is every schedule running as expected? For cron, probes, Nagios.

Exit status: 0 all is well, 1 a problem (listed), 2 could not check (e.g. no database).
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.db import DatabaseError

from scheduler_app.clock import SystemClock
from scheduler_app.conf import get_settings
from scheduler_app.monitoring.health import beat_health
from scheduler_app.monitoring.monitor import run_monitor

OK, PROBLEM, UNKNOWN = 0, 1, 2


class Command(BaseCommand):
    help = (
        "List schedules without a successful run within expected_every, active schedules "
        "overdue beyond max_lateness + margin, and a beat that stopped ticking. "
        "Exit 0: ok, 1: problem, 2: could not check."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        now = SystemClock().now()
        try:
            report = run_monitor(now)
            beat = beat_health(now, get_settings().HEALTH_STALE)
        except DatabaseError as exc:
            self.stderr.write(f"could not check the schedules: {type(exc).__name__}: {exc}")
            raise SystemExit(UNKNOWN) from None
        lines = ([] if beat.ok else [f"beat: {beat.message}"]) + [
            problem.message for problem in report.problems
        ]
        if not report.complete:
            lines.append("(more problems than one pass examines; fix these and run it again)")
        if options["json"]:
            self.stdout.write(
                json.dumps(
                    {
                        "ok": not lines,
                        "checked_at": now.isoformat(),
                        "beat": {"ok": beat.ok, "message": beat.message},
                        "problems": [problem.as_dict() for problem in report.problems],
                        "complete": report.complete,
                    },
                    indent=2,
                )
            )
        elif lines:
            for line in lines:
                self.stdout.write(line)
        else:
            self.stdout.write(f"ok: every schedule runs as expected ({beat.message})")
        if lines:
            raise SystemExit(PROBLEM)
