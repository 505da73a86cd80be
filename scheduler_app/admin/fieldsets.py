"""The schedule page's layout: its fieldsets (what, when, policies, advanced), and the
read-only state and history shown on a change page."""

from __future__ import annotations

from scheduler_app.admin.forms import BUILDER_FIELDS

FIELDSETS_BUILDER = (
    (
        "What",
        # expected_version is hidden, but a field outside every fieldset is never rendered
        # (and so never posted back): it rides in the first fieldset.
        {
            "fields": (
                "name",
                "task",
                "endpoint",
                "kwargs",
                "args",
                "objective",
                "tenant",
                "owner",
                "expected_version",
            )
        },
    ),
    (
        "When",
        {
            "fields": (*BUILDER_FIELDS, "kind", "rule", "timezone", "exclude_holidays"),
            "description": "Build the rule, or choose Advanced to type cron, RRULE, an "
            "interval, an instant or a solar event ('sunrise 56.9496 24.1052'). The preview "
            "below follows your changes.",
        },
    ),
    (
        "If late or overlapping",
        {
            "fields": (
                "misfire_policy",
                "max_lateness",
                "catch_up_window",
                "catch_up_limit",
                "overlap_policy",
                "deadline",
                "max_attempts",
                "retry_delay",
                "cancel_grace",
                "on_pause",
            )
        },
    ),
    (
        "Advanced",
        {
            "classes": ("collapse",),
            "fields": (
                "dst_nonexistent",
                "dst_ambiguous",
                "anchor",
                "starts_at",
                "ends_at",
                "max_count",
                "active_window",
                "window_policy",
                "jitter",
                "mode",
                "interval_mode",
                "lateness_class",
                "expected_every",
                "max_per_day",
                "pause_after_failures",
                "archive_on_completion",
                "ping_url",
                "job_type",
                "payload_ref",
                "options",
                "cost_estimate",
            ),
        },
    ),
)
STATE_FIELDS = (
    "id",
    "key",
    "origin",
    "code_location",
    "status_text",
    "pause_text",
    "version",
    "next_run_text",
    "last_slot_text",
    "last_success_text",
    "health",
    "health_reason",
    "missed_count",
    "skipped_count",
    "caught_up_count",
    "occurrence_count",
    "last_error",
    "created_text",
    "updated_text",
)
HISTORY_FIELDS = ("preview", "owner_warning", "recent", "versions_diff")
DECLARED_INSTANTS = {"anchor": "anchor_text", "starts_at": "starts_text", "ends_at": "ends_text"}
"""A declared schedule's page shows its instants read-only, in the admin's format (Django's
read-only display would print ``Dec. 1, 2026, 6:49 p.m.``)."""
