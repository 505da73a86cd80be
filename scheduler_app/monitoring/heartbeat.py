"""Beat heartbeats: one row per beat process, touched as it ticks.

A row says the process is alive (``last_tick_at``), who it is (host, pid, package version,
start) and what it last did (batch size, last error, measured clock skew). The health view,
``scheduler_status`` and the ``scheduler_beats_alive`` metric read them.
"""

from __future__ import annotations

import os
import socket
from datetime import datetime, timedelta
from importlib.metadata import PackageNotFoundError, version

from django.db.models import Max, QuerySet

from scheduler_app.errors import storable_error
from scheduler_app.models import BeatHeartbeat

STALE_ROWS_KEPT = timedelta(days=7)
"""Rows of beats that stopped (or died) longer ago than this are deleted at start-up."""


def package_version() -> str:
    try:
        return version("django-durable-scheduler")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "unknown"


class Heartbeat:
    """The heartbeat of this process; writes at most every ``interval`` seconds of its clock,
    at once when something changed worth telling (an error, a measured skew)."""

    def __init__(self, interval: float) -> None:
        self.interval = timedelta(seconds=interval)
        self.row: BeatHeartbeat | None = None
        self._written_at: datetime | None = None
        self._batch = 0

    def touch(
        self,
        now: datetime,
        *,
        batch_size: int = 0,
        error: str = "",
        skew: float | None = None,
    ) -> bool:
        """Record a tick; returns True when a row was written."""
        if batch_size:
            self._batch = batch_size
        if self.row is None:
            self._start(now, skew)
            return True
        due = (
            self._written_at is None
            or now - self._written_at >= self.interval
            or now < self._written_at  # the clock stepped back: write, then count from here
        )
        if not (due or error or skew is not None):
            return False
        changes: dict[str, object] = {"last_tick_at": now, "last_batch_size": self._batch}
        if error:
            changes.update(last_error=storable_error(error, 2000), last_error_at=now)
        if skew is not None:
            changes["clock_skew"] = skew
        if not BeatHeartbeat.objects.filter(pk=self.row.pk).update(**changes):
            self.row = None  # pruned or deleted by an operator: start a new row
            self._start(now, skew)
        self._written_at = now
        return True

    def _start(self, now: datetime, skew: float | None) -> None:
        BeatHeartbeat.objects.filter(last_tick_at__lt=now - STALE_ROWS_KEPT).delete()
        self.row = BeatHeartbeat.objects.create(
            host=socket.gethostname()[:200],
            pid=os.getpid(),
            version=package_version(),
            started_at=now,
            last_tick_at=now,
            last_batch_size=self._batch,
            clock_skew=skew,
        )
        self._written_at = now

    def stop(self, now: datetime) -> None:
        if self.row is not None:
            BeatHeartbeat.objects.filter(pk=self.row.pk).update(stopped_at=now, last_tick_at=now)


def alive(now: datetime, stale: float) -> QuerySet[BeatHeartbeat]:
    """Beats that ticked within ``stale`` seconds and did not stop."""
    return BeatHeartbeat.objects.filter(
        last_tick_at__gte=now - timedelta(seconds=stale), stopped_at__isnull=True
    )


def last_tick() -> datetime | None:
    """When any beat last ticked (None: no beat ever did)."""
    return BeatHeartbeat.objects.aggregate(last=Max("last_tick_at"))["last"]
