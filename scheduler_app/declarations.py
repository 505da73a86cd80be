"""``@scheduled``: schedules declared in code next to the Celery task they run.

Every option is checked when the decorator runs, i.e. when the task module is imported: a bad
rule, zone, policy name or duration, or a key declared twice, raises ``ScheduleValidationError``
there, with the offending parameter as ``field``. What needs the database or the Celery app's
registry (the task name, the payload size limit, the minimum interval) is checked by
``sync_schedules``, which writes the declarations to the database (see docs/decorator.md).

    @scheduled(cron="0 8 * * MON-FRI", timezone="Europe/Paris", objective="daily")
    @scheduled(cron="0 9 * * MON", timezone="Europe/Paris", objective="weekly")
    @shared_task(name="reports.briefing")
    def briefing() -> None: ...

``@scheduled`` goes *above* ``@app.task`` / ``@shared_task``: it needs the task (for its name)
and returns it unchanged, so any number of them can be stacked.
"""

from __future__ import annotations

import inspect
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Never, TypeVar, overload

from scheduler_app.authoring import declared_text
from scheduler_app.declared_tasks import check_job_type_name, mark_schedulable, task_name_of
from scheduler_app.errors import InvalidRule, ScheduleValidationError
from scheduler_app.lateness import check_class
from scheduler_app.models import (
    IntervalMode,
    MisfirePolicy,
    OverlapPolicy,
    PauseBehaviour,
    ScheduleMode,
)
from scheduler_app.observability.urls import check_ping_url
from scheduler_app.timing import Ambiguous, Kind, Nonexistent, build_timing, ensure_aware
from scheduler_app.timing.content_lines import dtstart_zone
from scheduler_app.timing.durations import parse_duration

TaskT = TypeVar("TaskT")
Duration = timedelta | int | str
"""A ``timedelta``, a whole number of seconds or a text such as ``"15m"``, ``"1h30m"``."""

MAX_KEY_LENGTH = 150  # the column holds 200: room for the suffix a replaced retired key gets
MAX_OBJECTIVE_LENGTH = 100
MAX_PAYLOAD_REF_LENGTH = 500
RULE_PARAMETERS = ("cron", "rrule", "every", "at", "solar")
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

    @property
    def kwargs(self) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads(self.kwargs_json)
        return loaded

    @property
    def args(self) -> list[Any]:
        loaded: list[Any] = json.loads(self.args_json)
        return loaded

    def schedule_fields(self) -> dict[str, Any]:
        """The schedule fields this declaration sets (model names), defaults left out."""
        values: dict[str, Any] = {
            name: getattr(self, name) for name in _OPTION_FIELDS if getattr(self, name) is not None
        }
        values["kwargs"] = self.kwargs
        values["args"] = self.args
        return values


_OPTION_FIELDS = tuple(
    name
    for name in ScheduleOptions.__dataclass_fields__
    if name not in ("kwargs_json", "args_json")
)


@dataclass(frozen=True, kw_only=True)
class Declaration:
    """A schedule declared in code: which task, under which stable key, with which options."""

    key: str
    task: str
    options: ScheduleOptions
    source: str = field(default="", compare=False)
    """Where the decorator was written (``module:line``), for error messages."""
    location: str = field(default="", compare=False)
    """Where the decorator was written (``path/to/file.py:line``), stored as the schedule's
    ``code_location`` so operators can find the declaration."""

    def schedule_fields(self) -> dict[str, Any]:
        return {"task": self.task, "key": self.key, **self.options.schedule_fields()}


class ScheduleRegistry:
    """The declarations of one process, by key. Thread-safe; iteration is sorted by key."""

    def __init__(self) -> None:
        self._by_key: dict[str, Declaration] = {}
        self._lock = threading.Lock()

    def add(self, declaration: Declaration) -> None:
        """Register; the same declaration twice (a module imported twice) is a no-op."""
        with self._lock:
            known = self._by_key.get(declaration.key)
            if known is not None and known != declaration:
                raise ScheduleValidationError(
                    "key",
                    f"schedule key {declaration.key!r} is declared twice: for task {known.task!r} "
                    f"at {known.source or '?'} and for task {declaration.task!r} at "
                    f"{declaration.source or '?'}; give each @scheduled a distinct objective= "
                    "or key=",
                    code="duplicate_key",
                )
            self._by_key.setdefault(declaration.key, declaration)

    def declarations(self) -> tuple[Declaration, ...]:
        with self._lock:
            return tuple(self._by_key[key] for key in sorted(self._by_key))

    def for_task(self, task: str) -> tuple[Declaration, ...]:
        return tuple(d for d in self.declarations() if d.task == task)

    def get(self, key: str) -> Declaration | None:
        with self._lock:
            return self._by_key.get(key)

    def __len__(self) -> int:
        with self._lock:
            return len(self._by_key)

    def __iter__(self) -> Iterator[Declaration]:
        return iter(self.declarations())


