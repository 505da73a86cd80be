"""The Celery Beat scheduler class.

Run it with ``celery -A project beat -S scheduler_app.beat:DurableScheduler``.

Nothing is loaded into memory: every tick asks the database what is due.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from celery.beat import Scheduler
from django.db import DatabaseError, close_old_connections, connection

from scheduler_app.publishing import CeleryPublisher
from scheduler_app.sync import sync_schedules
from scheduler_app.ticker import Ticker

logger = logging.getLogger("scheduler_app.beat")


class DurableScheduler(Scheduler):
    """Materializes due slots into occurrences and hands them to Celery through the outbox."""

    def __init__(self, *args: Any, ticker: Ticker | None = None, **kwargs: Any) -> None:
        self._ticker = ticker
        super().__init__(*args, **kwargs)

    @property
    def ticker(self) -> Ticker:
        if self._ticker is None:
            self._ticker = Ticker(CeleryPublisher(self.app))
        return self._ticker

    def setup_schedule(self) -> None:
        # Only shown in beat's banner: ``tick`` returns its own sleep, bounded by MAX_INTERVAL.
        self.max_interval = math.ceil(self.ticker.settings.MAX_INTERVAL)
        if self.ticker.settings.SYNC_ON_BEAT_START:
            self.sync_declared()
        logger.info(
            "durable scheduler ready", extra={"action": "beat.start", "owner": self.ticker.owner}
        )

    def sync_declared(self) -> None:
        """Write the ``@scheduled`` declarations to the database; a failure is logged and
        the beat starts anyway, with the schedules already stored."""
        try:
            report = sync_schedules(app=self.app)
        except Exception:  # a task module that fails to import must not keep the beat down
            logger.exception(
                "syncing the @scheduled declarations failed; running the stored schedules",
                extra={"action": "beat.sync_failed"},
            )
            close_old_connections()
            return
        if not report.ok:
            logger.error(
                "%d @scheduled declaration(s) could not be synced: %s",
                len(report.errors),
                "; ".join(f"{entry.key}: {entry.detail}" for entry in report.errors),
                extra={"action": "beat.sync_failed"},
            )

    def tick(self, *args: Any, **kwargs: Any) -> float:
        close_old_connections()
        try:
            result = self.ticker.tick()
        except DatabaseError:
            # The database went away (restart, network): nothing is lost, the next tick
            # reconnects and carries on from the stored state.
            logger.exception("tick failed; retrying", extra={"action": "beat.tick_failed"})
            connection.close()
            return 1.0
        if result.created or result.published:
            logger.info(
                "tick",
                extra={
                    "action": "beat.tick",
                    "occurrences_created": result.created,
                    "published": result.published,
                },
            )
        return result.sleep

    def sync(self) -> None:
        """Nothing to sync: the database is the schedule."""

    def close(self) -> None:
        self.ticker.release_lease()
        super().close()

    @property
    def info(self) -> str:
        return f"    . durable scheduler (owner {self.ticker.owner})"
