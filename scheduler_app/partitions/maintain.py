"""Partitions created ahead of time, by the beat or ``manage.py scheduler_partitions``.

Once an hour (``PartitionKeeper``) the beat makes sure the partitions of the current period
and of the ``SCHEDULER_PARTITIONS_AHEAD`` periods after it exist, and moves into each new one
the rows that landed in DEFAULT meanwhile. A transaction-scoped advisory lock lets one beat do
it at a time (the others skip); a failure (a lock not granted in time, a missing privilege) is
logged as ``partitions.failed`` and tried again ``RETRY`` seconds later: it never stops a tick,
and a ledger without the partition only fills DEFAULT for a while.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import DatabaseError, connection, transaction

from scheduler_app.conf import SchedulerSettings
from scheduler_app.partitions import ddl
from scheduler_app.partitions.ranges import Interval, Range, ahead, gaps

logger = logging.getLogger("scheduler_app.partitions")
ADVISORY_LOCK = 0x5C4E_D0CC
"""The advisory lock key of partition maintenance (any beat, any command)."""
EVERY = timedelta(hours=1)
RETRY = timedelta(minutes=5)


@dataclass(frozen=True)
class CreateReport:
    created: tuple[str, ...] = ()
    moved: int = 0
    """Rows moved out of DEFAULT into the new partitions."""
    busy: bool = False
    """Another process held the maintenance lock: nothing was done."""


def locked() -> bool:
    """Take the maintenance lock for this transaction; False when another process holds it."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [ADVISORY_LOCK])
        row = cursor.fetchone()
    return bool(row and row[0])


def create_ahead(now: datetime, *, count: int, interval: Interval) -> CreateReport:
    """Create the partitions of ``now``'s period and the ``count`` periods after it that do
    not exist (clipped to the partitions that do), in one transaction."""
    if not ddl.is_partitioned():
        return CreateReport()
    with transaction.atomic():
        if not locked():
            return CreateReport(busy=True)
        existing = [p.range for p in ddl.partitions() if p.range is not None]
        spans: list[Range] = []
        for wanted in ahead(now, interval, count):
            for span in gaps(wanted, existing):
                spans.append(span)
                existing.append(span)
        moved = ddl.create(*spans) if spans else 0  # one set of locks for all (ddl.create)
        created = [f"{ddl.table()}_{span.suffix}" for span in spans]
    if created:
        logger.info(
            "partitions created",
            extra={"action": "partitions.created", "partitions": created, "moved": moved},
        )
    return CreateReport(tuple(created), moved)


@dataclass
class PartitionKeeper:
    """The beat's cadence for ``create_ahead``: at start, then every hour; after a failure,
    again ``RETRY`` later. Time comes from the caller (the ticker's clock)."""

    settings: SchedulerSettings
    next_at: datetime | None = field(default=None)

    def maybe_run(self, now: datetime) -> CreateReport | None:
        if self.next_at is not None and now < self.next_at and self.next_at - now <= EVERY:
            return None
        try:
            report = create_ahead(
                now,
                count=self.settings.PARTITIONS_AHEAD,
                interval=Interval(self.settings.PARTITION_INTERVAL),
            )
        except (DatabaseError, ValueError) as exc:
            self.next_at = now + RETRY
            logger.warning(
                "partition maintenance failed: %s",
                exc,
                extra={"action": "partitions.failed", "error": f"{type(exc).__name__}: {exc}"},
            )
            return None
        self.next_at = now + EVERY
        return report
