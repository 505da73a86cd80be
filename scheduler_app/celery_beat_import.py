"""Migration from the incumbents: Celery's ``beat_schedule`` and django-celery-beat's tables.

Each source entry becomes a ``Mapping``: the schedule it maps to (a ``Desired`` with a stable
key, so a re-run updates or leaves it unchanged, never imports it twice), notes on what was not
carried over, or the reason it was refused. django-celery-beat need not be installed: its
tables are read with plain SQL when the introspection API finds them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from collections.abc import Mapping as MappingType
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from celery.schedules import crontab, schedule, solar
from django.db import connection, transaction
from django.utils.dateparse import parse_datetime

from scheduler_app import importing
from scheduler_app.clock import Clock
from scheduler_app.importing import Change, Desired, Plan

BEAT_PREFIX = "celery-beat:"
DB_PREFIX = "django-celery-beat:"
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
"""Interval grids start here: slots fall on whole multiples of the interval since the Unix
epoch (a 15-minute interval fires at :00, :15, ...), so re-running the import is stable."""
SOLAR_REFUSAL = (
    "solar schedules (sunrise, sunset, dusk ... at a latitude/longitude) move every day and have "
    "no rule kind here; replace the entry with a cron at a fixed local time in the place's zone "
    "(e.g. '30 6 * * *' in Europe/Riga), or create 'once' schedules for computed instants"
)
ARGS_REFUSAL = (
    "positional args {args!r} cannot be carried over: occurrences call the task with keyword "
    "arguments only; give the task keyword parameters and move the values into kwargs"
)
ROUTING = {"queue": str, "routing_key": str, "exchange": str, "priority": int}
"""Per-entry routing options kept in ``Schedule.options`` (the schedule.v1 ``target.options``)."""
ROUTING_NOTE = (
    "not carried over: {name}={value!r} (not a routing option this scheduler keeps; route "
    "the task with CELERY_TASK_ROUTES, which also applies to occurrences)"
)
PERIODS = {"days": 86400, "hours": 3600, "minutes": 60, "seconds": 1, "microseconds": 1e-6}


@dataclass(frozen=True)
class Mapping:
    """One source entry and what it becomes."""

    label: str
    """The stable key of the schedule it maps to: ``celery-beat:<entry name>``."""
    source: str
    """The entry in its own terms, e.g. ``crontab(0 8 * * 1-5) demo.ping``."""
    desired: Desired | None
    refusal: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)


class Refused(Exception):
    """An entry that cannot be mapped; the message says why and what to do."""


# -- Celery's beat_schedule --------------------------------------------------------------------


def from_beat_schedule(entries: MappingType[str, Any], app_timezone: str) -> list[Mapping]:
    """Map every ``beat_schedule`` entry, in name order."""
    return [_beat_entry(name, entries[name], app_timezone) for name in sorted(entries)]


def _beat_entry(name: str, entry: Any, app_timezone: str) -> Mapping:
    label = f"{BEAT_PREFIX}{name}"
    try:
        if not isinstance(entry, MappingType) or not entry.get("task"):
            raise Refused("an entry needs 'task' and 'schedule'")
        timing = _beat_timing(entry.get("schedule"), app_timezone)
        source = f"{_describe_source(entry.get('schedule'))} {entry['task']}"
        args = tuple(entry.get("args") or ())
        if args:
            raise Refused(ARGS_REFUSAL.format(args=args))
        options = dict(entry.get("options") or {})
        fields, notes = _options(options)
    except Refused as exc:
        return Mapping(label, _safe_describe(entry), None, refusal=str(exc))
    fields.update(timing, task=entry["task"], kwargs=dict(entry.get("kwargs") or {}))
    fields.update(key=label, name=name[:200])
    return Mapping(label, source, Desired(label=label, fields=fields), notes=tuple(notes))


def _safe_describe(entry: Any) -> str:
    if isinstance(entry, MappingType):
        return f"{_describe_source(entry.get('schedule'))} {entry.get('task')}"
    return repr(entry)[:80]


def _describe_source(value: Any) -> str:
    if isinstance(value, crontab):
        return f"crontab({_cron_rule(value)})"
    if isinstance(value, solar):
        return f"solar({value.event}, {value.lat}, {value.lon})"
    if isinstance(value, schedule):
        return f"schedule(every {_run_every(value)})"
    return f"every {value}" if isinstance(value, timedelta | int | float) else repr(value)[:60]


def _beat_timing(value: Any, app_timezone: str) -> dict[str, Any]:
    if isinstance(value, crontab):
        return {
            "kind": "cron",
            "rule": _cron_rule(value),
            "timezone": _crontab_zone(value, app_timezone),
        }
    if isinstance(value, solar):
        raise Refused(SOLAR_REFUSAL)
    if isinstance(value, schedule):
        return _interval(_run_every(value))
    if isinstance(value, timedelta | int | float) and not isinstance(value, bool):
        return _interval(value)
    raise Refused(f"unsupported schedule type {type(value).__name__}; rewrite it as a crontab")


def _run_every(value: Any) -> Any:
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
    if value.nowfun is not None:
        return _zone_name(value.nowfun().tzinfo, "the crontab's nowfun")
    return app_timezone


def _zone_name(tz: Any, what: str) -> str:
    if tz is UTC:
        return "UTC"
    if isinstance(tz, ZoneInfo):
        return tz.key
    raise Refused(f"{what} returns datetimes in {tz!r}, not an IANA zone; use a ZoneInfo")


def app_timezone_name(app: Any) -> str:
    """The Celery app's zone (``timezone`` setting; UTC when unset)."""
    return _zone_name(app.timezone, "the Celery app's timezone") if app.conf.timezone else "UTC"


