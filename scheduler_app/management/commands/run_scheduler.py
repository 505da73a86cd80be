"""``manage.py run_scheduler``: the scheduler without Celery, handing off to django.tasks.

Run it next to django-tasks-db's ``manage.py db_worker``. Several may run at once on
PostgreSQL; SIGTERM stops it after the current tick.

It logs each sync and each tick that creates or hands off work at INFO. A new project has no
``LOGGING`` for ``scheduler_app`` (Django configures only its own loggers), which would drop
those lines: then the command prints them itself, at the level ``-v`` asks for.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scheduler_app.compat import install_extra
from scheduler_app.handoff import djtasks_compat as compat
from scheduler_app.loop import SchedulerLoop

LEVELS = {0: logging.WARNING, 1: logging.INFO}
"""``-v`` to the level printed when the project configures no logging for the scheduler
(``-v 2`` and ``-v 3``: DEBUG)."""


def show_logs(verbosity: int, logger: logging.Logger | None = None) -> None:
    """Print the scheduler's log lines on stderr unless the project's ``LOGGING`` (or any
    handler above it) already takes them."""
    logger = logger or logging.getLogger("scheduler_app")
    if logger.hasHandlers():
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(LEVELS.get(verbosity, logging.DEBUG))


def not_migrated(missing: list[str]) -> CommandError:
    return CommandError(
        f"the scheduler's tables are not migrated ({len(missing)} migration(s) missing, "
        f"first {missing[0]}): run `python manage.py migrate`"
    )


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
                "django.tasks is not available: "
                + install_extra("tasks")
                + " (django-tasks-db, and the django-tasks backport on Django < 6)"
            )
        show_logs(options["verbosity"])
        loop = SchedulerLoop(owner=options["owner"])
        missing = loop.start(sync=not options["no_sync"])
        if missing:
            raise not_migrated(missing)
        loop.install_signals()
        self.stdout.write(f"run_scheduler started (owner {loop.ticker.owner}); SIGTERM stops it")
        loop.run(max_ticks=options["max_ticks"])
        self.stdout.write(f"run_scheduler stopped after {loop.ticks} tick(s)")
