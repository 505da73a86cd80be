"""Small HTML pieces of the admin pages: badges, local + UTC times, the preview table.

Everything goes through ``format_html``: values are escaped.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from scheduler_app.definitions import timing_for
from scheduler_app.errors import SchedulerError
from scheduler_app.models import Schedule, ScheduleHealth, ScheduleStatus
from scheduler_app.preview import clock_text
from scheduler_app.timing import describe, get_zone

STATUS_CLASS: dict[str, str] = {
    ScheduleStatus.ACTIVE: "sched-ok",
    ScheduleStatus.PAUSED: "sched-paused",
    ScheduleStatus.COMPLETED: "sched-done",
    ScheduleStatus.CANCELLED: "sched-done",
    ScheduleStatus.AWAITING_APPROVAL: "sched-warn",
}
STATE_CLASS = {
    "succeeded": "sched-ok",
    "failed": "sched-bad",
    "expired": "sched-bad",
    "skipped": "sched-paused",
    "cancelled": "sched-done",
}


def zone_of(name: str) -> ZoneInfo:
    try:
        return get_zone(name)
    except SchedulerError:  # a zone gone from tzdata, or a refused form's value: show UTC
        return ZoneInfo("UTC")


def short_time(value: datetime, zone: ZoneInfo) -> str:
    local = value.astimezone(zone)
    return f"{local:%Y-%m-%d} {clock_text(local)} {local.tzname()}"


def local_and_utc_text(value: datetime | None, zone_name: str) -> str:
    if value is None:
        return "-"
    zone = zone_of(zone_name)
    utc = value.astimezone(UTC)
    if zone.key == "UTC":
        return f"{utc:%Y-%m-%d} {clock_text(utc)} UTC"
    return f"{short_time(value, zone)} ({utc:%Y-%m-%d} {clock_text(utc)} UTC)"


def local_and_utc(value: datetime | None, zone_name: str) -> SafeString | str:
    """The local time with its zone abbreviation, and UTC labelled, on two short lines."""
    if value is None:
        return "-"
    zone = zone_of(zone_name)
    utc = value.astimezone(UTC)
    if zone.key == "UTC":
        return format_html('<span class="sched-time">{}</span>', short_time(value, zone))
    return format_html(
        '<span class="sched-time">{}</span><br><span class="sched-utc">{} {} UTC</span>',
        short_time(value, zone),
        f"{utc:%Y-%m-%d}",
        clock_text(utc),
    )


def rule_sentence(schedule: Schedule) -> str:
    """The engine's English description, without the trailing zone (a column of its own)."""
    try:
        text = describe(timing_for(schedule))
    except (SchedulerError, ArithmeticError, ValueError):
        return f"{schedule.kind}: {schedule.rule[:80]}"
    suffix = f", {schedule.timezone}"
    return text[: -len(suffix)] if text.endswith(suffix) else text


def is_overdue(schedule: Schedule, now: datetime) -> bool:
    """Active, and its next slot is further behind than its grace (the beat is not keeping up)."""
    if schedule.status != ScheduleStatus.ACTIVE or schedule.next_run_at is None:
        return False
    return schedule.next_run_at < now - timedelta(seconds=max(schedule.max_lateness, 60))


def status_badge(schedule: Schedule, now: datetime) -> SafeString:
    badges = [(STATUS_CLASS.get(schedule.status, "sched-done"), schedule.status)]
    if is_overdue(schedule, now):
        badges.append(("sched-bad", "overdue"))
    if schedule.health == ScheduleHealth.UNHEALTHY:
        badges.append(("sched-bad", "expected run missing"))
    return format_html_join(" ", '<span class="sched-badge {}">{}</span>', badges)


def last_outcome(state: str | None, slot: datetime | None, started: datetime | None) -> Any:
    if state is None or slot is None:
        return "-"
    late = ""
    if started is not None:
        late = f" {format_seconds((started - slot).total_seconds())} late"
    return format_html(
        '<span class="sched-badge {}">{}</span><span class="sched-utc">{}</span>',
        STATE_CLASS.get(state, "sched-paused"),
        state,
        late,
    )


def format_seconds(seconds: float) -> str:
    seconds = max(seconds, 0.0)
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def preview_table(rows: list[dict[str, str | None]]) -> SafeString:
    body = format_html_join(
        "",
        "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
        ((row["local"], row["utc"], row["note"] or "") for row in rows),
    )
    return format_html(
        '<table class="sched-preview"><thead><tr><th>local</th><th>UTC</th><th>DST</th></tr>'
        "</thead><tbody>{}</tbody></table>",
        body,
    )