_default_registry = ScheduleRegistry()
_active_registry = _default_registry


def registry() -> ScheduleRegistry:
    """The registry ``@scheduled`` writes to and ``sync_schedules`` reads by default."""
    return _active_registry


@contextmanager
def isolated_registry() -> Iterator[ScheduleRegistry]:
    """Use a fresh, empty registry inside the block (tests): nothing leaks in or out.

    Modules imported for the first time inside the block register into it, and are not
    imported again afterwards: import task modules before entering.
    """
    global _active_registry
    previous, fresh = _active_registry, ScheduleRegistry()
    _active_registry = fresh
    try:
        yield fresh
    finally:
        _active_registry = previous


# -- the decorator ---------------------------------------------------------------------------


@overload
def scheduled(task: TaskT, /) -> Never: ...


@overload
def scheduled(
    *,
    cron: str | None = None,
    rrule: str | None = None,
    every: Duration | None = None,
    at: datetime | None = None,
    text: str | None = None,
    solar: str | None = None,
    anchor: datetime | None = None,
    interval_mode: str | None = None,
    timezone: str | None = None,
    objective: str = "",
    key: str | None = None,
    kwargs: dict[str, Any] | None = None,
    args: list[Any] | None = None,
    exclude_holidays: str | None = None,
    nonexistent: str | None = None,
    ambiguous: str | None = None,
    starts_at: datetime | None = None,
    ends_at: datetime | None = None,
    max_count: int | None = None,
    misfire: str | None = None,
    max_lateness: Duration | None = None,
    catch_up_window: Duration | None = None,
    catch_up_limit: int | None = None,
    overlap: str | None = None,
    on_pause: str | None = None,
    deadline: Duration | None = None,
    jitter: Duration | None = None,
    max_attempts: int | None = None,
    retry_delay: Duration | None = None,
    cancel_grace: Duration | None = None,
    mode: str | None = None,
    expect_success_every: Duration | None = None,
    window: str | None = None,
    window_policy: str | None = None,
    lateness_class: str | None = None,
    job_type: str | None = None,
    payload_ref: str | None = None,
    ping_url: str | None = None,
) -> Callable[[TaskT], TaskT]: ...


