"""The options of one ``@scheduled(...)`` call: ``ScheduleOptions`` and the check of each option.

Each check takes the value as written in the decorator and returns it in its canonical, stored
form (or ``None`` for "the store's default"), raising ``ScheduleValidationError`` with the
offending parameter as ``field``; ``check_timing`` then parses the whole rule as the engine
will. No database, no Celery: ``scheduler_app.authoring.declarations`` calls these when the
decorator runs, i.e. at import time.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from difflib import get_close_matches
from typing import Any, TypedDict

from scheduler_app.definition.policies import (
    CancelPrevious,
    CatchUp,
    Deadline,
    Duration,
    FireOnce,
    Overlap,
    Retry,
    Skip,
    Window,
)
from scheduler_app.errors import InvalidRule, ScheduleValidationError
from scheduler_app.models import IntervalMode
from scheduler_app.timing import Kind, build_timing, ensure_aware
from scheduler_app.timing.durations import parse_duration


class Declared(TypedDict, total=False):
    """The keywords of ``@scheduled(...)``, written once: the decorator's signature reads
    them (``**options: Unpack[Declared]``), editors and type checkers offer them, and
    ``declared`` checks a call against them. docs/decorator.md describes each one."""

    cron: str | None
    rrule: str | None
    every: Duration | None
    at: datetime | None
    text: str | None
    solar: str | None
    anchor: datetime | None
    interval_mode: str | None
    timezone: str | None
    objective: str
    key: str | None
    kwargs: dict[str, Any] | None
    args: list[Any] | None
    exclude_holidays: str | None
    nonexistent: str | None
    ambiguous: str | None
    starts_at: datetime | None
    ends_at: datetime | None
    max_count: int | None
    misfire: str | Skip | FireOnce | CatchUp | None
    max_lateness: Duration | None
    catch_up_window: Duration | None
    catch_up_limit: int | None
    overlap: str | Overlap | CancelPrevious | None
    on_pause: str | None
    deadline: Duration | Deadline | None
    jitter: Duration | None
    retry: Retry | None
    max_attempts: int | None
    retry_delay: Duration | None
    cancel_grace: Duration | None
    mode: str | None
    expect_success_every: Duration | None
    window: str | Window | None
    window_policy: str | None
    lateness_class: str | None
    job_type: str | None
    payload_ref: str | None
    ping_url: str | None


def declared(options: Mapping[str, Any]) -> dict[str, Any]:
    """Every keyword of ``Declared`` with what the call gave (None, ``objective`` "", when it
    gave nothing); an unknown keyword is refused with the closest known one."""
    known = Declared.__annotations__
    for name in options:
        if name not in known:
            close = get_close_matches(name, known, n=1)
            hint = f"; did you mean {close[0]}=?" if close else ""
            raise ScheduleValidationError(
                name,
                f"@scheduled has no option {name!r}{hint} (docs/decorator.md lists them)",
                code="unknown_option",
            )
    return {**dict.fromkeys(known), "objective": "", **options}


MAX_KEY_LENGTH = 150  # the column holds 200: room for the suffix a replaced retired key gets
MAX_OBJECTIVE_LENGTH = 100
MAX_PAYLOAD_REF_LENGTH = 500
ROUTING_OPTIONS = {"queue": str, "routing_key": str, "exchange": str, "priority": int}
"""The per-schedule Celery routing options (``Schedule.options``) and their types."""
# Only to validate an RRULE or interval without an anchor at import time; the stored anchor of
# such a schedule is the instant it is first synced (see docs/decorator.md).
_PLACEHOLDER_ANCHOR = datetime(2000, 1, 3, tzinfo=UTC)


@dataclass(frozen=True, kw_only=True)
class ScheduleOptions:
    """One ``@scheduled(...)`` call, validated and in canonical form (the stored form).

    ``None`` means "the store's default" (see ``services.DEFAULTS``), so the default can
    change without every declaration changing with it.
    """

    kind: str
    rule: str
    """Cron or RRULE text, interval seconds, or the one-time instant in ISO 8601 (UTC)."""
    anchor: datetime | None = None
    timezone: str = "UTC"
    objective: str = ""
    kwargs_json: str = "{}"
    """The payload as canonical JSON (sorted keys), so equal payloads compare equal."""
    dst_nonexistent: str | None = None
    dst_ambiguous: str | None = None
    starts_at: datetime | None = None
    ends_at: datetime | None = None
    max_count: int | None = None
    misfire_policy: str | None = None
    max_lateness: int | None = None
    catch_up_window: int | None = None
    catch_up_limit: int | None = None
    overlap_policy: str | None = None
    on_pause: str | None = None
    interval_mode: str | None = None
    max_attempts: int | None = None
    retry_delay: int | None = None
    cancel_grace: int | None = None
    deadline: int | None = None
    jitter: int | None = None
    mode: str | None = None
    expected_every: int | None = None
    active_window: str | None = None
    window_policy: str | None = None
    lateness_class: str | None = None
    job_type: str | None = None
    payload_ref: str | None = None
    exclude_holidays: str | None = None
    args_json: str = "[]"
    """The positional arguments as canonical JSON."""
    ping_url: str | None = None
    endpoint: str | None = None
    """An event declaration's endpoint (``declare_event``), stored as ``options.endpoint``."""

    def schedule_fields(self) -> dict[str, Any]:
        """The schedule fields this declaration sets (model names), defaults left out."""
        values: dict[str, Any] = {
            name: getattr(self, name) for name in _OPTION_FIELDS if getattr(self, name) is not None
        }
        values["kwargs"] = json.loads(self.kwargs_json)
        values["args"] = json.loads(self.args_json)
        if self.endpoint is not None:
            values["options"] = {"endpoint": self.endpoint}
        return values


