"""``manage.py run_event_deliveries``: deliver event occurrences as signed CloudEvents.

Run it next to a beat (``celery -A proj beat -S ...`` or ``run_scheduler``), which
materializes the slots, or with ``--beat`` as the beat itself (a project without Celery or
django.tasks: it then also syncs the ``declare_event`` / ``@scheduled`` declarations at start).
Several may run at once. SIGTERM stops it after the current round.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils.module_loading import autodiscover_modules

from scheduler_app import webhooks
from scheduler_app.authoring.sync import sync_schedules
from scheduler_app.beat import unapplied_migrations
from scheduler_app.handoff.endpoints import EndpointError, endpoints
from scheduler_app.management.commands.run_scheduler import not_migrated, show_logs

try:
    from scheduler_app.webhooks.loop import DeliveryLoop
except ImportError:  # the [events] extra is not installed: handle() says how to add it
    DeliveryLoop = None  # type: ignore[assignment,misc]


class Command(BaseCommand):
    help = (
        "Deliver the occurrences of event schedules (task event:<type>) to their webhook "
        "endpoints as signed CloudEvents; run it next to a beat."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--max-rounds", type=int, default=None, help="stop after this many rounds (tests)"
        )
        parser.add_argument("--owner", default=None, help="this process's name in claims")
        parser.add_argument(
            "--beat",
            action="store_true",
            help="also be the beat (materialize due slots, reconcile): for a project without "
            "a Celery beat or run_scheduler; on SQLite only one beat runs at a time",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if not webhooks.AVAILABLE or DeliveryLoop is None:
            raise CommandError(webhooks.MISSING)
        try:
            configured = endpoints()
        except EndpointError as exc:
            raise CommandError(exc.message) from None
        missing = unapplied_migrations()
        if missing:
            raise not_migrated(missing)
        show_logs(options["verbosity"])
        if options["beat"]:
            autodiscover_modules("tasks")  # declare_event in an installed app's tasks.py
            report = sync_schedules()
            for entry in report.errors:
                self.stderr.write(f"declaration {entry.key} could not be synced: {entry.detail}")
            self.stdout.write(f"synced the declarations: {report.summary()}")
        loop = DeliveryLoop(owner=options["owner"], beat=options["beat"])
        loop.install_signals()
        names = ", ".join(sorted(configured)) or "none: set SCHEDULER_EVENT_ENDPOINTS"
        self.stdout.write(
            f"run_event_deliveries started (owner {loop.owner}; endpoints: {names}); "
            "SIGTERM stops it"
        )
        loop.run(max_rounds=options["max_rounds"])
        self.stdout.write(
            f"run_event_deliveries stopped after {loop.rounds} round(s), "
            f"{loop.delivered} delivery outcome(s)"
        )
