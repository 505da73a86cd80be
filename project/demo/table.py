"""A plain-text table of the latest occurrences, for the demo."""

from __future__ import annotations

from zoneinfo import ZoneInfo

from scheduler_app.models import Occurrence

HEADER = f"{'schedule':34} {'scheduled for (local)':27} {'UTC':20} {'lateness':>9} {'state':10}"


def render(limit: int = 12) -> str:
    rows = Occurrence.objects.select_related("schedule").order_by("-scheduled_for")[:limit]
    lines = ["", HEADER, "-" * len(HEADER)]
    for occ in reversed(list(rows)):
        local = occ.scheduled_for.astimezone(ZoneInfo(occ.timezone))
        lateness = occ.dispatch_lateness
        late_text = f"{lateness:8.2f}s" if lateness is not None else "        -"
        lines.append(
            f"{str(occ.schedule)[:34]:34} {local.isoformat(timespec='seconds'):27} "
            f"{occ.scheduled_for.strftime('%Y-%m-%d %H:%M:%S'):20} {late_text:>9} {occ.state:10}"
        )
    return "\n".join(lines)
