"""The schedule page's history: its last 20 occurrences and its versions with a field diff."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from scheduler_app.admin.display import STATE_CLASS, instant_text
from scheduler_app.models import AuditAction, Schedule
from scheduler_app.safety import audit

RECENT = 20
VERSIONS = 20
AUDIT_SHOWN = 500
"""Entries on the History page, newest first; ``manage.py export_audit`` writes them all."""


def recent_occurrences(schedule: Schedule) -> SafeString | str:
    rows = list(
        schedule.occurrences.order_by("-scheduled_for").values_list(
            "pk", "scheduled_for", "trigger", "state", "reason", "attempts"
        )[:RECENT]
    )
    if not rows:
        return "none yet"
    body = format_html_join(
        "",
        '<tr><td><a href="{}">{}</a></td><td>{}</td><td><span class="sched-badge {}">{}</span>'
        "</td><td>{}</td><td>{}</td></tr>",
        (
            (
                reverse("admin:scheduler_app_occurrence_change", args=[pk]),
                instant_text(slot, schedule.timezone),
                trigger,
                STATE_CLASS.get(state, "sched-paused"),
                state,
                reason,
                attempts,
            )
            for pk, slot, trigger, state, reason, attempts in rows
        ),
    )
    link = (
        reverse("admin:scheduler_app_occurrence_changelist") + f"?schedule__id__exact={schedule.pk}"
    )
    return format_html(
        '<table class="sched-table"><thead><tr><th>slot</th><th>trigger</th><th>state</th>'
        "<th>reason</th><th>attempts</th></tr></thead><tbody>{}</tbody></table>"
        '<p><a href="{}">all occurrences of this schedule</a></p>',
        body,
        link,
    )


def field_diff(before: dict[str, Any], after: dict[str, Any]) -> list[tuple[str, str, str]]:
    """``(field, old, new)`` for every field whose value differs, in field order."""
    names = list(dict.fromkeys([*before, *after]))
    return [
        (name, _text(before.get(name)), _text(after.get(name)))
        for name in names
        if before.get(name) != after.get(name)
    ]


def _text(value: Any) -> str:
    text = "-" if value in (None, "") else str(value)
    return text if len(text) <= 120 else text[:117] + "..."


def version_diffs(schedule: Schedule) -> SafeString | str:
    versions = list(
        schedule.versions.order_by("-version").values_list("version", "created_at", "definition")[
            : VERSIONS + 1
        ]
    )
    if not versions:
        return "-"
    items = []
    for index, (number, created, definition) in enumerate(versions[:VERSIONS]):
        older = versions[index + 1][2] if index + 1 < len(versions) else None
        if older is None:
            changes = format_html("<li>{}</li>", "first version")
        else:
            changes = format_html_join(
                "", "<li><code>{}</code>: {} → {}</li>", field_diff(older, definition)
            ) or format_html("<li>{}</li>", "no semantic change")
        items.append((number, instant_text(created, schedule.timezone), changes))
    return format_html(
        '<table class="sched-table"><thead><tr><th>version</th><th>created</th><th>changes</th>'
        "</tr></thead><tbody>{}</tbody></table>",
        format_html_join("", "<tr><td>v{}</td><td>{}</td><td><ul>{}</ul></td></tr>", items),
    )


def details_html(details: dict[str, Any], zone: str) -> SafeString:
    """An entry's details as ``key: value`` pairs in the order they were recorded: instants in
    the admin's format, an occurrence as a link to its page."""
    return format_html_join(
        "; ", "{}: {}", ((key, _detail(key, value, zone)) for key, value in details.items())
    )


def _detail(key: str, value: Any, zone: str) -> Any:
    if key == "occurrence" and isinstance(value, str):
        url = reverse("admin:scheduler_app_occurrence_change", args=[value])
        return format_html('<a href="{}">{}</a>', url, value[:8])
    instant = _instant(value)
    return _text(value) if instant is None else instant_text(instant, zone)


def _instant(value: Any) -> datetime | None:
    """``value`` as an aware instant when it is one written as ISO 8601 (``audit.record``)."""
    if not isinstance(value, str) or "T" not in value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def audit_context(schedule: Schedule) -> dict[str, Any]:
    """What the History page shows beside Django's log: who did what to the schedule, when
    and why, and every kill-switch change whose scope covers it (two queries).

    The page is reached through the schedule's scoped queryset, so the switch events shown
    are only those that stopped or released this schedule, whoever turned them."""
    labels = dict(AuditAction.choices)
    entries = list(audit.trail([schedule.pk]).order_by("-at", "-id")[: AUDIT_SHOWN + 1])
    switches = list(audit.switch_events_covering(schedule)[:AUDIT_SHOWN])
    zone = schedule.timezone
    return {
        "audit_rows": [
            {
                "at": instant_text(entry.at, zone),
                "by": entry.by,
                "action": labels.get(entry.action, entry.action),
                "reason": entry.reason,
                "version": "-" if entry.version is None else f"v{entry.version}",
                "details": details_html(entry.details or {}, zone),
            }
            for entry in entries[:AUDIT_SHOWN]
        ],
        "audit_more": len(entries) > AUDIT_SHOWN,
        "audit_shown": AUDIT_SHOWN,
        "switch_rows": [
            {
                "at": instant_text(event.at, zone),
                "by": event.by,
                "turned": "on" if event.enabled else "off",
                "scope": event.scope if not event.target else f"{event.scope} {event.target}",
                "reason": event.reason,
            }
            for event in switches
        ],
    }
