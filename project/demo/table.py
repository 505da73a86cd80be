"""A plain-text table of the latest occurrences, for the demo.

Its lag column is the admin's (monitoring page, ``scheduler_status``): the **dispatch lag**,
the first handoff to the broker minus the slot, never below zero, written as those write it
(``scheduler_app.monitoring.lateness``)."""

from __future__ import annotations

from zoneinfo import ZoneInfo

from scheduler_app.models import Occurrence
from scheduler_app.monitoring.lateness import Lag, seconds_text

LAG = Lag.DISPATCH.value
HEADER = f"{'schedule':34} {'scheduled for (local)':27} {'UTC':20} {LAG:>12} {'state':10}"


def dispatch_lag(occurrence: Occurrence) -> float | None:
    """The first handoff (``emitted_at``; ``dispatched_at`` for an older row) minus the slot,
    never below zero; None before any handoff."""
    handed_off = occurrence.emitted_at or occurrence.dispatched_at
    if handed_off is None:
        return None
    return max((handed_off - occurrence.scheduled_for).total_seconds(), 0.0)


def render(limit: int = 12) -> str:
    rows = Occurrence.objects.select_related("schedule").order_by("-scheduled_for")[:limit]
    lines = ["", HEADER, "-" * len(HEADER)]
    for occ in reversed(list(rows)):
        local = occ.scheduled_for.astimezone(ZoneInfo(occ.timezone))
        lines.append(
            f"{str(occ.schedule)[:34]:34} {local.isoformat(timespec='seconds'):27} "
            f"{occ.scheduled_for.strftime('%Y-%m-%d %H:%M:%S'):20} "
            f"{seconds_text(dispatch_lag(occ)):>12} {occ.state:10}"
        )
    return "\n".join(lines)
