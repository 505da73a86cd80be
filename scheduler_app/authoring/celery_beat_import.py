"""Migration from Celery's ``beat_schedule``: each entry read (its name, task, timing, cron
fields, options and routing) into a ``Mapping``.

django-celery-beat's tables are read in ``celery_beat_tables``, what both share is in
``celery_beat_values``, and the mappings are planned and applied in ``celery_beat_migration``.
Whatever an entry holds, it is mapped or refused alone: one bad entry never stops the others.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from collections.abc import Mapping as MappingType
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from celery.schedules import crontab, schedule, solar

from scheduler_app.authoring.celery_beat_values import (
    ROUTING_NOTE,
    Mapping,
    Refused,
    aware,
    beat_args,
    beat_kwargs,
    interval_timing,
    log_refused,
    message,
    one_line,
    plain,
    routing_options,
    shown,
    solar_timing,
    unreadable,
)
from scheduler_app.authoring.importing import Desired
from scheduler_app.authoring.options import ROUTING_OPTIONS
from scheduler_app.errors import ScheduleValidationError
from scheduler_app.policies.limits import NUMBER_LIMITS, TEXT_LENGTHS, check_text

BEAT_PREFIX = "celery-beat:"
KEY_ROOM = TEXT_LENGTHS["key"] - len(BEAT_PREFIX)
"""The longest entry name whose key (``celery-beat:<name>``) fits the key column."""


# -- Celery's beat_schedule --------------------------------------------------------------------


def from_beat_schedule(entries: Any, app_timezone: str) -> list[Mapping]:
    """Map every ``beat_schedule`` entry, in name order; each one is mapped or refused alone."""
    if not isinstance(entries, MappingType):
        raise Refused(
            f"beat_schedule must be a dict of entries by name, got {type(entries).__name__}"
        )
    mappings: list[Mapping] = []
    labels: set[str] = set()
    for name in sorted(entries, key=_name_order):
        label = _unique(BEAT_PREFIX + (name if isinstance(name, str) else shown(name)), labels)
        mappings.append(_guarded_beat_entry(label, name, entries, app_timezone))
    return mappings


def _name_order(name: Any) -> tuple[int, str]:
    """Text names in order, then the others (refused) by their repr: never a TypeError."""
    return (0, name) if isinstance(name, str) else (1, shown(name))


def _unique(label: str, taken: set[str]) -> str:
    """Text names are unique keys; a non-text name may print like one (``1`` and ``"1"``)."""
    candidate, count = label, 1
    while candidate in taken:
        count += 1
        candidate = f"{label} (entry {count})"
    taken.add(candidate)
    return candidate


def _guarded_beat_entry(
    label: str, name: Any, entries: MappingType[Any, Any], app_timezone: str
) -> Mapping:
    entry: Any = None
    try:
        entry = entries[name]
        return _beat_entry(label, name, entry, app_timezone)
    except Refused as exc:
        return Mapping(label, _safe_describe(entry), None, refusal=one_line(str(exc)))
    except Exception as exc:  # the entry's objects are user code: any may raise
        log_refused("beat_schedule entry", label, unreadable(exc))
        return Mapping(label, _safe_describe(entry), None, refusal=unreadable(exc))


def _beat_entry(label: str, name: Any, entry: Any, app_timezone: str) -> Mapping:
    _check_name(name)
    task = _task(entry)
    schedule_value = entry.get("schedule")
    timing = _beat_timing(schedule_value, app_timezone)
    source = f"{_describe_source(schedule_value)} {task}"
    args = beat_args(entry.get("args"))
    kwargs = beat_kwargs(entry.get("kwargs"))
    fields, notes = _options(entry.get("options"))
    fields.update(timing, task=task, args=args, kwargs=kwargs, key=label, name=name)
    return Mapping(label, source, Desired(label=label, fields=fields), notes=tuple(notes))


def _check_name(name: Any) -> None:
    if not isinstance(name, str):
        raise Refused(
            f"entry names must be text, got {type(name).__name__} {shown(name)}; rename the entry"
        )
    if len(name) > KEY_ROOM:
        raise Refused(
            f"the entry's name is {len(name)} characters long; at most {KEY_ROOM} fit in its "
            f"schedule key ({BEAT_PREFIX!r} + name); shorten the name"
        )
    try:
        check_text("name", name)
    except ScheduleValidationError as exc:
        raise Refused(f"the entry's name {exc.message}") from None


def _task(entry: Any) -> str:
    if not isinstance(entry, MappingType) or entry.get("task") in (None, ""):
        raise Refused("an entry needs 'task' and 'schedule'")
    task = entry["task"]
    if not isinstance(task, str):
        raise Refused(f"'task' must be a task name (text), got {type(task).__name__}")
    return task


def _safe_describe(entry: Any) -> str:
    if isinstance(entry, MappingType):
        try:
            return one_line(f"{_describe_source(entry.get('schedule'))} {plain(entry.get('task'))}")
        except Exception:  # a user mapping's .get may raise; the reason says why
            return f"<{type(entry).__name__} entry>"
    return shown(entry)


def _describe_source(value: Any) -> str:
    if isinstance(value, crontab):
        return f"crontab({_cron_rule(value)})"
    if isinstance(value, solar):
        return f"solar({plain(value.event)}, {shown(value.lat)}, {shown(value.lon)})"
    if isinstance(value, schedule):
        return f"schedule(every {shown(_run_every(value))})"
    if isinstance(value, timedelta | int | float):
        return f"every {shown(value)}"
    return shown(value)


def _beat_timing(value: Any, app_timezone: str) -> dict[str, Any]:
    if isinstance(value, crontab):
        return {
            "kind": "cron",
            "rule": _cron_rule(value),
            "timezone": _crontab_zone(value, app_timezone),
        }
    if isinstance(value, solar):
        return solar_timing(value.event, value.lat, value.lon, app_timezone)
    if isinstance(value, schedule):
        return interval_timing(_run_every(value))
    if isinstance(value, timedelta | int | float) and not isinstance(value, bool):
        return interval_timing(value)
    raise Refused(
        f"unsupported schedule type {type(value).__name__}; use a crontab, a timedelta or a "
        "number of seconds"
    )


def _run_every(value: Any) -> Any:
    """``value.run_every``, which Celery's type stubs leave out."""
    return value.run_every