def _interval(every: Any) -> dict[str, Any]:
    seconds = every.total_seconds() if isinstance(every, timedelta) else float(every)
    if seconds < 1 or seconds != int(seconds):
        raise Refused(f"an interval of {seconds}s is not a whole number of seconds >= 1")
    return {"kind": "interval", "rule": str(int(seconds)), "anchor": EPOCH}


def _options(options: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    fields: dict[str, Any] = {}
    notes: list[str] = []
    expires = options.pop("expires", None)
    if isinstance(expires, int | float) and not isinstance(expires, bool):
        fields["deadline"] = max(1, int(expires))
    elif isinstance(expires, datetime):
        fields["ends_at"] = _aware(expires)
    elif expires is not None:
        notes.append(f"not carried over: expires={expires!r}")
    routing = _routing(options, notes)
    if routing:
        fields["options"] = routing
    for name in sorted(options):
        if name not in ROUTING:
            notes.append(ROUTING_NOTE.format(name=name, value=options[name]))
    return fields, notes


def _routing(values: MappingType[str, Any], notes: list[str]) -> dict[str, Any]:
    """The routing options of ``values`` that are set and well-typed; a note for the rest."""
    kept: dict[str, Any] = {}
    for name, expected in ROUTING.items():
        value = values.get(name)
        if value in (None, ""):
            continue
        if isinstance(value, expected) and not isinstance(value, bool):
            if isinstance(value, int) and not 0 <= value <= 255:
                notes.append(f"not carried over: priority={value!r} (must be 0-255)")
                continue
            kept[name] = value
        else:
            notes.append(ROUTING_NOTE.format(name=name, value=value))
    return kept


def _aware(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


# -- django-celery-beat's tables ---------------------------------------------------------------

TASK_TABLE = "django_celery_beat_periodictask"
RULE_TABLES = {
    "crontab_id": "django_celery_beat_crontabschedule",
    "interval_id": "django_celery_beat_intervalschedule",
    "clocked_id": "django_celery_beat_clockedschedule",
    "solar_id": "django_celery_beat_solarschedule",
}


def has_periodic_tasks() -> bool:
    return TASK_TABLE in connection.introspection.table_names()


def from_django_celery_beat(now: datetime) -> list[Mapping]:
    """Map every ``PeriodicTask`` row, in name order; [] when the tables do not exist."""
    if not has_periodic_tasks():
        return []
    rules = {column: _rows_by_id(table) for column, table in RULE_TABLES.items()}
    return [_periodic_task(row, rules, now) for row in _rows(TASK_TABLE, order="name")]


def _rows(table: str, order: str = "id") -> list[dict[str, Any]]:
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {quote(table)} ORDER BY {quote(order)}")
        names = [column[0] for column in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _rows_by_id(table: str) -> dict[Any, dict[str, Any]]:
    if table not in connection.introspection.table_names():
        return {}
    return {row["id"]: row for row in _rows(table)}


def _periodic_task(
    row: dict[str, Any], rules: dict[str, dict[Any, dict[str, Any]]], now: datetime
) -> Mapping:
    label = f"{DB_PREFIX}{row['name']}"
    source = f"PeriodicTask {row['name']!r} ({row['task']})"
    try:
        timing, what = _row_timing(row, rules)
        source = f"PeriodicTask {row['name']!r}: {what} {row['task']}"
        args = _json_value(row.get("args"), "args", [])
        if args:
            raise Refused(ARGS_REFUSAL.format(args=tuple(args)))
        kwargs = _json_value(row.get("kwargs"), "kwargs", {})
        fields, notes, keep = _row_extras(row, timing, now)
    except Refused as exc:
        return Mapping(label, source, None, refusal=str(exc))
    fields.update(timing, task=row["task"], kwargs=kwargs, key=label[:200], name=row["name"][:200])
    status = "active" if row.get("enabled", True) else "paused"
    desired = Desired(label=label, fields=fields, status=status, keep_existing=keep)
    return Mapping(label, source, desired, notes=tuple(notes))


def _row_timing(
    row: dict[str, Any], rules: dict[str, dict[Any, dict[str, Any]]]
) -> tuple[dict[str, Any], str]:
    if row.get("solar_id") is not None:
        raise Refused(SOLAR_REFUSAL)
    if row.get("crontab_id") is not None:
        cron = _linked(rules, "crontab_id", row)
        rule = " ".join(
            str(cron[name]).replace(" ", "")
            for name in ("minute", "hour", "day_of_month", "month_of_year", "day_of_week")
        )
        zone = str(cron.get("timezone") or "UTC")
        return {"kind": "cron", "rule": rule, "timezone": zone}, f"crontab({rule}) {zone}"
    if row.get("interval_id") is not None:
        interval = _linked(rules, "interval_id", row)
        period = str(interval["period"])
        if period not in PERIODS:
            raise Refused(f"unknown interval period {period!r}")
        timing = _interval(int(interval["every"]) * PERIODS[period])
        return timing, f"every {interval['every']} {period}"
    if row.get("clocked_id") is not None:
        clocked = _linked(rules, "clocked_id", row)
        at = _instant(clocked["clocked_time"])
        rule = at.isoformat().replace("+00:00", "Z")
        return {"kind": "once", "rule": rule, "timezone": "UTC"}, f"clocked({rule})"
    raise Refused("the row has no crontab, interval, clocked or solar schedule")


def _linked(
    rules: dict[str, dict[Any, dict[str, Any]]], column: str, row: dict[str, Any]
) -> dict[str, Any]:
    found = rules[column].get(row[column])
    if found is None:
        raise Refused(f"{column}={row[column]} points at no row of {RULE_TABLES[column]}")
    return found


def _row_extras(
    row: dict[str, Any], timing: dict[str, Any], now: datetime
) -> tuple[dict[str, Any], list[str], frozenset[str]]:
    fields: dict[str, Any] = {}
    notes: list[str] = []
    keep: set[str] = set()
    if row.get("start_time") is not None:
        fields["starts_at"] = _instant(row["start_time"])
    if row.get("expires") is not None:
        fields["ends_at"] = _instant(row["expires"])
    if row.get("expire_seconds") is not None:
        fields["deadline"] = max(1, int(row["expire_seconds"]))
    if row.get("one_off") and timing["kind"] != "once":
        # Runs once, then stops: count one slot from starts_at (the first import's "now" if
        # the row has no start_time, kept on later re-runs so they stay unchanged).
        fields["max_count"] = 1
        if "starts_at" not in fields:
            fields["starts_at"] = now.replace(microsecond=0)
            keep.add("starts_at")
    routing = _routing(row, notes)
    if routing:
        fields["options"] = routing
    headers = _json_value(row.get("headers"), "headers", {})
    if headers:
        notes.append(f"not carried over: headers={headers!r}")
    return fields, notes, frozenset(keep)


def _json_value(raw: Any, name: str, empty: Any) -> Any:
    if raw in (None, ""):
        return empty
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        raise Refused(f"{name} is not valid JSON: {raw[:60]!r}") from None


def _instant(value: Any) -> datetime:
    """A datetime from a raw row: aware as is; naive means UTC (Django's storage with USE_TZ)."""
    parsed = parse_datetime(value) if isinstance(value, str) else value
    if not isinstance(parsed, datetime):
        raise Refused(f"{value!r} is not a date-time")
    return _aware(parsed)


# -- planning ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class MigrationPlan:
    """The mappings, the changes they make, and every entry that will not be imported."""

    mappings: tuple[Mapping, ...]
    plan: Plan
    refused: dict[str, str]

    def change_for(self, label: str) -> Change | None:
        return next((c for c in self.plan.changes if c.desired.label == label), None)


def plan_migration(
    mappings: Iterable[Mapping], now: datetime, *, mode: str | None = None
) -> MigrationPlan:
    """Compare the mapped schedules with the database (no writes).

    ``mode`` (live/shadow) is applied when given; otherwise new schedules are live and existing
    ones keep the mode they have (so a re-run does not flip shadow schedules live).
    """
    items = tuple(mappings)
    desired = [_with_mode(m.desired, mode) for m in items if m.desired is not None]
    planned = importing.plan(desired, now)
    refused = {m.label: m.refusal for m in items if m.desired is None}
    for problem in planned.problems:
        refused[problem.label] = f"{problem.path}: {problem.message}"
    return MigrationPlan(items, planned, refused)


def _with_mode(desired: Desired, mode: str | None) -> Desired:
    if mode is not None:
        return replace(desired, fields={**desired.fields, "mode": mode})
    return replace(desired, keep_existing=desired.keep_existing | {"mode"})


def apply_migration(
    migration: MigrationPlan,
    *,
    clock: Clock | None = None,
    progress: importing.Progress | None = None,
) -> None:
    """Create or update every mapped schedule in one transaction; refused ones are left out.
    ``progress(n)`` is called as entries are done."""
    with transaction.atomic():
        importing.apply(migration.plan.changes, clock=clock, progress=progress)
