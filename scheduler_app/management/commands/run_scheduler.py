"""``manage.py run_scheduler``: the scheduler without Celery, handing off to django.tasks.

Run it next to django-tasks-db's ``manage.py db_worker``. Several may run at once on
PostgreSQL; SIGTERM stops it after the current tick.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scheduler_app.djtasks import compat
from scheduler_app.djtasks.scheduler import SchedulerLoop


class Command(BaseCommand):
    help = (
        "Run the durable scheduler without Celery: materialize due slots and hand them off to "
        "their django.tasks backend (run django-tasks-db's db_worker next to it)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--no-sync",
            action="store_true",
            help="do not write the @scheduled declarations to the database at start",
        )
        parser.add_argument(
            "--max-ticks", type=int, default=None, help="stop after this many ticks (tests)"
        )
        parser.add_argument("--owner", default=None, help="this process's name in leases")

    def handle(self, *args: Any, **options: Any) -> None:
        if not compat.AVAILABLE:
            raise CommandError(
                "django.tasks is not available: install django-durable-scheduler[tasks] "
                "(django-tasks-db, and the django-tasks backport on Django < 6)"
            )
        loop = SchedulerLoop(owner=options["owner"])
        missing = loop.start(sync=not options["no_sync"])
        if missing:
            raise CommandError(
                f"the scheduler's tables are not migrated ({len(missing)} migration(s) "
                f"missing, first {missing[0]}): run `python manage.py migrate`"
            )
        loop.install_signals()
        self.stdout.write(f"run_scheduler started (owner {loop.ticker.owner}); SIGTERM stops it")
        loop.run(max_ticks=options["max_ticks"])
        self.stdout.write(f"run_scheduler stopped after {loop.ticks} tick(s)")