_OPTION_FIELDS = tuple(
    name
    for name in ScheduleOptions.__dataclass_fields__
    if name not in ("kwargs_json", "args_json", "endpoint")
)


# -- option checks (each raises ScheduleValidationError naming the parameter) -----------------


def rule(
    *,
    cron: str | None,
    rrule: str | None,
    every: Duration | None,
    at: datetime | None,
    anchor: datetime | None,
    solar: str | None = None,
) -> dict[str, Any]:
    """The timing fields (``kind``, ``rule``, ``anchor``) of the one rule parameter given."""
    rules = (("cron", cron), ("rrule", rrule), ("every", every), ("at", at), ("solar", solar))
    given = {name: value for name, value in rules if value is not None}
    if len(given) != 1:
        problem = "no rule" if not given else f"{len(given)} rules ({', '.join(given)})"
        raise ScheduleValidationError(
            "rule",
            f"@scheduled got {problem}; pass exactly one of cron=, rrule=, every=, at=, solar=",
            code="missing_rule" if not given else "several_rules",
        )
    [name] = given
    if anchor is not None and name not in ("rrule", "every"):
        raise ScheduleValidationError(
            "anchor", f"anchor= applies to rrule= and every= only, not to {name}="
        )
    checked_anchor = instant(anchor, "anchor")
    if cron is not None:
        return {"kind": Kind.CRON.value, "rule": text(cron, "cron")}
    if solar is not None:
        return {"kind": Kind.SOLAR.value, "rule": " ".join(text(solar, "solar").lower().split())}
    if rrule is not None:
        return {"kind": Kind.RRULE.value, "rule": text(rrule, "rrule"), "anchor": checked_anchor}
    if every is not None:
        seconds = int(parse_duration(every, "every").total_seconds())
        return {"kind": Kind.INTERVAL.value, "rule": str(seconds), "anchor": checked_anchor}
    return {"kind": Kind.ONCE.value, "rule": _once(at)}


def _once(value: object) -> str:
    if not isinstance(value, datetime):
        raise InvalidRule(
            "at", f"expected a datetime, got {type(value).__name__}; e.g. datetime(2026, 1, 1, 9)"
        )
    # The stored form (services normalize it so): an aware instant in UTC, or a naive local
    # wall time read in the schedule's zone.
    return (value.astimezone(UTC) if value.tzinfo else value).isoformat()


def text(value: object, name: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str) or not value.strip():
        raise ScheduleValidationError(name, f"expected a non-empty string, got {value!r}")
    return value.strip()


def objective(value: object) -> str:
    if not isinstance(value, str):
        raise ScheduleValidationError("objective", f"expected a string, got {value!r}")
    check_length(value, "objective", MAX_OBJECTIVE_LENGTH)
    return value.strip()


