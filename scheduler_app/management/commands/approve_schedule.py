"""``manage.py approve_schedule <schedule id> --schedule-version N --user NAME``."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from scheduler_app.clock import SystemClock
from scheduler_app.errors import SchedulerError
from scheduler_app.services import approve_schedule


class Command(BaseCommand):
    help = "Approve one version of a schedule awaiting approval, as a user who may approve."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("schedule_id")
        parser.add_argument(
            "--schedule-version", type=int, required=True, help="the version you reviewed"
        )
        parser.add_argument("--user", required=True, help="user name of the approver")
        parser.add_argument("--reason", default="", help="why (kept in the audit trail)")

    def handle(self, *args: Any, **options: Any) -> None:
        model = get_user_model()
        user = model.objects.filter(**{model.USERNAME_FIELD: options["user"]}).first()
        if user is None:
            raise CommandError(f"no user named {options['user']!r}")
        try:
            schedule = approve_schedule(
                options["schedule_id"],
                version=options["schedule_version"],
                user=user,
                now=SystemClock().now(),
                reason=options["reason"],
            )
        except (SchedulerError, PermissionError) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"{schedule}: version {schedule.version} approved by {schedule.approved_by}; "
            f"status {schedule.status}, next run {schedule.next_run_at}"
        )
