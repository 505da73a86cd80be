"""``manage.py import_schedules FILE [--dry-run]``: apply a ``schedule.v1`` file, all or nothing.

Exit status 2 with every error (and its path) on stderr when the file is invalid; nothing is
written then. ``--dry-run`` prints the plan and writes nothing.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scheduler_app.contract import ContractError, import_text
from scheduler_app.importing import describe_change

INVALID = 2


class Command(BaseCommand):
    help = "Import schedules from a schedule.v1 JSON file (docs/contract.md); '-' reads stdin."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="The JSON file to import, or '-' for stdin.")
        parser.add_argument(
            "--dry-run", action="store_true", help="Print what would change; write nothing."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        text = self._read(options["file"])
        try:
            result = import_text(text, dry_run=options["dry_run"])
        except ContractError as exc:
            for problem in exc.problems:
                self.stderr.write(str(problem))
            raise CommandError(
                f"{len(exc.problems)} error(s) in {options['file']}; nothing was imported",
                returncode=INVALID,
            ) from None
        for change in result.plan.changes:
            self.stdout.write(describe_change(change))
        plan = result.plan
        summary = (
            f"{plan.count('create')} to create, {plan.count('update')} to update, "
            f"{plan.count('unchanged')} unchanged"
        )
        suffix = " (dry run: nothing written)" if options["dry_run"] else ""
        self.stdout.write(summary + suffix)

    def _read(self, name: str) -> str:
        if name == "-":
            return sys.stdin.read()
        try:
            return Path(name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"cannot read {name}: {exc}", returncode=INVALID) from None
