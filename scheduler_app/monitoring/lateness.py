"""Lateness figures: one definition for the admin's monitoring page and ``scheduler_status``.

The two used to disagree for the same hour (34.2 s against 0.3 s): the page read
``dispatched_at`` (the *latest* handoff, which a retry moves) over the slots of the window, the
command ``emitted_at`` over the handoffs of the window, each with its own percentile. Now both
read this module:

- **dispatch lag**: first handoff to the broker minus the slot (``emitted_at - scheduled_for``;
  ``dispatched_at`` for a row handed off before ``emitted_at`` was recorded);
- **start lag**: a worker's start minus the slot (``started_at - scheduled_for``; a retried run
  counts its latest attempt's start);
- both never below zero (a run handed off ahead of its slot with an ETA is on time);
- over the runs *first handed off* in the window (the last hour, the last day), of the triggers
  asked for, at most ``SAMPLE`` of the newest slots;
- percentiles by **nearest rank**: the value at rank ``ceil(p * n)`` of the ``n`` sorted values,
  so every figure is a lag some run really had.

The read is one query, bounded by the slot index (``scheduled_for``: a run handed off more than
``SLOT_REACH`` after its slot is left out; ``scheduler_status`` and the page say so).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum

from django.db.models import DateTimeField, QuerySet
from django.db.models.functions import Coalesce

from scheduler_app.models import Occurrence, Trigger
from scheduler_app.observability.instruments import seconds_late

SUMMARY_TRIGGERS = (Trigger.SCHEDULED, Trigger.CATCH_UP)
"""The triggers whose lateness is the summary (and what the p99 alert reads): a rule's slots,
on time or caught up. A backfill's slots are in the past by design (hours or days "late") and a
manual run is the operator's own timing: counting them would make every backfill look like an
outage, so they are reported apart."""
APART_TRIGGERS = (Trigger.MANUAL, Trigger.BACKFILL)
SAMPLE = 50_000
"""Lateness percentiles are computed over at most this many runs (the newest slots)."""
SLOT_REACH = timedelta(days=1)
"""How far before the window a run's slot may lie (a backfill, a catch-up) and still count."""
METHOD = "nearest-rank"
SHARES = {"p50": 0.50, "p95": 0.95, "p99": 0.99}
HOUR = ("last hour", timedelta(hours=1))
DAY = ("last day", timedelta(days=1))


class Lag(Enum):
    """Which lateness a figure measures (DESIGN's vocabulary)."""

    DISPATCH = "dispatch lag"
    """First handoff to the broker minus the slot."""
    START = "start lag"
    """A worker's start (latest attempt) minus the slot."""


@dataclass(frozen=True, kw_only=True)
class Sample:
    """One run's lags, and what the window and the groups are chosen by."""

    trigger: str
    handed_off_at: datetime
    dispatch: float
    start: float | None


@dataclass(frozen=True, kw_only=True)
class Figures:
    """Nearest-rank percentiles of one lag over the runs of one window."""

    lag: Lag
    window: str
    count: int
    p50: float | None = None
    p95: float | None = None
    p99: float | None = None
    max: float | None = None

    def label(self, share: str = "p99") -> str:
        """``start lag p99, nearest-rank over 12 runs in the last hour``."""
        return f"{self.lag.value} {share}, {METHOD} over {self.count} runs in the {self.window}"

    def text(self) -> str:
        """``p50 0.10 s, p95 0.80 s, p99 1.2 s, max 3.0 s`` (``no runs`` when empty)."""
        if not self.count:
            return "no runs"
        shown = [f"{name} {seconds_text(getattr(self, name))}" for name in (*SHARES, "max")]
        return ", ".join(shown)

    def as_dict(self) -> dict[str, float | int | str | None]:
        figures = {name: getattr(self, name) for name in ("count", *SHARES, "max")}
        return {**figures, "measure": self.lag.value, "method": METHOD, "window": self.window}


def nearest_rank(values: Sequence[float], share: float) -> float | None:
    """The value at rank ``ceil(share * n)`` of sorted ``values`` (None when empty)."""
    if not values:
        return None
    rank = max(math.ceil(share * len(values)), 1)
    return values[min(rank, len(values)) - 1]


def seconds_text(value: float | None) -> str:
    """One way to write a lag on every surface, in seconds as the alert and the histogram read
    it: ``0.04 s``, ``34.2 s``, ``21600.0 s``."""
    if value is None:
        return "-"
    return f"{value:.2f} s" if value < 1 else f"{value:.1f} s"


def read(
    occurrences: QuerySet[Occurrence], *, now: datetime, within: timedelta, triggers: Iterable[str]
) -> list[Sample]:
    """The runs of ``triggers`` first handed off in ``[now - within, now]`` (one query)."""
    since = now - within
    rows = (
        occurrences.filter(
            trigger__in=list(triggers),
            scheduled_for__gte=since - SLOT_REACH,
            scheduled_for__lte=now,
        )
        .annotate(handed_off=Coalesce("emitted_at", "dispatched_at", output_field=DateTimeField()))
        .filter(handed_off__gte=since, handed_off__lte=now)
        .order_by("-scheduled_for")
        .values_list("trigger", "handed_off", "scheduled_for", "started_at")[:SAMPLE]
    )
    return [
        Sample(
            trigger=trigger,
            handed_off_at=handed,
            dispatch=seconds_late(handed, slot),
            start=None if started is None else seconds_late(started, slot),
        )
        for trigger, handed, slot, started in rows
    ]


def figures(samples: Iterable[Sample], lag: Lag, window: str) -> Figures:
    """The percentiles of one lag over ``samples`` (runs never started count for dispatch
    only)."""
    if lag is Lag.DISPATCH:
        values = sorted(sample.dispatch for sample in samples)
    else:
        values = sorted(sample.start for sample in samples if sample.start is not None)
    if not values:
        return Figures(lag=lag, window=window, count=0)
    shares = {name: nearest_rank(values, share) for name, share in SHARES.items()}
    return Figures(lag=lag, window=window, count=len(values), max=values[-1], **shares)


@dataclass(frozen=True, kw_only=True)
class WindowRow:
    """One row of the monitoring page's table: both lags over one window."""

    window: str
    dispatch: Figures
    start: Figures

    @property
    def label(self) -> str:
        return f"{self.window} ({METHOD})"

    @property
    def count(self) -> int:
        return self.dispatch.count

    def cells(self) -> list[str]:
        return [
            seconds_text(getattr(figure, name))
            for figure in (self.dispatch, self.start)
            for name in SHARES
        ]

    def caption(self) -> str:
        """``dispatch lag p99, nearest-rank over 12 runs in the last hour; start lag p99, ...``"""
        return f"{self.dispatch.label()}; {self.start.label()}"


def window_rows(
    occurrences: QuerySet[Occurrence], now: datetime, triggers: Iterable[str] = SUMMARY_TRIGGERS
) -> list[WindowRow]:
    """Both lags over the last hour and the last day, from one read (the monitoring page)."""
    samples = read(occurrences, now=now, within=DAY[1], triggers=triggers)
    result = []
    for window, within in (HOUR, DAY):
        chosen = [sample for sample in samples if sample.handed_off_at >= now - within]
        result.append(
            WindowRow(
                window=window,
                dispatch=figures(chosen, Lag.DISPATCH, window),
                start=figures(chosen, Lag.START, window),
            )
        )
    return result
