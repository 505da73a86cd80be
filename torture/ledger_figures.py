"""Figures read from the ledger at the end of a run: dispatch lateness (percentiles, and per
window for the soak) and the occurrences' outcomes. Django is set up by then."""

from __future__ import annotations

import statistics
from datetime import datetime


def _dispatch_delays() -> list[tuple[datetime, float]]:
    """(slot, dispatch lateness in s) of first attempts whose dispatch no policy holds back on
    purpose: ``buffer_one``/``buffer_all`` occurrences wait for the previous run to end, and a
    retry's ``dispatched_at`` is its new attempt's (after the backoff)."""
    from scheduler_app.models import Occurrence, OverlapPolicy, Trigger

    return [
        (o.scheduled_for, (o.dispatched_at - o.scheduled_for).total_seconds())
        for o in Occurrence.objects.filter(
            trigger=Trigger.SCHEDULED, dispatched_at__isnull=False, attempts__lte=1
        )
        .exclude(schedule__overlap_policy__in=(OverlapPolicy.BUFFER_ONE, OverlapPolicy.BUFFER_ALL))
        .only("dispatched_at", "scheduled_for")
    ]


def percentiles(values: list[float]) -> dict[str, float]:
    """count, p50, p95, p99 and max of ``values`` (seconds, rounded to ms)."""
    if not values:
        return {}
    values = sorted(values)
    q = statistics.quantiles(values, n=100, method="inclusive") if len(values) > 1 else values * 99
    return {"count": len(values), "p50": round(q[49], 3), "p95": round(q[94], 3),
            "p99": round(q[98], 3), "max": round(values[-1], 3)}  # fmt: skip


def _lateness() -> dict[str, float]:
    return percentiles([delay for _, delay in _dispatch_delays()])


def lateness_windows(
    delays: list[tuple[datetime, float]], start: datetime, minutes: int = 10
) -> list[dict[str, float]]:
    """Lateness percentiles of the slots in each ``minutes`` window from ``start``."""
    windows: dict[int, list[float]] = {}
    for slot, delay in delays:
        index = max(int((slot - start).total_seconds() // (minutes * 60)), 0)
        windows.setdefault(index, []).append(delay)
    return [
        {"from_min": index * minutes, **percentiles(values)}
        for index, values in sorted(windows.items())
    ]


def _outcomes() -> dict[str, int]:
    from django.db.models import Count

    from scheduler_app.models import Occurrence

    rows = Occurrence.objects.values("state", "reason").annotate(n=Count("id"))
    return {f"{r['state']}:{r['reason']}" if r["reason"] else r["state"]: r["n"] for r in rows}
