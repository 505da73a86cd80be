"""``manage.py export_occurrences [--schedule ID] [--since T] [--until T] [--state S] [-o FILE]``.

Occurrences as ``occurrence.v1`` records, one JSON object per line (JSON Lines), ordered by
slot; stdout by default, a file is written atomically. ``--schedule`` takes a schedule's UUID
or key; ``--since`` (inclusive) and ``--until`` (exclusive) bound ``scheduled_for``; ``--state``
(repeatable) takes a state (``failed``) or an occurrence.v1 status (``EMITTED``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scheduler_app.contract.cli import (
    BAD_ARGUMENT,
    Progress,
    add_progress_arguments,
    instant_argument,
    output_path,
    write_output,
)
from scheduler_app.contract.occurrence import (
    find_schedule,
    occurrence_contract,
    select_occurrences,
    states_for,
)
from scheduler_app.errors import ScheduleValidationError
from scheduler_app.models import Occurrence


class Command(BaseCommand):
    help = "Export occurrences as occurrence.v1 JSON Lines (docs/contract.md); stdout by default."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--schedule", help="Only this schedule (its UUID or key).")
        parser.add_argument("--since", help="Slots at or after this instant (ISO 8601).")
        parser.add_argument("--until", help="Slots before this instant (ISO 8601).")
        parser.add_argument(
            "--state",
            action="append",
            default=[],
            help="Only this state or status (repeatable): failed, EMITTED, ...",
        )
        parser.add_argument("--output", "-o", help="Write to this file instead of stdout.")
        parser.add_argument(
            "--json", action="store_true", help="With --output: print the summary as JSON."
        )
        add_progress_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        target = output_path(options["output"]) if options["output"] else None
        if options["json"] and target is None:
            raise CommandError("--json needs --output (stdout holds the export)", returncode=2)
        try:
            schedule = find_schedule(options["schedule"]) if options["schedule"] else None
            states = states_for(options["state"])
        except ScheduleValidationError as exc:
            raise CommandError(exc.message, returncode=BAD_ARGUMENT) from None
        since = instant_argument(options["since"], "--since") if options["since"] else None
        until = instant_argument(options["until"], "--until") if options["until"] else None
        if since and until and until <= since:
            raise CommandError("--until must be after --since", returncode=BAD_ARGUMENT)
        rows = select_occurrences(schedule=schedule, since=since, until=until, states=states)
        stream = getattr(self.stderr, "_out", sys.stderr)
        bar = Progress(stream, enabled=options["progress"])("exporting", rows.count())
        written = [0]

        def lines() -> Iterator[str]:
            for row in rows.iterator(chunk_size=1000):
                yield _line(row)
                written[0] += 1
                bar.update(1)

        try:
            write_output(self.stdout, target, lines())
        finally:
            bar.close()
        if options["json"]:
            self.stdout.write(json.dumps({"exported": written[0], "output": str(target)}))
        elif target is not None:
            self.stderr.write(f"exported {written[0]} occurrence(s) to {target}")


def _line(row: Occurrence) -> str:
    return json.dumps(occurrence_contract(row), ensure_ascii=False) + "\n"
