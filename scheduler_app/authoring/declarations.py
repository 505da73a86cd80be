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

This module holds the decorator, ``Declaration`` and the registry of one process; the options
and the check of each one live in ``scheduler_app.authoring.options``.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field, replace
from datetime import UTC
from pathlib import Path
from typing import Any, Never, TypeVar, Unpack, overload

from scheduler_app.authoring import options as option
from scheduler_app.authoring.declared_tasks import (
    check_job_type_name,
    mark_schedulable,
    task_name_of,
)
from scheduler_app.authoring.options import Declared, ScheduleOptions, declared
from scheduler_app.definition.policies import flat_policies
from scheduler_app.definition.text import declared_text
from scheduler_app.errors import ScheduleValidationError
from scheduler_app.handoff.allowlist import EVENT_PREFIX, check_event_type
from scheduler_app.models import MisfirePolicy, OverlapPolicy, PauseBehaviour, ScheduleMode
from scheduler_app.observability.urls import check_ping_url
from scheduler_app.policies.lateness import check_class
from scheduler_app.timing import Ambiguous, Nonexistent
from scheduler_app.timing.content_lines import dtstart_zone

TaskT = TypeVar("TaskT")


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
def scheduled(**options: Unpack[Declared]) -> Callable[[TaskT], TaskT]: ...


def scheduled(task: object = None, /, **options: Unpack[Declared]) -> Any:
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
    checked = checked_options(options)
    key = options.get("key")
    source, location = _caller()

    def register(target: TaskT) -> TaskT:
        _register(task_name_of(target), key, checked, source, location)
        mark_schedulable(target)
        return target

    return register


def declare_event(
    event_type: str, /, *, endpoint: str | None = None, **options: Unpack[Declared]
) -> Declaration:
    """Declare a schedule that emits the event ``event_type`` (e.g. "contract.deadline_reached")
    to ``endpoint``, a name in ``SCHEDULER_EVENT_ENDPOINTS`` (docs/events.md); no task runs it.

    Call it at module level in a module the beat imports (an installed app's ``tasks.py``).
    The options are ``@scheduled``'s, checked here in the same way; ``kwargs`` is the event's
    ``data.payload``. Returns the declaration (its ``key`` defaults to
    ``"event:<type>:<objective or 'default'>"``); the endpoint is checked against the schedule's
    tenant and type when it is synced.
    """
    if not isinstance(event_type, str):
        raise ScheduleValidationError(
            "event_type", "must be a string such as 'contract.deadline_reached'"
        )
    name = event_type if event_type.startswith(EVENT_PREFIX) else EVENT_PREFIX + event_type
    try:
        check_event_type(name)
    except ScheduleValidationError as exc:
        raise ScheduleValidationError("event_type", exc.message, code=exc.code) from None
    if endpoint is not None and (not isinstance(endpoint, str) or not endpoint):
        raise ScheduleValidationError(
            "endpoint", "must be the name of an entry of SCHEDULER_EVENT_ENDPOINTS"
        )
    checked = replace(checked_options(options), endpoint=endpoint)
    source, location = _caller()
    return _register(name, options.get("key"), checked, source, location)


def checked_options(options: Declared) -> ScheduleOptions:
    """Every option of one declaration checked and in stored form (``ScheduleValidationError``
    naming the parameter otherwise: ``misfire.window`` for ``misfire=CatchUp(window=...)``).
    Policy values (``definition.policies``) are turned into their flat keywords first, so
    each value is checked once, by the flat keyword's check."""
    flattened = flat_policies(options)
    try:
        return _checked(declared(flattened.options))
    except ScheduleValidationError as error:
        raise flattened.renamed(error) from None


def _checked(given: dict[str, Any]) -> ScheduleOptions:
    timezone, window, window_policy = given["timezone"], given["window"], given["window_policy"]
    rule = {name: given[name] for name in ("cron", "rrule", "every", "at", "solar", "anchor")}
    if given["text"] is not None:  # English text: the structured rule it means replaces it here
        parsed = declared_text(given["text"], {**rule, "window": window}, timezone, window_policy)
        timing_fields: dict[str, Any] = {"kind": parsed.kind, "rule": parsed.rule}
        if parsed.anchor is not None:
            timing_fields["anchor"] = parsed.anchor.astimezone(UTC)
        timezone, window = parsed.timezone, parsed.active_window or None
        window_policy = parsed.window_policy or window_policy
    else:
        timing_fields = option.rule(**rule)
    checked = ScheduleOptions(
        **timing_fields,
        timezone=option.text(timezone, "timezone") or dtstart_zone(rule["rrule"] or "") or "UTC",
        objective=option.objective(given["objective"]),
        kwargs_json=option.payload(given["kwargs"]),
        args_json=option.positional(given["args"]),
        exclude_holidays=option.text(given["exclude_holidays"], "exclude_holidays").upper() or None,
        dst_nonexistent=option.choice(given["nonexistent"], "nonexistent", Nonexistent),
        dst_ambiguous=option.choice(given["ambiguous"], "ambiguous", Ambiguous),
        starts_at=option.instant(given["starts_at"], "starts_at"),
        ends_at=option.instant(given["ends_at"], "ends_at"),
        max_count=option.count(given["max_count"], "max_count"),
        misfire_policy=option.choice(given["misfire"], "misfire", MisfirePolicy),
        max_lateness=option.seconds(given["max_lateness"], "max_lateness"),
        catch_up_window=option.seconds(given["catch_up_window"], "catch_up_window"),
        catch_up_limit=option.count(given["catch_up_limit"], "catch_up_limit"),
        overlap_policy=option.choice(given["overlap"], "overlap", OverlapPolicy),
        on_pause=option.choice(given["on_pause"], "on_pause", PauseBehaviour),
        interval_mode=option.interval_mode(given["interval_mode"], rule["every"]),
        max_attempts=option.count(given["max_attempts"], "max_attempts"),
        retry_delay=option.seconds(given["retry_delay"], "retry_delay"),
        cancel_grace=option.seconds(given["cancel_grace"], "cancel_grace"),
        deadline=option.seconds(given["deadline"], "deadline", positive=True),
        jitter=option.seconds(given["jitter"], "jitter"),
        mode=option.choice(given["mode"], "mode", ScheduleMode),
        expected_every=option.seconds(
            given["expect_success_every"], "expect_success_every", positive=True
        ),
        active_window=option.text(window, "window") or None,
        window_policy=option.text(window_policy, "window_policy") or None,
        lateness_class=check_class(given["lateness_class"]) or None,
        job_type=check_job_type_name(given["job_type"]) if given["job_type"] is not None else None,
        payload_ref=option.payload_ref(given["payload_ref"]),
        # Credentials are checked against SCHEDULER_PING_ALLOW_CREDENTIALS when it is synced.
        ping_url=check_ping_url(given["ping_url"], allow_credentials=True) or None,
    )
    option.check_timing(checked)
    if given["key"] is not None:
        option.check_key(given["key"])
    return checked


def _register(
    task: str, key: str | None, checked: ScheduleOptions, source: str, location: str
) -> Declaration:
    declaration = Declaration(
        key=key if key is not None else f"{task}:{checked.objective or 'default'}",
        task=task,
        options=checked,
        source=source,
        location=location,
    )
    option.check_key(declaration.key)
    registry().add(declaration)
    return declaration


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
