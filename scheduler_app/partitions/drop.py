"""Retention by whole partitions: a month of rows goes with one catalog change, no vacuum.

A partition goes when its whole range is older than the cut-off. The rows retention must keep
(not final, finished after the cut-off, or the latest occurrence of their schedule: the
rules of ``monitoring.retention``) are copied out first and inserted again, into DEFAULT; the
attempts of the other rows are deleted after the ledger's lock is released, then the table is
dropped. A beat stopped between the two steps leaves a ``*_retired_*`` table that the next
call finishes.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction

from scheduler_app.partitions import ddl
from scheduler_app.partitions.maintain import locked
from scheduler_app.partitions.ranges import Range

logger = logging.getLogger("scheduler_app.partitions")


@dataclass(frozen=True)
class DropReport:
    partitions: tuple[str, ...] = ()
    rows: int = 0
    """Occurrences removed with the partitions."""
    kept: int = 0
    """Occurrences of those partitions kept (moved to DEFAULT)."""
    attempts: int = 0
    busy: bool = False
    """Another process held the maintenance lock: nothing was dropped."""


def droppable(cutoff: datetime) -> list[ddl.Partition]:
    """The partitions whose every slot is older than ``cutoff``, oldest first."""
    found = [p for p in ddl.partitions() if p.range is not None and p.range.end <= cutoff]
    return sorted(found, key=lambda p: p.range or Range(start=cutoff, end=cutoff))


def drop_before(cutoff: datetime, final_states: Sequence[str]) -> DropReport:
    """Drop every partition wholly older than ``cutoff`` (each in its own transaction)."""
    if not ddl.is_partitioned():
        return DropReport()
    attempts = sum(_finish(name) for name in ddl.retired_tables())
    names: list[str] = []
    rows = kept = 0
    for partition in droppable(cutoff):
        with transaction.atomic():
            if not locked():
                return DropReport(tuple(names), rows, kept, attempts, busy=True)
            gone, stays = ddl.retire(partition, list(final_states), cutoff)
        attempts += _finish(ddl.retired_name(partition))
        names.append(partition.name)
        rows += gone
        kept += stays
    if names:
        logger.info(
            "partitions dropped",
            extra={
                "action": "partitions.dropped",
                "partitions": names,
                "rows": rows,
                "kept": kept,
                "cutoff": cutoff.isoformat(),
            },
        )
    return DropReport(tuple(names), rows, kept, attempts)


def _finish(name: str) -> int:
    with transaction.atomic():
        return ddl.finish_retired(name)
