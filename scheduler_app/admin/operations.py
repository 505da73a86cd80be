"""What resuming a schedule would do, in sentences for the resume confirmation page."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from scheduler_app import services
from scheduler_app.admin.display import instant_text
from scheduler_app.models import Schedule
from scheduler_app.timing import format_duration

LISTED = 10


@dataclass(frozen=True)
class ResumeSummary:
    count: int
    lines: list[str]


def resume_summary(schedule: Schedule, now: datetime) -> ResumeSummary:
    """What resuming ``schedule`` at ``now`` creates and skips, in sentences."""
    zone = schedule.timezone
    preview = services.preview_resume(schedule, now)
    slots = [planned.scheduled_for for planned in preview.emit]
    lines = [
        f"Resuming creates {preview.count} catch-up occurrence(s) "
        f"(misfire policy {schedule.misfire_policy})."
    ]
    for slot in slots[:LISTED]:  # one list item each: the page's list draws the bullet
        lines.append(f"Catch-up at {instant_text(slot, zone)}")
    if len(slots) > LISTED:
        lines.append(f"… and {len(slots) - LISTED} more, up to {instant_text(slots[-1], zone)}")
    if preview.skipped:
        lines.append(f"{preview.skipped} missed slot(s) are skipped: " + _skip_reason(schedule))
    lines.append(f"Then the next run: {instant_text(preview.next_run_at, zone)}.")
    return ResumeSummary(preview.count, lines)


def _skip_reason(schedule: Schedule) -> str:
    if schedule.misfire_policy == "skip":
        return "the misfire policy is skip (late slots are counted, not run)."
    if schedule.misfire_policy == "fire_once":
        return "the misfire policy is fire_once (only the most recent late slot runs)."
    window = format_duration(timedelta(seconds=schedule.catch_up_window))
    return (
        f"older than the catch-up window ({window}) or beyond the catch-up limit "
        f"({schedule.catch_up_limit})."
    )
