"""The fields the schedule services take, and the one form each is stored in.

Which fields a caller may pass besides the definition (descriptive ones, and create-only ones
that only system actors give), the default of every definition field (``DEFAULTS``), and
``normalize_definition``, which writes a definition in canonical form so equal definitions
compare equal. No database: ``scheduler_app.services.schedules`` and the ``schedule.v1``
contract call these before anything is written.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from scheduler_app.errors import ScheduleValidationError
from scheduler_app.models import ScheduleOrigin
from scheduler_app.policies.limits import check_rule
from scheduler_app.safety.actors import is_system
from scheduler_app.timing import Kind, canonical_zone, ensure_aware, parse_duration

DESCRIPTIVE_FIELDS = ("name", "key", "tenant", "owner")
OPERATIONAL_FIELDS = ("cost_estimate",)
"""Fields that change neither what runs nor who owns it: stored and audited, no new version."""
MAX_COST_ESTIMATE = 1e12
CREATE_ONLY_FIELDS = ("id", "origin")
"""Fields a caller may set when creating (an imported id, ``origin`` for code) but never change."""
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


def check_create_only(fields: dict[str, Any], user: Any) -> None:
    """An id or an origin is given by imports and decorator sync (system actors), never by a
    person: ``origin="code"`` would lock every person out of the schedule."""
    origin = fields.get("origin")
    if origin and origin not in ScheduleOrigin.values:
        choices = ", ".join(ScheduleOrigin.values)
        raise ScheduleValidationError(
            "origin", f"unknown origin {origin!r}; use one of: {choices}", code="invalid"
        )
    given = [name for name in CREATE_ONLY_FIELDS if fields.get(name)]
    if given and not is_system(user):
        raise ScheduleValidationError(
            given[0],
            f"{given[0]} is set by imports and by the code (@scheduled), not by a person; "
            "leave it out",
            code="not_allowed",
        )


def refuse_unknown(fields: dict[str, Any], allowed: tuple[str, ...]) -> None:
    unknown = set(fields) - set(allowed)
    if unknown:
        name = sorted(unknown)[0]
        raise ScheduleValidationError(
            name, f"unknown schedule field {name!r}", code="unknown_field"
        )


def operational_values(fields: dict[str, Any]) -> dict[str, Any]:
    """The operational fields given, validated: ``cost_estimate`` is None or a finite number
    from 0 to 1e12 (the cost of one run, for backfill estimates)."""
    values = {name: fields[name] for name in OPERATIONAL_FIELDS if name in fields}
    if "cost_estimate" in values:
        values["cost_estimate"] = _cost(values["cost_estimate"])
    return values


def _cost(value: Any) -> float | None:
    if value is None:
        return None
    number = (
        float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
    )
    if number is None or not 0 <= number <= MAX_COST_ESTIMATE:  # NaN fails both comparisons
        raise ScheduleValidationError(
            "cost_estimate",
            f"{value!r} is not a cost: give a number from 0 to {MAX_COST_ESTIMATE:g} (the cost "
            "of one run), or None",
            code="invalid",
        )
    return number


def descriptive_values(fields: dict[str, Any]) -> dict[str, Any]:
    return {name: fields[name] for name in DESCRIPTIVE_FIELDS if name in fields}


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
    for name in (
        "max_lateness",
        "catch_up_window",
        "deadline",
        "jitter",
        "retry_delay",
        "cancel_grace",
        "expected_every",
    ):
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
