"""Retention by whole partitions: a month of rows goes with one catalog change, no vacuum.

A partition goes when its whole range is older than the cut-off. The rows retention must keep
(not final, ended after the cut-off, or the latest occurrence of their schedule: the
rules of ``monitoring.retention``) are found before the ledger is locked, the few that can
have changed since are looked up under the lock, and they go back into the ledger (into
DEFAULT) as the partition is detached (``partitions.retire``), and the attempts' partition of the
same range goes with it (the keepers' attempts stay); both are dropped after the ledger's lock
is released. A beat stopped between the steps leaves ``*_retired_*`` tables that the next call
finishes.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction

from scheduler_app.partitions import ddl, retire
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
    rows = attempts = 0
    for name in retire.retired_tables():
        gone, removed = retire.finish_retired(name)
        rows, attempts = rows + gone, attempts + removed
    names: list[str] = []
    kept = 0
    for partition in droppable(cutoff):
        stays = _retire(partition, final_states, cutoff)
        if stays is None:
            return DropReport(tuple(names), rows, kept, attempts, busy=True)
        gone, removed = retire.finish_retired(retire.retired_name(partition))
        names.append(partition.name)
        rows, kept, attempts = rows + gone, kept + stays, attempts + removed
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


def _retire(partition: ddl.Partition, final_states: Sequence[str], cutoff: datetime) -> int | None:
    """Watch, then retire ``partition``, each in its own transaction under the maintenance
    lock; the rows kept, or None when another process holds the lock or took the partition
    out meanwhile."""
    with transaction.atomic():
        if not _ours(partition):
            return None
        retire.watch(partition)
    with transaction.atomic():
        if not _ours(partition):
            return None
        return retire.retire(partition, final_states, cutoff)


def _ours(partition: ddl.Partition) -> bool:
    """Take the maintenance lock for this transaction, if ``partition`` is still there."""
    return locked() and partition.name in {p.name for p in ddl.partitions()}