def payload(kwargs: object) -> str:
    if kwargs is None:
        return "{}"
    if not isinstance(kwargs, dict) or not all(isinstance(k, str) for k in kwargs):
        raise ScheduleValidationError(
            "kwargs", "the payload must be a dict of keyword arguments with string keys"
        )
    try:
        return json.dumps(kwargs, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ScheduleValidationError(
            "kwargs", f"the payload is not JSON-serializable ({exc}); pass plain JSON values"
        ) from None


def positional(args: object) -> str:
    if args is None:
        return "[]"
    if not isinstance(args, list | tuple):
        raise ScheduleValidationError("args", 'args= must be a list, e.g. args=[1, "eu"]')
    try:
        return json.dumps(list(args), separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ScheduleValidationError(
            "args", f"args= is not JSON-serializable ({exc}); pass plain JSON values"
        ) from None


def choice(value: str | None, name: str, choices: Any) -> str | None:
    if value is None:
        return None
    allowed = [str(member.value) for member in choices]
    text = value.strip().lower() if isinstance(value, str) else value
    if text not in allowed:
        raise ScheduleValidationError(
            name,
            f"unknown value {value!r}; use one of: {', '.join(allowed)}",
            code="invalid_choice",
        )
    return str(text)


def instant(value: object, name: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise ScheduleValidationError(
            name, f"expected an aware datetime, got {type(value).__name__}"
        )
    return ensure_aware(value, name).replace(microsecond=0)


def count(value: object, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ScheduleValidationError(name, f"must be a whole number >= 1, got {value!r}")
    return value


def seconds(value: Duration | None, name: str, *, positive: bool = False) -> int | None:
    """A duration in whole seconds; ``0`` is allowed unless ``positive``."""
    if value is None:
        return None
    if not positive and not isinstance(value, bool) and value in (0, "0", timedelta(0)):
        return 0
    return int(parse_duration(value, name).total_seconds())


def interval_mode(value: str | None, every: object) -> str | None:
    mode = choice(value, "interval_mode", IntervalMode)
    if mode is not None and every is None:
        raise ScheduleValidationError(
            "interval_mode", "interval_mode= applies to every= schedules only"
        )
    return mode


def check_timing(options: ScheduleOptions) -> None:
    """Parse the rule with its zone, DST choices and bounds as the engine will."""
    rule: str | timedelta | datetime = options.rule
    if options.kind == Kind.INTERVAL:
        rule = timedelta(seconds=int(options.rule))
    elif options.kind == Kind.ONCE:
        rule = datetime.fromisoformat(options.rule)
    anchor = options.anchor
    if anchor is None and options.kind in (Kind.RRULE, Kind.INTERVAL):
        anchor = _PLACEHOLDER_ANCHOR
    build_timing(
        kind=options.kind,
        rule=rule,
        timezone=options.timezone,
        anchor=anchor,
        nonexistent=options.dst_nonexistent,
        ambiguous=options.dst_ambiguous,
        starts_at=options.starts_at,
        ends_at=options.ends_at,
        max_count=options.max_count,
        window=options.active_window,
        window_policy=options.window_policy or "defer",
        exclude_holidays=options.exclude_holidays,
    )


def check_key(key: object) -> None:
    if not isinstance(key, str) or not key.strip() or key != key.strip():
        raise ScheduleValidationError(
            "key", f"expected a non-empty string without surrounding spaces, got {key!r}"
        )
    if len(key) > MAX_KEY_LENGTH:
        raise ScheduleValidationError(
            "key", f"{key[:40]!r}... is {len(key)} characters long; at most {MAX_KEY_LENGTH}"
        )


def payload_ref(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.isprintable() or not value.strip():
        raise ScheduleValidationError(
            "payload_ref",
            f"expected a reference such as 'state://sync-source-42', got {value!r}",
        )
    check_length(value, "payload_ref", MAX_PAYLOAD_REF_LENGTH)
    return value


def check_length(value: str, name: str, limit: int) -> None:
    if len(value) > limit:
        raise ScheduleValidationError(name, f"is {len(value)} characters long; at most {limit}")
