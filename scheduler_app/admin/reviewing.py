"""What an approver reviews: every field of the version that changes what runs or where it
goes, grouped, and what changed since the last approved version.

Every semantic field (``SEMANTIC_FIELDS``: what an edit versions) is in exactly one group, so
a field added to the model and not to a group fails ``tests/integration/admin/
test_approve_page.py``: an approver is never asked to confirm a change the page does not show.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from django.contrib.auth import get_user_model

from scheduler_app.models import Schedule, ScheduleVersion

GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("what runs", ("task", "args", "kwargs", "job_type", "payload_ref", "objective")),
    ("where it goes", ("target", "options", "ping_url", "mode")),
    (
        "timing",
        (
            "kind",
            "rule",
            "dialect",
            "anchor",
            "timezone",
            "dst_nonexistent",
            "dst_ambiguous",
            "starts_at",
            "ends_at",
            "max_count",
            "interval_mode",
            "active_window",
            "window_policy",
            "exclude_holidays",
        ),
    ),
    (
        "policies",
        (
            "misfire_policy",
            "max_lateness",
            "catch_up_window",
            "catch_up_limit",
            "overlap_policy",
            "on_pause",
            "max_attempts",
            "retry_delay",
            "cancel_grace",
            "deadline",
            "jitter",
            "max_per_day",
            "pause_after_failures",
            "expected_every",
            "lateness_class",
            "archive_on_completion",
        ),
    ),
)
"""The fields shown, in the order shown, by what they decide."""
SHOWN = tuple(name for _, names in GROUPS for name in names)
LABELS = {
    "args": "args (positional)",
    "kwargs": "kwargs (payload)",
    "options": "options (routing)",
    "ping_url": "ping URL",
    "payload_ref": "payload reference",
    "target": "handoff target",
}
COMPARED = (*SHOWN, "tenant", "owner_id", "name")
"""What the diff compares: every shown field the stored version holds, and who and which."""
INSTANTS = ("anchor", "starts_at", "ends_at")
"""Stored as ISO text in a version; compared as instants (the same one in any offset)."""


def label(name: str) -> str:
    return LABELS.get(name, name.replace("_", " ").replace("owner id", "owner"))


def shown(value: Any) -> str:
    """A value as the page shows it: JSON for structures, "-" for nothing."""
    if value is None or value == "":
        return "-"
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    if isinstance(value, dict | list | tuple):
        return json.dumps(value, indent=2, sort_keys=True, default=str)
    return str(value)


def version_rows(schedule: Schedule) -> list[tuple[str, str]]:
    """Every field of ``GROUPS``, labelled with its group: ``(label, value)`` rows."""
    return [
        (f"{group}: {label(name)}", shown(getattr(schedule, name)))
        for group, names in GROUPS
        for name in names
    ]


def last_approved(schedule: Schedule) -> ScheduleVersion | None:
    """The newest approved version before the one waiting, or None."""
    earlier = ScheduleVersion.objects.filter(
        schedule=schedule, approved_at__isnull=False, version__lt=schedule.version
    )
    return earlier.order_by("-version").first()


def _current(schedule: Schedule, name: str) -> Any:
    return schedule.owner_id if name == "owner_id" else getattr(schedule, name)


def _owner_name(pk: Any) -> str:
    if pk is None:
        return "-"
    user = get_user_model().objects.filter(pk=pk).first()
    return user.get_username() if user is not None else f"(deleted user {pk})"


def _stored(name: str, value: Any) -> str:
    if name in INSTANTS and isinstance(value, str):
        try:
            return shown(datetime.fromisoformat(value))
        except ValueError:
            return value
    return shown(value)


def changes(schedule: Schedule) -> tuple[str, list[tuple[str, str, str]]]:
    """What changed since the last approved version: a heading and ``(field, approved, now)``
    rows (only fields that differ)."""
    approved = last_approved(schedule)
    if approved is None:
        return "No earlier version was approved: every field above is new to approval.", []
    stored = approved.definition
    rows = []
    for name in COMPARED:
        if name not in stored:
            continue
        before, after = _stored(name, stored[name]), shown(_current(schedule, name))
        if before != after:
            if name == "owner_id":
                before, after = _owner_name(stored[name]), _owner_name(schedule.owner_id)
            rows.append((label(name), before, after))
    if not rows:
        return f"Same as approved version {approved.version} (no field differs).", []
    return f"Changed since approved version {approved.version}:", rows
