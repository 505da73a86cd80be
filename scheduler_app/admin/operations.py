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
    """What resuming ``schedule`` at ``now`` creates and skips, in sentences. Each slot is
    named as it is recorded: a late slot the misfire policy runs is ``catch_up``, a slot
    still within ``max_lateness`` is an ordinary on-time run (``scheduled``)."""
    zone = schedule.timezone
    preview = services.preview_resume(schedule, now)
    lines = [_headline(schedule, preview.count, preview.caught_up)]
    for planned in preview.emit[:LISTED]:  # one list item each: the page's list draws the bullet
        label = "Catch-up" if planned.catch_up else "On time"
        lines.append(f"{label} at {instant_text(planned.scheduled_for, zone)}")
    if preview.count > LISTED:
        last = preview.emit[-1].scheduled_for
        lines.append(f"… and {preview.count - LISTED} more, up to {instant_text(last, zone)}")
    if preview.skipped:
        lines.append(f"{preview.skipped} missed slot(s) are skipped: " + _skip_reason(schedule))
    lines.append(f"Then the next run: {instant_text(preview.next_run_at, zone)}.")
    return ResumeSummary(preview.count, lines)


def _headline(schedule: Schedule, count: int, caught_up: int) -> str:
    policy = f"misfire policy {schedule.misfire_policy}"
    on_time = count - caught_up
    if on_time == 0:
        return f"Resuming creates {count} catch-up occurrence(s) ({policy})."
    lateness = format_duration(timedelta(seconds=schedule.max_lateness))
    due = f"{on_time} on time (less than max lateness {lateness} late)"
    if caught_up == 0:
        return f"Resuming creates {count} occurrence(s): {due}."
    return f"Resuming creates {count} occurrence(s): {caught_up} catch-up ({policy}) and {due}."


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
