"""Small HTML pieces of the admin pages: badges, local + UTC times, the preview table.

Everything goes through ``format_html``: values are escaped.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from scheduler_app.authoring.preview import window_clause
from scheduler_app.definition.schedule import timing_for
from scheduler_app.errors import SchedulerError
from scheduler_app.models import (
    Occurrence,
    Schedule,
    ScheduleHealth,
    ScheduleMode,
    ScheduleOrigin,
    ScheduleStatus,
)
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


def _instant_parts(value: datetime, zone_name: str) -> tuple[str, str | None]:
    """The local part with its zone abbreviation, and the UTC part (None for a UTC zone).

    The UTC part repeats the date only when it differs from the local date."""
    zone = zone_of(zone_name)
    utc = value.astimezone(UTC)
    if zone.key == "UTC":
        return f"{utc:%Y-%m-%d %H:%M:%S} UTC", None
    local = value.astimezone(zone)
    same_day = local.date() == utc.date()
    utc_part = f"{utc:%H:%M:%S} UTC" if same_day else f"{utc:%Y-%m-%d %H:%M:%S} UTC"
    return f"{local:%Y-%m-%d %H:%M:%S} {local.tzname()}", utc_part


def occurrence_title(occurrence: Occurrence) -> str:
    """How an occurrence is named on its pages: its schedule and its slot in the schedule's
    local time with the zone, e.g. ``nightly report — 2026-12-06 02:00 Europe/Riga`` (the
    seconds only when the slot has some; never microseconds)."""
    zone = zone_of(occurrence.timezone)
    local = occurrence.scheduled_for.astimezone(zone)
    shown = f"{local:%Y-%m-%d %H:%M:%S}" if local.second else f"{local:%Y-%m-%d %H:%M}"
    return f"{occurrence.schedule} — {shown} {zone.key}"


def instant_text(value: datetime | None, zone_name: str = "UTC") -> str:
    """The one format for instants in the admin: seconds and zone, local with UTC beside it
    where there is a zone, e.g. ``2026-12-01 18:49:07 CET (17:49:07 UTC)``; UTC alone
    (``2026-12-01 17:49:07 UTC``) otherwise. ``-`` for no instant."""
    if value is None:
        return "-"
    local, utc = _instant_parts(value, zone_name)
    return local if utc is None else f"{local} ({utc})"


def local_and_utc(value: datetime | None, zone_name: str = "UTC") -> SafeString | str:
    """``instant_text`` for list columns: the local time, then UTC on a line of its own; the
    date and the clock may wrap apart in a narrow column (never inside either)."""
    if value is None:
        return "-"
    local, utc = _instant_parts(value, zone_name)
    day, clock = local.split(" ", 1)
    html = format_html(
        '<span class="sched-time"><span class="sched-date">{}</span> '
        '<span class="sched-clock">{}</span></span>',
        day,
        clock,
    )
    if utc is None:
        return html
    return format_html('{}<br><span class="sched-utc">{}</span>', html, utc)


def rule_sentence(schedule: Schedule) -> str:
    """The engine's English description, without the trailing zone (a column of its own),
    with the active window (``preview.window_clause``)."""
    try:
        timing = timing_for(schedule)
        text = describe(timing)
    except (SchedulerError, ArithmeticError, ValueError):
        return f"{schedule.kind}: {schedule.rule[:80]}"
    suffix = f", {schedule.timezone}"
    return (text[: -len(suffix)] if text.endswith(suffix) else text) + window_clause(timing)


def is_overdue(schedule: Schedule, now: datetime) -> bool:
    """Active, and its next slot is further behind than its grace (the beat is not keeping up)."""
    if schedule.status != ScheduleStatus.ACTIVE or schedule.next_run_at is None:
        return False
    try:
        grace = timedelta(seconds=max(int(schedule.max_lateness), 60))
        return schedule.next_run_at < now - grace
    except (OverflowError, TypeError, ValueError):  # an unsaved, invalid value on the form
        return False


def will_run(schedule: Schedule, kill_switched: bool = False) -> bool:
    """Whether its stored next run will happen: active and no kill switch covers it (a paused,
    cancelled or awaiting schedule keeps a ``next_run_at`` that nothing will act on)."""
    return (
        schedule.status == ScheduleStatus.ACTIVE
        and schedule.next_run_at is not None
        and not kill_switched
    )


def next_run(schedule: Schedule, kill_switched: bool = False) -> SafeString | str:
    """The next run in the list: only for a schedule that will run."""
    if not will_run(schedule, kill_switched):
        return "-"
    return local_and_utc(schedule.next_run_at, schedule.timezone)


def display_name(schedule: Schedule) -> str:
    """Its name or key; an unnamed schedule reads as its task and rule, not as a UUID."""
    if schedule.name or schedule.key:
        return str(schedule.name or schedule.key)
    rule = rule_sentence(schedule)
    return f"{schedule.task}: {rule[:60]}{'...' if len(rule) > 60 else ''}"


def pause_text(schedule: Schedule) -> str:
    """Since when, by whom and why it is paused ("" when it is not)."""
    if schedule.status != ScheduleStatus.PAUSED:
        return ""
    who = f" by {schedule.paused_by}" if schedule.paused_by else ""
    note = f": {schedule.pause_note}" if schedule.pause_note else ""
    return f"paused since {instant_text(schedule.paused_at, schedule.timezone)}{who}{note}"


NOTE_SHOWN = 60
"""Characters of the pause note shown in the list; the whole note is in the tooltip."""
KILL_SWITCH_TITLE = (
    "A kill switch that is on covers it (global, its tenant or its task): its occurrences "
    "are skipped, not run. The schedule's History lists the switch."
)


def status_badge(schedule: Schedule, now: datetime, kill_switched: bool = False) -> SafeString:
    """Its status, and what stops it or is wrong with it; a paused schedule shows its note."""
    title = pause_text(schedule) or schedule.get_status_display()
    badges = [(STATUS_CLASS.get(schedule.status, "sched-done"), title, _status_label(schedule))]
    if kill_switched:
        badges.append(("sched-bad", KILL_SWITCH_TITLE, "kill switch"))
    if schedule.mode == ScheduleMode.SHADOW:
        badges.append(("sched-paused", schedule.get_mode_display(), "shadow"))
    if schedule.origin == ScheduleOrigin.CODE:
        badges.append(("sched-done", schedule.get_origin_display(), "code"))
    if is_overdue(schedule, now) and not kill_switched:
        badges.append(("sched-bad", "its next slot is behind: is the beat running?", "overdue"))
    if schedule.health == ScheduleHealth.UNHEALTHY:
        badges.append(("sched-bad", schedule.health_reason, "expected run missing"))
    html = format_html_join(" ", '<span class="sched-badge {}" title="{}">{}</span>', badges)
    note = schedule.pause_note if schedule.status == ScheduleStatus.PAUSED else ""
    if not note:
        return html
    shown = note if len(note) <= NOTE_SHOWN else note[: NOTE_SHOWN - 3] + "..."
    return format_html('{}<div class="sched-note" title="{}">{}</div>', html, note, shown)


def _status_label(schedule: Schedule) -> str:
    return str(schedule.status).replace("_", " ")


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


def preview_table(rows: list[dict[str, str | None]], notes: Sequence[str] = ()) -> SafeString:
    """The slots, then what the calendar left out ("skips Fri 2027-12-24: Christmas Eve")."""
    body = format_html_join(
        "",
        "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
        ((row["local"], row["utc"], row["note"] or "") for row in rows),
    )
    skipped = format_html_join("", '<li class="sched-note">{}</li>', ((note,) for note in notes))
    return format_html(
        '<table class="sched-preview"><thead><tr><th>local</th><th>UTC</th><th>DST</th></tr>'
        "</thead><tbody>{}</tbody></table>{}",
        body,
        format_html('<ul class="sched-skipped">{}</ul>', skipped) if notes else "",
    )
