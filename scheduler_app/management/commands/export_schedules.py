"""``manage.py export_schedules [--style native|spec] [--output FILE] [--json]``.

Every schedule as a ``schedule.v1`` file (docs/contract.md); stdout by default. A file is
written atomically. A stored row that cannot be written is listed on stderr and left out; the
command then exits with status 1 (the rest is exported). Bad arguments exit with status 2.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scheduler_app.contract import STYLES, Refusal, ordered_schedules, render_file
from scheduler_app.contract.cli import (
    REFUSED,
    Progress,
    add_progress_arguments,
    output_path,
    write_output,
)
from scheduler_app.models import Schedule


class Command(BaseCommand):
    help = "Export every schedule as schedule.v1 JSON (docs/contract.md); stdout by default."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--output", "-o", help="Write to this file instead of stdout.")
        parser.add_argument(
            "--style",
            choices=STYLES,
            default="native",
            help="native (default): this project's form; spec: the specification's own form.",
        )
        parser.add_argument(
            "--json",
            action="store_true",
            help="With --output: print the summary as JSON on stdout (for scripts).",
        )
        add_progress_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        target = output_path(options["output"]) if options["output"] else None
        if options["json"] and target is None:
            raise CommandError("--json needs --output (stdout holds the export)", returncode=2)
        refused: list[Refusal] = []
        stream = getattr(self.stderr, "_out", sys.stderr)
        bar = Progress(stream, enabled=options["progress"])("exporting", Schedule.objects.count())
        seen = [0]

        def step() -> None:
            seen[0] += 1
            bar.update(1)

        pieces = render_file(ordered_schedules(), options["style"], refused, progress=step)
        try:
            write_output(self.stdout, target, pieces)
        finally:
            bar.close()
        exported = seen[0] - len(refused)
        self._report(exported, refused, target, options)
        if refused:
            raise CommandError(
                f"{len(refused)} schedule(s) could not be exported (listed above); "
                f"the other {exported} were",
                returncode=REFUSED,
            )

    def _report(
        self, exported: int, refused: list[Refusal], target: Any, options: dict[str, Any]
    ) -> None:
        for refusal in refused:
            self.stderr.write(f"schedule {refusal}")
        if options["json"]:
            summary = {
                "exported": exported,
                "refused": [{"schedule_id": r.item_id, "reason": r.reason} for r in refused],
                "output": str(target),
                "style": options["style"],
            }
            self.stdout.write(json.dumps(summary))
        elif target is not None:
            self.stderr.write(
                f"exported {exported} schedule(s) to {target} ({options['style']} style)"
            )
