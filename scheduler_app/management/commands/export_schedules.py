"""``manage.py export_schedules [--output FILE]``: every schedule as ``schedule.v1`` JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from scheduler_app.contract import export_all


class Command(BaseCommand):
    help = "Export every schedule as schedule.v1 JSON (docs/contract.md); stdout by default."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--output", "-o", help="Write to this file instead of stdout.")

    def handle(self, *args: Any, **options: Any) -> None:
        text = export_all()
        if options["output"]:
            Path(options["output"]).write_text(text, encoding="utf-8")
            count = text.count('"contract": "schedule.v1"') - 1
            self.stderr.write(f"exported {count} schedule(s) to {options['output']}")
        else:
            self.stdout.write(text, ending="")
