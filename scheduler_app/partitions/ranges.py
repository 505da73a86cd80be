"""Date math of the ledger's partitions: pure, no database, no clock (callers pass ``now``).

A partition holds the slots ``start <= scheduled_for < end``; bounds are midnights in UTC, at
the start of a month, an ISO week (Monday) or a day. Partitions never overlap, so a name made
of the start date is unique: ``<table>_p20261201``.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta


class Interval(enum.StrEnum):
    """How much time one partition covers (``SCHEDULER_PARTITION_INTERVAL``)."""

    MONTH = "month"
    """A calendar month (UTC): the default, about 30 tables a year at most."""
    WEEK = "week"
    """Monday to Monday (UTC): for ledgers that grow by tens of millions of rows a month."""
    DAY = "day"
    """One UTC day: for retention measured in days."""


@dataclass(frozen=True, kw_only=True, order=True)
class Range:
    """The slots ``start <= scheduled_for < end`` (aware UTC datetimes)."""

    start: datetime
    end: datetime

    @property
    def suffix(self) -> str:
        """The partition's name after the table's: ``p20261201``."""
        return f"p{self.start:%Y%m%d}"

    def overlaps(self, other: Range) -> bool:
        return self.start < other.end and other.start < self.end


def floor(instant: datetime, interval: Interval) -> datetime:
    """The start of the partition range that holds ``instant``."""
    day = instant.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    if interval is Interval.MONTH:
        return day.replace(day=1)
    if interval is Interval.WEEK:
        return day - timedelta(days=day.weekday())
    return day


def following(start: datetime, interval: Interval) -> datetime:
    """The end of the range that begins at ``start`` (itself a ``floor``)."""
    if interval is Interval.MONTH:
        if start.month == 12:
            return start.replace(year=start.year + 1, month=1)
        return start.replace(month=start.month + 1)
    return start + timedelta(days=7 if interval is Interval.WEEK else 1)


def range_of(instant: datetime, interval: Interval) -> Range:
    start = floor(instant, interval)
    return Range(start=start, end=following(start, interval))


def ahead(now: datetime, interval: Interval, count: int) -> list[Range]:
    """The range holding ``now`` and the ``count`` ranges after it."""
    ranges = [range_of(now, interval)]
    for _ in range(count):
        ranges.append(range_of(ranges[-1].end, interval))
    return ranges


def gaps(wanted: Range, existing: Iterable[Range]) -> list[Range]:
    """The parts of ``wanted`` that no ``existing`` range covers (after a change of interval,
    the new ranges are clipped to the old partitions instead of overlapping them)."""
    pieces = [wanted]
    for taken in sorted(existing):
        rest: list[Range] = []
        for piece in pieces:
            if not piece.overlaps(taken):
                rest.append(piece)
                continue
            if piece.start < taken.start:
                rest.append(Range(start=piece.start, end=taken.start))
            if taken.end < piece.end:
                rest.append(Range(start=taken.end, end=piece.end))
        pieces = rest
    return pieces


def wholly_before(ranges: Iterable[Range], cutoff: datetime) -> list[Range]:
    """The ranges whose every slot is older than ``cutoff``, oldest first."""
    return sorted(candidate for candidate in ranges if candidate.end <= cutoff)