def _cron_rule(value: Any) -> str:
    """The five fields as given to ``crontab()`` (``Any``: the stubs omit ``_orig_*``)."""
    parts = (
        value._orig_minute,
        value._orig_hour,
        value._orig_day_of_month,
        value._orig_month_of_year,
        value._orig_day_of_week,
    )
    return " ".join(_cron_field(part) for part in parts)


def _cron_field(part: Any) -> str:
    if isinstance(part, str):
        return part.replace(" ", "")
    if isinstance(part, Iterable):
        return ",".join(str(v) for v in sorted(part))
    return str(part)


def _crontab_zone(value: Any, app_timezone: str) -> str:
    """The zone the crontab is read in: its ``nowfun``'s zone if it has one, else the app's."""
    if value.nowfun is None:
        return app_timezone
    try:
        now = value.nowfun()
    except Exception as exc:  # nowfun is the user's function
        raise Refused(
            f"the crontab's nowfun raised {type(exc).__name__}: {shown(message(exc))}; "
            "give it a function that returns an aware datetime"
        ) from None
    if not isinstance(now, datetime):
        raise Refused(f"the crontab's nowfun returned {shown(now)}, not a datetime")
    return _zone_name(now.tzinfo, "the crontab's nowfun")


def _zone_name(tz: Any, what: str) -> str:
    if tz is UTC:
        return "UTC"
    if isinstance(tz, ZoneInfo):
        return tz.key
    raise Refused(f"{what} returns datetimes in {shown(tz)}, not an IANA zone; use a ZoneInfo")


def app_timezone_name(app: Any) -> str:
    """The Celery app's zone (``timezone`` setting; UTC when unset)."""
    return _zone_name(app.timezone, "the Celery app's timezone") if app.conf.timezone else "UTC"


def _options(options: Any) -> tuple[dict[str, Any], list[str]]:
    if options is None:
        return {}, []
    if not isinstance(options, MappingType):
        raise Refused(
            f"options must be a dict of apply_async options, got {type(options).__name__}"
        )
    options = dict(options)
    fields: dict[str, Any] = {}
    notes: list[str] = []
    _expires(options.pop("expires", None), fields, notes)
    routing = routing_options(options, notes)
    if routing:
        fields["options"] = routing
    for name in sorted(options, key=_name_order):
        if name not in ROUTING_OPTIONS:
            notes.append(
                one_line(ROUTING_NOTE.format(name=plain(name), value=shown(options[name])))
            )
    return fields, notes


def _expires(expires: Any, fields: dict[str, Any], notes: list[str]) -> None:
    """Celery's ``expires`` (seconds or an instant) becomes the deadline or the end."""
    if isinstance(expires, int | float) and not isinstance(expires, bool):
        if isinstance(expires, float) and not math.isfinite(expires):
            raise Refused(f"expires={shown(expires)} is not a number of seconds")
        longest = NUMBER_LIMITS["deadline"][1]
        if expires > longest:
            raise Refused(
                f"expires={shown(expires)} s is longer than the longest deadline ({longest} s)"
            )
        fields["deadline"] = max(1, int(expires))
    elif isinstance(expires, datetime):
        fields["ends_at"] = aware(expires)
    elif expires is not None:
        notes.append(f"not carried over: expires={shown(expires)}")
