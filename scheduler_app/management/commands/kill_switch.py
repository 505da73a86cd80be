"""``manage.py kill_switch on|off|list [--tenant T | --task NAME] --by WHO --reason WHY``."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scheduler_app.clock import SystemClock
from scheduler_app.errors import ScheduleValidationError
from scheduler_app.models import KillSwitch, KillSwitchEvent
from scheduler_app.safety.actors import COMMAND
from scheduler_app.safety.killswitch import describe, set_kill_switch


class Command(BaseCommand):
    help = (
        "Stop (on) or allow again (off) the handoff of occurrences: everything, one tenant "
        "(--tenant) or one task (--task). While on, due occurrences end skipped: kill_switch."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("state", choices=["on", "off", "list"])
        scope = parser.add_mutually_exclusive_group()
        scope.add_argument("--tenant", help="only this tenant's schedules")
        scope.add_argument("--task", help="only schedules of this task name")
        parser.add_argument("--by", default="", help="who (kept in the audit)")
        parser.add_argument("--reason", default="", help="why (kept in the audit)")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["state"] == "list":
            self._list()
            return
        scope, target = "global", ""
        if options["tenant"] is not None:
            scope, target = "tenant", options["tenant"]
        elif options["task"] is not None:
            scope, target = "task", options["task"]
        try:
            switch = set_kill_switch(
                scope,
                target,
                enabled=options["state"] == "on",
                by=options["by"],
                user=COMMAND,
                reason=options["reason"],
                now=SystemClock().now(),
            )
        except ScheduleValidationError as exc:
            raise CommandError(f"--{exc.field}: {exc.message}") from None
        self.stdout.write(
            f"kill switch {describe(switch.scope, switch.target)} is "
            f"{'ON' if switch.enabled else 'off'} (by {switch.changed_by}: {switch.reason})"
        )

    def _list(self) -> None:
        for switch in KillSwitch.objects.order_by("scope", "target"):
            self.stdout.write(
                f"{describe(switch.scope, switch.target)}: {'ON' if switch.enabled else 'off'} "
                f"since {switch.changed_at.isoformat(timespec='seconds')} by {switch.changed_by}"
                f": {switch.reason}"
            )
        self.stdout.write("recent changes:")
        for event in KillSwitchEvent.objects.order_by("-at")[:20]:
            self.stdout.write(
                f"  {event.at.isoformat(timespec='seconds')} {event.by} turned "
                f"{describe(event.scope, event.target)} {'on' if event.enabled else 'off'}: "
                f"{event.reason}"
            )
