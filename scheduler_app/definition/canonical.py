"""A schedule definition's fields in their one stored form, and the default of each.

``DEFAULTS`` holds every definition field a caller may leave out; ``normalize_definition``
writes a definition in canonical form, so equal definitions compare equal. No database:
``scheduler_app.definition.parsed`` builds every definition through them.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from scheduler_app.policies.limits import check_rule
from scheduler_app.timing import Kind, canonical_zone, ensure_aware, parse_duration

SECONDS_FIELDS = (
    "max_lateness",
    "catch_up_window",
    "deadline",
    "jitter",
    "retry_delay",
    "cancel_grace",
    "expected_every",
)
"""The fields that hold a duration, stored in whole seconds (a ``timedelta`` given for one is
stored as its seconds; a schedule.v1 document gives them in seconds)."""
DEFAULTS: dict[str, Any] = {
    "kwargs": {},
    "objective": "",
    "timezone": "UTC",
    "anchor": None,
    "dst_nonexistent": "auto",
    "dst_ambiguous": "auto",
    "starts_at": None,
    "ends_at": None,
    "max_count": None,
    "misfire_policy": "catch_up",
    "max_lateness": 60,
    "catch_up_window": 86400,
    "catch_up_limit": 12,
    "overlap_policy": "skip",
    "on_pause": "keep",
    "interval_mode": "fixed_rate",
    "max_attempts": 3,
    "retry_delay": 10,
    "cancel_grace": 60,
    "expected_every": None,
    "active_window": "",
    "window_policy": "defer",
    "deadline": None,
    "jitter": 0,
    "mode": "live",
    "lateness_class": "",
    "job_type": "",
    "payload_ref": "",
    "options": {},
    "pause_after_failures": None,
    "max_per_day": None,
    "archive_on_completion": False,
    "args": [],
    "exclude_holidays": "",
    "ping_url": "",
}


def normalize_definition(values: dict[str, Any], now: datetime) -> dict[str, Any]:
    """Store every field in one canonical form, so equal definitions compare equal."""
    result = dict(values)
    check_rule(result["kind"], result["rule"])  # before a long rule is parsed or stripped
    kind = str(result["kind"]).strip().lower()
    result["kind"] = kind
    result["timezone"] = canonical_zone(result.get("timezone", "UTC"))
    for name in ("anchor", "starts_at", "ends_at"):
        if result.get(name) is not None:
            result[name] = ensure_aware(result[name], name).replace(microsecond=0)
    if kind == Kind.RRULE and result.get("anchor") is None:
        # DTSTART gives an RRULE the seconds its BY* parts leave out: never ones nobody chose.
        result["anchor"] = now.astimezone(UTC).replace(second=0, microsecond=0)
    elif kind == Kind.INTERVAL and result.get("anchor") is None:
        result["anchor"] = now.astimezone(UTC).replace(microsecond=0)
    if kind == Kind.INTERVAL:
        result["rule"] = str(int(parse_duration(result["rule"], "rule").total_seconds()))
    elif kind == Kind.ONCE and isinstance(result["rule"], datetime):
        at = result["rule"]
        result["rule"] = (at.astimezone(UTC) if at.tzinfo else at).isoformat()
    elif isinstance(result["rule"], str):
        # Browsers post a textarea's line breaks as CRLF (HTML's rule): RFC 5545 lines are
        # stored with LF, so an edit of something else never reads as a new rule.
        result["rule"] = result["rule"].replace("\r\n", "\n").replace("\r", "\n").strip()
    for name in SECONDS_FIELDS:
        value = result.get(name)
        if isinstance(value, timedelta):
            result[name] = int(value.total_seconds())
    if result.get("kwargs") is None:
        result["kwargs"] = {}
    if result.get("args") is None:
        result["args"] = []
    elif isinstance(result["args"], tuple):
        result["args"] = list(result["args"])
    if isinstance(result.get("exclude_holidays"), str):
        result["exclude_holidays"] = result["exclude_holidays"].strip().upper()
    elif result.get("exclude_holidays") is None:
        result["exclude_holidays"] = ""
    if kind == Kind.SOLAR and isinstance(result["rule"], str):
        result["rule"] = " ".join(result["rule"].lower().split())
    return result
