"""Retention: delete old finished occurrences in small batches.

Rules: only final states (succeeded, failed, expired, skipped, cancelled) that ended before
the cut-off: ``finished_at``, or for a row written already final (skipped at creation by the
overlap policy or shadow mode, which never ran and so has no ``finished_at``) its
``created_at`` (``ended_before``); never the latest occurrence of a schedule (by
``scheduled_for``: the anchor of its window and of the monitor's "last attempt"); the
schedule's counters (``occurrence_count``, ``missed_count`` ...) live on the schedule and are
not touched. Each batch is its own short transaction, so no lock is held for long; the attempt
history of a deleted occurrence goes with it.

On a partitioned ledger (PostgreSQL, migration 0014) the partitions whose whole range is older
than the cut-off are dropped first, the rows the rules keep moved out of them
(``partitions.drop``, with the same rule in SQL: ``partitions.retire.keepers_sql``); the
batched delete then takes what is left (rows in DEFAULT, in the partition that holds the
cut-off, and rows kept only because they had not finished yet).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Exists, OuterRef, Q, QuerySet

from scheduler_app.errors import ScheduleValidationError
from scheduler_app.models import FINAL_STATES, Occurrence
from scheduler_app.partitions.drop import DropReport, drop_before
from scheduler_app.timing import parse_duration

logger = logging.getLogger("scheduler_app.retention")
DEFAULT_BATCH = 1000


@dataclass(frozen=True)
class PruneReport:
    cutoff: datetime
    deleted: int
    batches: int
    dry_run: bool
    more: bool = False
    """True when ``max_rows`` stopped it with old rows left (the beat goes on next tick)."""
    partitions: tuple[str, ...] = ()
    """Partitions dropped whole (their rows are counted in ``deleted``)."""


def parse_age(text: str) -> timedelta:
    """``90d``, ``12h``, ``P30D``; at least one hour (a typo must not empty the table)."""
    age = parse_duration(text, "older_than")
    if age < timedelta(hours=1):
        raise ScheduleValidationError(
            "older_than", f"{text!r} is less than an hour; keep at least one hour of history"
        )
    return age


def ended_before(cutoff: datetime) -> Q:
    """A final row ended before ``cutoff``: by ``finished_at``, or by ``created_at`` when it
    was written final (skipped at creation: it never started, so it never finished)."""
    return Q(finished_at__lt=cutoff) | Q(finished_at__isnull=True, created_at__lt=cutoff)


def prunable(cutoff: datetime) -> QuerySet[Occurrence]:
    newer = Occurrence.objects.filter(
        schedule=OuterRef("schedule"), scheduled_for__gt=OuterRef("scheduled_for")
    )
    final = Occurrence.objects.filter(state__in=FINAL_STATES)
    return final.filter(ended_before(cutoff)).filter(Exists(newer))


def prune(
    older_than: timedelta,
    now: datetime,
    *,
    batch: int = DEFAULT_BATCH,
    dry_run: bool = False,
    max_rows: int | None = None,
    by_partition: bool = True,
) -> PruneReport:
    """Delete what retention allows; ``by_partition=False`` only deletes in batches, also on a
    partitioned ledger (``bench.partitions`` compares both)."""
    cutoff = now - older_than
    if dry_run:
        return PruneReport(cutoff, prunable(cutoff).count(), 0, True)
    dropped = drop_before(cutoff, FINAL_STATES) if by_partition else DropReport()
    removed = batches = 0
    while max_rows is None or removed < max_rows:
        size = batch if max_rows is None else min(batch, max_rows - removed)
        with transaction.atomic():
            ids = list(prunable(cutoff).values_list("pk", flat=True)[:size])
            if not ids:
                break
            Occurrence.objects.filter(pk__in=ids, state__in=FINAL_STATES).delete()
        removed += len(ids)
        batches += 1
    more = max_rows is not None and removed >= max_rows and prunable(cutoff).exists()
    deleted = dropped.rows + removed
    if deleted:
        logger.info(
            "old occurrences pruned",
            extra={
                "action": "retention.pruned",
                "deleted": deleted,
                "partitions": len(dropped.partitions),
                "cutoff": cutoff.isoformat(),
            },
        )
    return PruneReport(cutoff, deleted, batches, False, more, dropped.partitions)