def scheduled(
    task: object = None,
    /,
    *,
    cron: str | None = None,
    rrule: str | None = None,
    every: Duration | None = None,
    at: datetime | None = None,
    text: str | None = None,
    solar: str | None = None,
    anchor: datetime | None = None,
    interval_mode: str | None = None,
    timezone: str | None = None,
    objective: str = "",
    key: str | None = None,
    kwargs: dict[str, Any] | None = None,
    args: list[Any] | None = None,
    exclude_holidays: str | None = None,
    nonexistent: str | None = None,
    ambiguous: str | None = None,
    starts_at: datetime | None = None,
    ends_at: datetime | None = None,
    max_count: int | None = None,
    misfire: str | None = None,
    max_lateness: Duration | None = None,
    catch_up_window: Duration | None = None,
    catch_up_limit: int | None = None,
    overlap: str | None = None,
    on_pause: str | None = None,
    deadline: Duration | None = None,
    jitter: Duration | None = None,
    max_attempts: int | None = None,
    retry_delay: Duration | None = None,
    cancel_grace: Duration | None = None,
    mode: str | None = None,
    expect_success_every: Duration | None = None,
    window: str | None = None,
    window_policy: str | None = None,
    lateness_class: str | None = None,
    job_type: str | None = None,
    payload_ref: str | None = None,
    ping_url: str | None = None,
) -> Any:
    """Declare a schedule for the Celery task below; stack several for several schedules.

    Exactly one rule: ``cron=``, ``rrule=`` (with ``anchor=``), ``every=`` (with ``anchor=``,
    ``interval_mode=``), ``at=``, ``solar=`` ("sunrise 56.9496 24.1052") or ``text=``
    (English, e.g. "every weekday at 9:00": read here, at decoration time, into the structured
    rule). ``args=`` are positional arguments, ``exclude_holidays=`` a country code ("LV",
    "US-NY"). Schedules of one task are told apart by ``objective``
    (the task reads it from ``current_occurrence().objective``); ``key`` defaults to
    ``"<task name>:<objective or 'default'>"``. ``job_type`` declares that this task serves
    that job type (schedule.v1 JOB targets); ``lateness_class`` sets lateness defaults;
    ``payload_ref`` is a reference the task resolves (``current_occurrence().payload_ref``).
    ``ping_url`` is pinged when a run starts, succeeds and fails (Healthchecks.io conventions).
    The task is marked schedulable (the allowlist accepts it). Every parameter is described in
    docs/decorator.md. Raises ``ScheduleValidationError`` at once when an option is wrong.
    """
    if task is not None:
        _refuse_positional(task)
    if text is not None:  # English text: the structured rule it means replaces it here
        given = {"cron": cron, "rrule": rrule, "every": every, "at": at, "solar": solar}
        given["anchor"] = anchor
        parsed = declared_text(text, {**given, "window": window}, timezone, window_policy)
        timing_fields: dict[str, Any] = {"kind": parsed.kind, "rule": parsed.rule}
        if parsed.anchor is not None:
            timing_fields["anchor"] = parsed.anchor.astimezone(UTC)
        timezone, window = parsed.timezone, parsed.active_window or None
        window_policy = parsed.window_policy or window_policy
    else:
        timing_fields = _rule(
            cron=cron, rrule=rrule, every=every, at=at, solar=solar, anchor=anchor
        )
    options = ScheduleOptions(
        **timing_fields,
        timezone=_text(timezone, "timezone") or dtstart_zone(rrule or "") or "UTC",
        objective=_objective(objective),
        kwargs_json=_payload(kwargs),
        args_json=_positional(args),
        exclude_holidays=_text(exclude_holidays, "exclude_holidays").upper() or None,
        dst_nonexistent=_choice(nonexistent, "nonexistent", Nonexistent),
        dst_ambiguous=_choice(ambiguous, "ambiguous", Ambiguous),
        starts_at=_instant(starts_at, "starts_at"),
        ends_at=_instant(ends_at, "ends_at"),
        max_count=_count(max_count, "max_count"),
        misfire_policy=_choice(misfire, "misfire", MisfirePolicy),
        max_lateness=_seconds(max_lateness, "max_lateness"),
        catch_up_window=_seconds(catch_up_window, "catch_up_window"),
        catch_up_limit=_count(catch_up_limit, "catch_up_limit"),
        overlap_policy=_choice(overlap, "overlap", OverlapPolicy),
        on_pause=_choice(on_pause, "on_pause", PauseBehaviour),
        interval_mode=_interval_mode(interval_mode, every),
        max_attempts=_count(max_attempts, "max_attempts"),
        retry_delay=_seconds(retry_delay, "retry_delay"),
        cancel_grace=_seconds(cancel_grace, "cancel_grace"),
        deadline=_seconds(deadline, "deadline", positive=True),
        jitter=_seconds(jitter, "jitter"),
        mode=_choice(mode, "mode", ScheduleMode),
        expected_every=_seconds(expect_success_every, "expect_success_every", positive=True),
        active_window=_text(window, "window") or None,
        window_policy=_text(window_policy, "window_policy") or None,
        lateness_class=check_class(lateness_class) or None,
        job_type=check_job_type_name(job_type) if job_type is not None else None,
        payload_ref=_payload_ref(payload_ref),
        # Credentials are checked against SCHEDULER_PING_ALLOW_CREDENTIALS when it is synced.
        ping_url=check_ping_url(ping_url, allow_credentials=True) or None,
    )
    _check_timing(options)
    if key is not None:
        _check_key(key)
    source, location = _caller()

    def register(target: TaskT) -> TaskT:
        name = task_name_of(target)
        declaration = Declaration(
            key=key if key is not None else f"{name}:{options.objective or 'default'}",
            task=name,
            options=options,
            source=source,
            location=location,
        )
        _check_key(declaration.key)
        registry().add(declaration)
        mark_schedulable(target)
        return target

    return register


