"""From stored schedule fields to a validated ``Timing``; keys and ids derived from slots.

The task, payload and options are checked in ``checks``.
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any

from scheduler_app.conf import get_settings
from scheduler_app.definition.checks import (
    check_event_args,
    check_options,
    check_payload,
    check_task,
    holidays_code,
)
from scheduler_app.errors import ScheduleValidationError
from scheduler_app.models import (
    IntervalMode,
    MisfirePolicy,
    OverlapPolicy,
    PauseBehaviour,
    Schedule,
    ScheduleMode,
)
from scheduler_app.observability.urls import check_ping_url
from scheduler_app.policies.limits import (
    check_numbers,
    check_rule,
    check_text,
)
from scheduler_app.policies.misfire import MisfireRules
from scheduler_app.timing import Kind, Timing, build_timing, parse_duration
from scheduler_app.timing.budget import SearchBudget
from scheduler_app.timing.calendars.public_holidays import (
    data_version as holidays_data_version,
)
from scheduler_app.timing.rules import IntervalRule

_OCCURRENCE_NAMESPACE = uuid.UUID("6f1d3c1e-1b7e-4d55-9a55-2f5b8f0a7c11")
_NAMESPACE_BYTES = _OCCURRENCE_NAMESPACE.bytes


LONG_RULE = 4096
"""Rules longer than this (RDATE and EXDATE lines: up to 40,000 characters, a parsed Timing of
~150 kB) are kept in a cache of their own, of ``LONG_RULES`` entries: in the common one, 65,536
of them filled gigabytes of a web worker from previews (security review 10)."""
LONG_RULES = 256


def timing_for(schedule: Schedule) -> Timing:
    """The schedule's ``Timing`` (cached per definition: parsing happens once), with the search
    budget of the settings (``SCHEDULER_SEARCH_CANDIDATES``, ``SCHEDULER_SEARCH_SPAN_DAYS``)."""
    cached = _long_timing if len(schedule.rule or "") > LONG_RULE else _timing
    return cached(
        schedule.kind,
        schedule.rule,
        schedule.timezone,
        _as_utc(schedule.anchor),
        schedule.dst_nonexistent,
        schedule.dst_ambiguous,
        _as_utc(schedule.starts_at),
        _as_utc(schedule.ends_at),
        schedule.max_count,
        schedule.active_window,
        schedule.window_policy,
        schedule.exclude_holidays,
        budget=search_budget(),
    )


def _as_utc(value: Any) -> Any:
    """An aware datetime as its UTC instant before it keys ``_timing``: two local times that
    differ only by ``fold`` compare and hash equal although an hour apart."""
    if isinstance(value, datetime) and value.tzinfo is not UTC and value.utcoffset() is not None:
        return value.astimezone(UTC)
    return value


def search_budget() -> SearchBudget:
    """The settings' search budget: how much work one computation of a slot may do."""
    settings = get_settings()
    return _budget(settings.SEARCH_CANDIDATES, settings.SEARCH_SPAN_DAYS, settings.SEARCH_SECONDS)


@lru_cache(maxsize=16)
def _budget(candidates: int, span_days: int, seconds: float) -> SearchBudget:
    try:
        return SearchBudget(candidates=candidates, span=timedelta(days=span_days), seconds=seconds)
    except (TypeError, ValueError, OverflowError):
        raise ScheduleValidationError(
            "settings",
            f"SCHEDULER_SEARCH_CANDIDATES ({candidates!r}) and SCHEDULER_SEARCH_SPAN_DAYS "
            f"({span_days!r}) must be whole numbers >= 1, SCHEDULER_SEARCH_SECONDS "
            f"({seconds!r}) a number above 0; fix the Django settings",
            code="bad_setting",
        ) from None


@lru_cache(maxsize=65536)
def _timing(
    kind: str,
    rule: str,
    timezone: str,
    anchor: datetime | None,
    nonexistent: str,
    ambiguous: str,
    starts_at: datetime | None,
    ends_at: datetime | None,
    max_count: int | None,
    active_window: str = "",
    window_policy: str = "defer",
    exclude_holidays: str = "",
    *,
    budget: SearchBudget,
) -> Timing:
    raw_rule: str | timedelta = parse_duration(rule, "rule") if kind == Kind.INTERVAL else rule
    return build_timing(
        kind=kind,
        rule=raw_rule,
        timezone=timezone,
        anchor=anchor,
        nonexistent=nonexistent,
        ambiguous=ambiguous,
        starts_at=starts_at,
        ends_at=ends_at,
        max_count=max_count,
        window=active_window or None,
        window_policy=window_policy or "defer",
        exclude_holidays=exclude_holidays or None,
        budget=budget,
    )


