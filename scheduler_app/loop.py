"""The loop behind ``manage.py run_scheduler``: the scheduler without Celery.

The same ``Ticker`` as the Celery beat (materialize due slots, hand off the outbox, reconcile,
monitor, heartbeat), with the django.tasks adapter as its only handoff target. Several loops
may run at once on PostgreSQL (the due scan and the outbox claim use SKIP LOCKED); on SQLite
one holds the scheduler lease and the others wait. SIGTERM and SIGINT end the loop after the
current tick (never in the middle of one).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Callable
from types import FrameType

from django.db import DatabaseError, close_old_connections

from scheduler_app.authoring.sync import sync_schedules
from scheduler_app.beat import Failures, unapplied_migrations
from scheduler_app.clock import Clock
from scheduler_app.djtasks.publisher import DjangoTasksPublisher
from scheduler_app.handoff.router import TargetRouter
from scheduler_app.models import HandoffTarget, Schedule, ScheduleStatus
from scheduler_app.ticker import Ticker

logger = logging.getLogger("scheduler_app.djtasks")


NO_DECLARATIONS = (
    "no @scheduled declarations found (%d active django.tasks schedule(s) stored): is the app "
    "that holds tasks.py in INSTALLED_APPS? run_scheduler imports the tasks module of each "
    'installed app, as django.tasks does; add the app (e.g. "myapp") to INSTALLED_APPS'
)


def warn_no_declarations() -> None:
    """The likely cause when a sync finds nothing: the app holding ``tasks.py`` is not
    installed, so its module is never imported and its ``@scheduled`` never ran."""
    stored = Schedule.objects.filter(
        status=ScheduleStatus.ACTIVE, target=HandoffTarget.DJANGO_TASKS
    ).count()
    logger.warning(
        NO_DECLARATIONS, stored, extra={"action": "run_scheduler.no_declarations", "stored": stored}
    )


class SchedulerLoop:
    """Ticks until stopped; ``wait`` is how it sleeps (an ``Event.wait``: a stop wakes it)."""

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        owner: str | None = None,
        ticker: Ticker | None = None,
    ) -> None:
        publisher = TargetRouter({HandoffTarget.DJANGO_TASKS: DjangoTasksPublisher(clock)})
        self.ticker = ticker or Ticker(publisher, clock=clock, owner=owner)
        self.stopping = threading.Event()
        self.wait: Callable[[float], bool] = self.stopping.wait
        self.ticks = 0
        self.failures = Failures(logger, "tick", "run_scheduler.tick_failed")

    def stop(self, signum: int | None = None, frame: FrameType | None = None) -> None:
        if not self.stopping.is_set():
            logger.info("stopping after this tick", extra={"action": "run_scheduler.stopping"})
        self.stopping.set()

    def install_signals(self) -> None:
        signal.signal(signal.SIGTERM, self.stop)
        signal.signal(signal.SIGINT, self.stop)

    def start(self, *, sync: bool) -> list[str]:
        """Check the tables (returns the missing migrations) and sync ``@scheduled``."""
        missing = unapplied_migrations()
        if missing or not sync:
            return missing
        report = sync_schedules()
        for entry in report.errors:
            logger.error(
                "@scheduled %s could not be synced: %s",
                entry.key,
                entry.detail,
                extra={"action": "run_scheduler.sync_failed"},
            )
        declared = len(report.entries) - report.count("retire")
        logger.info(
            "synced %d @scheduled declaration(s): %s",
            declared,
            report.summary(),
            extra={"action": "run_scheduler.synced", "declarations": declared},
        )
        if not declared:
            warn_no_declarations()
        return []

    def run(self, *, max_ticks: int | None = None) -> None:
        """Tick until ``stop`` (or ``max_ticks``); give up the SQLite lease on the way out."""
        try:
            while not self.stopping.is_set():
                pause = self.tick()
                self.ticks += 1
                if max_ticks is not None and self.ticks >= max_ticks:
                    break
                self.wait(pause)
        finally:
            with contextlib.suppress(DatabaseError):  # the database is away: the lease expires
                self.ticker.release_lease()

    def tick(self) -> float:
        """One tick; a failure is logged and answered with a growing pause (1, 2, 4 ... 30 s)."""
        close_old_connections()
        try:
            result = self.ticker.tick()
        except Exception as exc:
            return self.failures.failed(exc)
        self.failures.passed()
        self.ticker.settle()  # once: the start-up is done
        if result.created or result.published:
            logger.info(
                "tick: %d created, %d handed off",
                result.created,
                result.published,
                extra={
                    "action": "run_scheduler.tick",
                    "occurrences_created": result.created,
                    "published": result.published,
                },
            )
        return result.sleep