def _refuse_positional(task: object) -> Never:
    if isinstance(task, str):
        raise ScheduleValidationError(
            "rule",
            f"@scheduled({task!r}): pass the rule by keyword, e.g. @scheduled(cron={task!r})",
            code="positional_rule",
        )
    raise ScheduleValidationError(
        "rule",
        "@scheduled needs a rule: write @scheduled(cron=...), @scheduled(rrule=..., anchor=...), "
        "@scheduled(every=...) or @scheduled(at=...) above the task",
        code="missing_rule",
    )


# -- option checks (each raises ScheduleValidationError naming the parameter) -----------------


def _rule(
    *,
    cron: str | None,
    rrule: str | None,
    every: Duration | None,
    at: datetime | None,
    anchor: datetime | None,
    solar: str | None = None,
) -> dict[str, Any]:
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
    checked_anchor = _instant(anchor, "anchor")
    if cron is not None:
        return {"kind": Kind.CRON.value, "rule": _text(cron, "cron")}
    if solar is not None:
        return {"kind": Kind.SOLAR.value, "rule": " ".join(_text(solar, "solar").lower().split())}
    if rrule is not None:
        return {"kind": Kind.RRULE.value, "rule": _text(rrule, "rrule"), "anchor": checked_anchor}
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


def _text(value: object, name: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str) or not value.strip():
        raise ScheduleValidationError(name, f"expected a non-empty string, got {value!r}")
    return value.strip()


def _objective(value: object) -> str:
    if not isinstance(value, str):
        raise ScheduleValidationError("objective", f"expected a string, got {value!r}")
    if len(value) > MAX_OBJECTIVE_LENGTH:
        raise ScheduleValidationError(
            "objective", f"is {len(value)} characters long; at most {MAX_OBJECTIVE_LENGTH}"
        )
    return value.strip()


def _payload(kwargs: object) -> str:
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


def _positional(args: object) -> str:
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


def _choice(value: str | None, name: str, choices: Any) -> str | None:
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


def _instant(value: object, name: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise ScheduleValidationError(
            name, f"expected an aware datetime, got {type(value).__name__}"
        )
    return ensure_aware(value, name).replace(microsecond=0)


def _count(value: object, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ScheduleValidationError(name, f"must be a whole number >= 1, got {value!r}")
    return value


def _seconds(value: Duration | None, name: str, *, positive: bool = False) -> int | None:
    """A duration in whole seconds; ``0`` is allowed unless ``positive``."""
    if value is None:
        return None
    if not positive and not isinstance(value, bool) and value in (0, "0", timedelta(0)):
        return 0
    return int(parse_duration(value, name).total_seconds())


def _interval_mode(value: str | None, every: object) -> str | None:
    mode = _choice(value, "interval_mode", IntervalMode)
    if mode is not None and every is None:
        raise ScheduleValidationError(
            "interval_mode", "interval_mode= applies to every= schedules only"
        )
    return mode


def _check_timing(options: ScheduleOptions) -> None:
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


def _check_key(key: object) -> None:
    if not isinstance(key, str) or not key.strip() or key != key.strip():
        raise ScheduleValidationError(
            "key", f"expected a non-empty string without surrounding spaces, got {key!r}"
        )
    if len(key) > MAX_KEY_LENGTH:
        raise ScheduleValidationError(
            "key", f"{key[:40]!r}... is {len(key)} characters long; at most {MAX_KEY_LENGTH}"
        )


def _caller() -> tuple[str, str]:
    """``module:line`` and ``file:line`` of the ``@scheduled(...)`` expression (two frames up).

    The file is relative to the working directory when it lies below it (the project root,
    for ``manage.py`` and Celery), else absolute; at most 300 characters (the column's size).
    """
    frame = inspect.currentframe()
    caller = frame.f_back.f_back if frame and frame.f_back else None
    if caller is None:
        return "", ""
    path = Path(caller.f_code.co_filename)
    with suppress(ValueError):
        path = path.relative_to(Path.cwd())
    location = f"{path}:{caller.f_lineno}"
    return f"{caller.f_globals.get('__name__', '?')}:{caller.f_lineno}", location[-300:]


def _payload_ref(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.isprintable() or not value.strip():
        raise ScheduleValidationError(
            "payload_ref",
            f"expected a reference such as 'state://sync-source-42', got {value!r}",
        )
    if len(value) > MAX_PAYLOAD_REF_LENGTH:
        raise ScheduleValidationError(
            "payload_ref", f"is {len(value)} characters long; at most {MAX_PAYLOAD_REF_LENGTH}"
        )
    return value
