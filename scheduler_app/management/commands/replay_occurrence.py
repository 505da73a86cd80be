"""``manage.py replay_occurrence ID [--force]``: run a failed occurrence again, same key."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scheduler_app.errors import SchedulerError
from scheduler_app.safety.actors import COMMAND
from scheduler_app.services import replay_occurrence


class Command(BaseCommand):
    help = "Replay a failed, expired or cancelled occurrence (same idempotency key, next attempt)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("occurrence_id")
        parser.add_argument(
            "--force", action="store_true", help="also replay an occurrence that succeeded"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            occurrence = replay_occurrence(
                options["occurrence_id"], force=options["force"], user=COMMAND
            )
        except SchedulerError as exc:
            raise CommandError(str(exc), returncode=2) from None
        self.stdout.write(
            f"occurrence {occurrence.pk} is pending again (key {occurrence.idempotency_key}, "
            f"{occurrence.attempts} attempt(s) so far); the beat publishes it on its next tick"
        )
