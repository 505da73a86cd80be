"""Migration from django-celery-beat's tables: each ``PeriodicTask`` row becomes a ``Mapping``.

django-celery-beat need not be installed: its tables are read with plain SQL when the
introspection API finds them. A row is mapped or refused alone, whatever its columns hold
(text that is not JSON, JSON nested past the parser's limit, numbers that do not convert).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django.db import connection
from django.utils.dateparse import parse_datetime

from scheduler_app.authoring.celery_beat_values import (
    CONTENT_ERRORS,
    Mapping,
    Refused,
    aware,
    beat_args,
    beat_kwargs,
    interval_timing,
    one_line,
    routing_options,
    shown,
    solar_timing,
    unreadable,
)
from scheduler_app.authoring.importing import Desired
from scheduler_app.policies.limits import TEXT_LENGTHS

DB_PREFIX = "django-celery-beat:"
TASK_TABLE = "django_celery_beat_periodictask"
RULE_TABLES = {
    "crontab_id": "django_celery_beat_crontabschedule",
    "interval_id": "django_celery_beat_intervalschedule",
    "clocked_id": "django_celery_beat_clockedschedule",
    "solar_id": "django_celery_beat_solarschedule",
}
Rules = dict[str, dict[Any, dict[str, Any]]]
PERIODS = {"days": 86400, "hours": 3600, "minutes": 60, "seconds": 1, "microseconds": 1e-6}


def has_periodic_tasks() -> bool:
    return TASK_TABLE in connection.introspection.table_names()


def from_django_celery_beat(now: datetime) -> list[Mapping]:
    """Map every ``PeriodicTask`` row, in name order; [] when the tables do not exist."""
    if not has_periodic_tasks():
        return []
    rules = {column: _rows_by_id(table) for column, table in RULE_TABLES.items()}
    return [_guarded_row(row, rules, now) for row in _rows(TASK_TABLE, order="name")]


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


def _guarded_row(row: dict[str, Any], rules: Rules, now: datetime) -> Mapping:
    label = f"{DB_PREFIX}{row['name']}"
    source = f"PeriodicTask {shown(row['name'])} ({shown(row['task'])})"
    try:
        return _periodic_task(label, row, rules, now)
    except Refused as exc:
        return Mapping(label, source, None, refusal=one_line(str(exc)))
    except CONTENT_ERRORS as exc:
        return Mapping(label, source, None, refusal=unreadable(exc))


def _periodic_task(label: str, row: dict[str, Any], rules: Rules, now: datetime) -> Mapping:
    timing, what = _row_timing(row, rules)
    source = one_line(f"PeriodicTask {shown(row['name'])}: {what} {row['task']}")
    args = _json_value(row.get("args"), "args", [])
    if not isinstance(args, list):
        raise Refused(f"args must be a JSON list, got {shown(args)}")
    kwargs = beat_kwargs(_json_value(row.get("kwargs"), "kwargs", {}))
    fields, notes, keep = _row_extras(row, timing, now)
    name = str(row["name"])[: TEXT_LENGTHS["name"]]
    fields.update(
        timing, task=row["task"], args=beat_args(args), kwargs=kwargs, key=label[:200], name=name
    )
    status = "active" if row.get("enabled", True) else "paused"
    desired = Desired(label=label, fields=fields, status=status, keep_existing=keep)
    return Mapping(label, source, desired, notes=tuple(notes))


def _row_timing(row: dict[str, Any], rules: Rules) -> tuple[dict[str, Any], str]:
    if row.get("solar_id") is not None:
        sun = _linked(rules, "solar_id", row)
        # The table has no zone: local dates are UTC dates (the place's zone changes only
        # where a day begins; set it on the schedule afterwards if that matters).
        timing = solar_timing(sun["event"], sun["latitude"], sun["longitude"], "UTC")
        return timing, f"solar({sun['event']}, {sun['latitude']}, {sun['longitude']})"
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
            raise Refused(f"unknown interval period {shown(period)}")
        timing = interval_timing(int(interval["every"]) * PERIODS[period])
        return timing, f"every {interval['every']} {period}"
    if row.get("clocked_id") is not None:
        clocked = _linked(rules, "clocked_id", row)
        at = _instant(clocked["clocked_time"])
        rule = at.isoformat().replace("+00:00", "Z")
        return {"kind": "once", "rule": rule, "timezone": "UTC"}, f"clocked({rule})"
    raise Refused("the row has no crontab, interval, clocked or solar schedule")


def _linked(rules: Rules, column: str, row: dict[str, Any]) -> dict[str, Any]:
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
    routing = routing_options(row, notes)
    if routing:
        fields["options"] = routing
    headers = _json_value(row.get("headers"), "headers", {})
    if headers:
        notes.append(one_line(f"not carried over: headers={shown(headers)}"))
    return fields, notes, frozenset(keep)


def _json_value(raw: Any, name: str, empty: Any) -> Any:
    if raw in (None, ""):
        return empty
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, RecursionError):
        raise Refused(f"{name} is not valid JSON (or nested too deep): {shown(raw)}") from None


def _instant(value: Any) -> datetime:
    """A datetime from a raw row: aware as is; naive means UTC (Django's storage with USE_TZ)."""
    parsed = parse_datetime(value) if isinstance(value, str) else value
    if not isinstance(parsed, datetime):
        raise Refused(f"{shown(value)} is not a date-time")
    return aware(parsed)