_long_timing = lru_cache(maxsize=LONG_RULES)(_timing.__wrapped__)


def misfire_rules(schedule: Schedule) -> MisfireRules:
    return _misfire_rules(
        schedule.misfire_policy,
        schedule.max_lateness,
        schedule.catch_up_window,
        schedule.catch_up_limit,
    )


@lru_cache(maxsize=1024)
def _misfire_rules(policy: str, lateness: int, window: int, limit: int) -> MisfireRules:
    """Remembered (frozen, so shared safely): a burst's schedules mostly share their rules."""
    return MisfireRules(
        policy=policy,
        max_lateness=timedelta(seconds=lateness),
        catch_up_window=timedelta(seconds=window),
        catch_up_limit=limit,
    )


def idempotency_key(schedule_id: uuid.UUID | str, scheduled_for: datetime) -> str:
    """Derived from the schedule id and the slot (UTC) only: the same on every beat and retry."""
    return f"{schedule_id}:{_utc_text(scheduled_for.astimezone(UTC))}"


@lru_cache(maxsize=4096)
def _utc_text(instant: datetime) -> str:
    """A UTC instant as a key writes it, remembered: a burst is mostly schedules due at one
    instant, and ``strftime`` was half of a key's time. Only UTC instants are remembered: two
    local times of one zone that differ only by ``fold`` (the two 03:30 of a night the clocks
    go back) compare and hash equal although they are an hour apart."""
    return instant.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def as_key(text: str) -> str | None:
    """``text`` as the idempotency key it reads as (a schedule id, a colon, then the slot, or
    ``manual:`` and a random part), its schedule id written as the keys write it (lower case,
    with dashes); None when it reads as no key."""
    schedule_id, colon, rest = text.partition(":")
    if not (colon and rest):
        return None
    try:
        return f"{uuid.UUID(schedule_id)}:{rest}"
    except ValueError:
        return None


def is_uuid(value: object) -> bool:
    """Whether ``value`` reads as a UUID (every id here is one; anything else matches no row)."""
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return True


def occurrence_id(key: str) -> uuid.UUID:
    """Deterministic: racing beats that compute the same slot compute the same task id."""
    return _uuid5(key)


def version_id(schedule_id: uuid.UUID | str, version: int) -> uuid.UUID:
    return _uuid5(f"{schedule_id}/v{version}")


def _uuid5(name: str) -> uuid.UUID:
    """``uuid.uuid5(_OCCURRENCE_NAMESPACE, name)``, the namespace's bytes read once (40% of
    the call on the beat's path, where every slot computes one)."""
    digest = hashlib.sha1(_NAMESPACE_BYTES + name.encode(), usedforsecurity=False).digest()
    return uuid.UUID(bytes=digest[:16], version=5)


def jitter_for(key: str, jitter_seconds: int) -> timedelta:
    """A delay in [0, jitter] derived from the key, so every beat picks the same one."""
    if jitter_seconds <= 0:
        return timedelta(0)
    digest = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big")
    return timedelta(seconds=digest % (jitter_seconds + 1))


TEXT_FIELDS = (
    "objective",
    "timezone",
    "active_window",
    "job_type",
    "payload_ref",
    "lateness_class",
)

CHOICE_FIELDS = {
    "misfire_policy": MisfirePolicy,
    "overlap_policy": OverlapPolicy,
    "on_pause": PauseBehaviour,
    "mode": ScheduleMode,
    "interval_mode": IntervalMode,
}


