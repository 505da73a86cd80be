"""``manage.py import_schedules FILE [--dry-run] [--check-version] [--json]``.

Applies a ``schedule.v1`` file (either style), all or nothing. Exit status 2 with every error
(and its path) on stderr when the file is invalid or cannot be read; nothing is written then.
``--dry-run`` prints the plan and writes nothing. One line per document (the first 50; all
with ``-v 2``; none with ``-v 0``), then a summary of what was done.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scheduler_app.authoring.importing import Plan, describe_change
from scheduler_app.contract import ContractError, import_text
from scheduler_app.contract.cli import (
    BAD_ARGUMENT,
    Progress,
    add_progress_arguments,
    read_input,
)

DONE = (("create", "created"), ("update", "updated"), ("unchanged", "unchanged"))
LINES = 50
"""Documents listed one per line at the default verbosity; the summary counts them all."""


def summary(plan: Plan, *, applied: bool) -> str:
    """What was done (``created 2, ...``), or in a dry run what would be."""
    if applied:
        return ", ".join(f"{label} {plan.count(action)}" for action, label in DONE)
    counts = (
        f"{plan.count('create')} to create, {plan.count('update')} to update, "
        f"{plan.count('unchanged')} unchanged"
    )
    return counts + " (dry run: nothing written)"


class Command(BaseCommand):
    help = "Import schedules from a schedule.v1 JSON file (docs/contract.md); '-' reads stdin."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="The JSON file to import, or '-' for stdin.")
        parser.add_argument(
            "--dry-run", action="store_true", help="Print what would change; write nothing."
        )
        parser.add_argument(
            "--check-version",
            action="store_true",
            help="Refuse documents whose 'version' is not the stored one (optimistic "
            "concurrency: nobody changed the schedule since it was exported).",
        )
        parser.add_argument(
            "--json", action="store_true", help="Print the result as one JSON object on stdout."
        )
        add_progress_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        text = read_input(options["file"])
        stream = getattr(self.stderr, "_out", sys.stderr)
        try:
            result = import_text(
                text,
                dry_run=options["dry_run"],
                check_versions=options["check_version"],
                progress=Progress(stream, enabled=options["progress"]),
            )
        except ContractError as exc:
            if options["json"]:
                problems = [
                    {"document": p.label, "path": p.path, "message": p.message}
                    for p in exc.problems
                ]
                self.stdout.write(json.dumps({"applied": False, "problems": problems}))
            else:
                for problem in exc.problems:
                    self.stderr.write(str(problem))
            raise CommandError(
                f"{len(exc.problems)} error(s) in {options['file']}; nothing was imported",
                returncode=BAD_ARGUMENT,
            ) from None
        plan = result.plan
        ids = result.schedule_ids
        if options["json"]:
            self.stdout.write(json.dumps(_as_json(plan, ids, applied=result.applied)))
            return
        verbosity = options["verbosity"]
        shown = plan.changes if verbosity >= 2 else plan.changes[:LINES] if verbosity else ()
        for change in shown:
            label = change.desired.label
            line = describe_change(change, applied=result.applied, schedule_id=ids.get(label, ""))
            self.stdout.write(line)
        if verbosity and len(plan.changes) > len(shown):
            hidden = len(plan.changes) - len(shown)
            self.stdout.write(f"... and {hidden} more (-v 2 lists every document)")
        self.stdout.write(summary(plan, applied=result.applied))


def _as_json(plan: Plan, ids: dict[str, str], *, applied: bool) -> dict[str, Any]:
    changes = []
    for change in plan.changes:
        known = change.existing.pk if change.existing else change.desired.schedule_id
        target = str(known) if known else ids.get(change.desired.label)
        changes.append(
            {
                "document": change.desired.label,
                "action": change.action,
                "schedule_id": str(target) if target else None,
                "key": change.values.get("key"),
                "changed": sorted(change.changed),
            }
        )
    return {
        "applied": applied,
        **{label: plan.count(action) for action, label in DONE},
        "changes": changes,
        "problems": [],
    }
