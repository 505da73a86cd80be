"""Where each schedule field lives in a ``schedule.v1`` document, in both styles.

Two styles of the same contract (docs/contract.md):

- ``native``: every policy under ``policies``, lower-case enumerations, instants in UTC (``Z``),
  ``schedule_id`` the schedule's UUID and ``key`` beside it;
- ``spec``: the specification's own form: ``misfire`` and ``max_lateness_s`` at the top level,
  upper-case enumerations (``SKIP``, ``RECURRENCE``, ``ACTIVE``), ``owner_ref`` as
  ``user://<username>``, ``schedule_id`` the stable external id (the key, when the schedule
  has one), instants with the offset of the schedule's zone. Fields the specification does
  not name are kept, in the native places, so the spec style is lossless too.

The importer reads both, and any mix of them.
"""

from __future__ import annotations

from typing import Any, Literal

from scheduler_app.models import SEMANTIC_FIELDS

CONTRACT = "schedule.v1"
Style = Literal["native", "spec"]
STYLES: tuple[Style, ...] = ("native", "spec")


def _same_names(names: str) -> dict[str, str]:
    """A document name -> model field table for fields a document names as the model does."""
    return {name: name for name in names.split()}


TIMING_FIELDS = _same_names(  # document name under "timing" -> model field
    "kind rule timezone anchor starts_at ends_at max_count interval_mode active_window "
    "window_policy exclude_holidays"
)
DST_FIELDS = {"nonexistent": "dst_nonexistent", "ambiguous": "dst_ambiguous"}
POLICY_FIELDS = {  # document name under "policies" -> model field
    "misfire": "misfire_policy",
    **_same_names("max_lateness lateness_class catch_up_window catch_up_limit"),
    "overlap": "overlap_policy",
    **_same_names(
        "on_pause deadline jitter max_attempts retry_delay cancel_grace mode expected_every "
        "pause_after_failures max_per_day archive_on_completion ping_url"
    ),
}
SPEC_TOP_POLICIES = {"misfire": "misfire", "max_lateness_s": "max_lateness"}
"""The specification's top-level policy fields -> their name under ``policies``."""
TARGET_FIELDS = _same_names("task job_type payload_ref kwargs options args")
"""Document name under "target" -> model field."""
NULLABLE_SECONDS = ("deadline", "expected_every")
COUNT_POLICIES = ("catch_up_limit", "max_attempts")
NULLABLE_COUNTS = ("pause_after_failures", "max_per_day")
BOOLEAN_POLICIES = ("archive_on_completion",)
ENUM_FIELDS = (  # model fields whose values are enumerations: any case on import
    "kind",
    "interval_mode",
    "window_policy",
    "dst_nonexistent",
    "dst_ambiguous",
    "misfire_policy",
    "overlap_policy",
    "on_pause",
    "mode",
    "lateness_class",
)
KIND_ALIASES = {"recurrence": "rrule"}
SPEC_KINDS = {
    "rrule": "RECURRENCE",
    "cron": "CRON",
    "interval": "INTERVAL",
    "once": "ONCE",
    "solar": "SOLAR",
}
INFORMATIONAL = ("version", "next_run_at", "created_at", "updated_at")
"""Read-only: computed by the database. Ignored on import unless the importer is asked to
check ``version`` (optimistic concurrency, docs/contract.md)."""
IDENTITY = ("schedule_id", "uuid", "key")
DESCRIPTIVE = ("tenant_id", "owner_ref", "name", "objective", "status", "origin")
ORIGINS = ("api", "code")
"""``code``: declared with ``@scheduled`` (sync keeps it in step); kept across environments so
the target's sync recognises the schedules it owns. Set on create only."""
TOP_FIELDS = frozenset(
    {
        "contract",
        *IDENTITY,
        *DESCRIPTIVE,
        "target",
        "timing",
        "policies",
        *SPEC_TOP_POLICIES,
        *INFORMATIONAL,
    }
)
EVENT_FIELDS = ("event_type", "endpoint")
"""An event target's own names (``{"type": "event", "event_type": ..., "endpoint": ...}``):
the task ``event:<type>`` and ``options.endpoint``."""
USER_REF = "user://"

# Model field -> where it lives in a document, for error paths.
FIELD_PATHS = {
    **{model: f"timing.{name}" for name, model in TIMING_FIELDS.items()},
    **{model: f"timing.dst.{name}" for name, model in DST_FIELDS.items()},
    **{model: f"policies.{name}" for name, model in POLICY_FIELDS.items()},
    **{model: f"target.{name}" for name, model in TARGET_FIELDS.items()},
    "options.endpoint": "target.endpoint",
    "cron": "timing.rule",
    "rrule": "timing.rule",
    "every": "timing.rule",
    "at": "timing.rule",
    "solar": "timing.rule",
    "dst": "timing.dst",
    "window": "timing.active_window",
    "tenant": "tenant_id",
    "owner": "owner_ref",
}

_PLACED = {*TIMING_FIELDS.values(), *DST_FIELDS.values(), *POLICY_FIELDS.values()}
_PLACED |= set(TARGET_FIELDS.values()) | {"objective"}
UNPLACED = tuple(name for name in SEMANTIC_FIELDS if name not in _PLACED)
"""Semantic fields no document carries: must stay empty (a test keeps it so), or a new
field would be lost by every export and import."""


def enum_value(value: Any, field: str = "") -> Any:
    """An enumeration as stored: lower case; the spec's kind ``RECURRENCE`` is ``rrule``."""
    if not isinstance(value, str):
        return value
    text = value.strip().lower()
    return KIND_ALIASES.get(text, text) if field == "kind" else text


def spec_enum(value: Any) -> Any:
    return value.upper() if isinstance(value, str) else value