def validate_definition(values: dict[str, Any]) -> Timing:
    """Check a schedule definition; raise ``ScheduleValidationError`` for the first problem.

    The cheap limits (lengths, numbers, strict JSON) come first, so hostile input is refused
    before anything parses or evaluates it.
    """
    check_rule(values.get("kind"), values.get("rule"))
    for field in TEXT_FIELDS:
        check_text(field, values.get(field))
    check_ping_url(
        values.get("ping_url"),
        allow_credentials=get_settings().PING_ALLOW_CREDENTIALS,
        allowed_hosts=get_settings().PING_ALLOWED_HOSTS,
    )
    check_task(values.get("task"))
    check_payload(values.get("kwargs", {}), values.get("args", []))
    check_event_args(values.get("task"), values.get("args"))
    check_options(values.get("options"))
    _check_choices(values)
    _check_seconds_and_counts(values)
    for field in ("kind", "rule"):
        if values.get(field) in (None, ""):
            raise ScheduleValidationError(field, f"{field} is required", code="required")
    max_count = values.get("max_count")
    if max_count is not None and (not isinstance(max_count, int) or isinstance(max_count, bool)):
        raise ScheduleValidationError(
            "max_count", f"must be a whole number >= 1, got {max_count!r}"
        )
    for field in ("anchor", "starts_at", "ends_at"):
        if values.get(field) is not None and not isinstance(values[field], datetime):
            raise ScheduleValidationError(
                field, f"expected an aware datetime, got {type(values[field]).__name__}"
            )
    check_numbers(values)
    if values.get("interval_mode", "fixed_rate") != "fixed_rate" and values["kind"] != "interval":
        raise ScheduleValidationError(
            "interval_mode", "fixed_delay applies to interval rules only; use kind='interval'"
        )
    timing = _cached_timing(values)
    check_min_interval(timing)
    return timing


def _check_choices(values: dict[str, Any]) -> None:
    """Refuse a value of a choice field (``CHOICE_FIELDS``) that is none of its choices."""
    for field, choices in CHOICE_FIELDS.items():
        if field in values and values[field] not in choices.values:
            allowed = ", ".join(choices.values)
            raise ScheduleValidationError(
                field,
                f"unknown value {values[field]!r}; use one of: {allowed}",
                code="invalid_choice",
            )


def _check_seconds_and_counts(values: dict[str, Any]) -> None:
    """Refuse durations that are no whole number of seconds >= 0 and counts below 1."""
    for field in (
        "max_lateness",
        "catch_up_window",
        "jitter",
        "deadline",
        "retry_delay",
        "cancel_grace",
    ):
        value = values.get(field)
        if value is not None and (
            not isinstance(value, int) or isinstance(value, bool) or value < 0
        ):
            raise ScheduleValidationError(
                field, f"must be a whole number of seconds >= 0, got {value!r}"
            )
    for field in ("catch_up_limit", "max_attempts"):
        count = values.get(field, 1)
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise ScheduleValidationError(field, f"must be a whole number >= 1, got {count!r}")


def _cached_timing(values: dict[str, Any]) -> Timing:
    """The ``Timing`` of checked ``values``, from the cache that fits the rule's length."""
    cached = _long_timing if len(str(values["rule"])) > LONG_RULE else _timing
    return cached(
        str(values["kind"]),
        str(values["rule"]),
        str(values.get("timezone", "UTC")),
        _as_utc(values.get("anchor")),
        str(values.get("dst_nonexistent", "auto")),
        str(values.get("dst_ambiguous", "auto")),
        _as_utc(values.get("starts_at")),
        _as_utc(values.get("ends_at")),
        values.get("max_count"),
        str(values.get("active_window") or ""),
        str(values.get("window_policy") or "defer"),
        holidays_code(values.get("exclude_holidays")),
        budget=search_budget(),
    )


def check_min_interval(timing: Timing) -> None:
    """Refuse rules whose slots can come closer than ``SCHEDULER_MIN_INTERVAL`` seconds.

    Checked here, not in the cached ``_timing``: the setting may change between calls, and
    a stored schedule must keep evaluating if the minimum is raised later. Calendar rules are
    measured on their wall clock (``Timing.min_gap``, see ``timing/gaps.py``).
    """
    gap = timing.min_gap
    minimum = get_settings().MIN_INTERVAL
    if gap is None or gap >= minimum:
        return
    if isinstance(timing.rule, IntervalRule):
        what, fix = f"interval {gap}s", "use a longer interval"
    elif timing.kind == Kind.CRON:
        what, fix = "cron expression", "list fewer minutes or hours"
    elif timing.kind == Kind.SOLAR:
        what, fix = "solar rule", "use a cron rule"
    else:
        what, fix = "RRULE", "raise INTERVAL, use a coarser FREQ or list fewer BY values"
    raise ScheduleValidationError(
        "rule",
        f"the {what} can fire {gap}s apart, less than the minimum of {minimum}s between slots "
        f"(setting SCHEDULER_MIN_INTERVAL); {fix}, or lower the setting",
        code="too_frequent",
    )


def calendar_data_versions(schedule: Schedule) -> dict[str, str]:
    """The calendar data a version's slots depend on (``{"holidays_data": "0.109"}``), stored
    in its definition: an update of the data shows as a difference between versions."""
    if not schedule.exclude_holidays:
        return {}
    return {"holidays_data": holidays_data_version()}
