"""The workload: the same schedules in the three schedulers, and the states the figures need.

For a size N: 50% cron (``M H * * *``), 25% rrule (``FREQ=DAILY;BYHOUR=H;BYMINUTE=M``) and 25%
interval (1 h), spread over ``ZONES``, every one with a slot at the same instant T. Schedule
``i`` has kind ``KINDS[i % 4]`` and zone ``ZONES[(i // 4) % 6]`` (``kind_zone``), is named
``bench-<i:08d>`` and has kwargs ``{"n": i}``. Ours and django-celery-beat's rows are made once
per size: one template per kind and zone through the public API, copied in SQL (COPY +
``INSERT ... SELECT``); celery-redbeat's entries are written to Redis from the same list
(``bench.scale.drivers.redbeat``). ``set_due(B, T)`` makes the first B due at T and the rest
due a day later, writing only the rows that differ.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from bench.scale.env import DAY, HOUR, KINDS, PREFIX, TASK, ZONES, clear_broker


def kind_zone(index: int) -> tuple[str, str]:
    """Schedule ``index``'s kind and zone (the same in the three schedulers)."""
    return KINDS[index % len(KINDS)], ZONES[(index // len(KINDS)) % len(ZONES)]


def local_rule(kind: str, zone: str, at: datetime) -> dict[str, Any]:
    """Our schedule fields for ``kind`` in ``zone`` with a slot exactly at ``at``."""
    local = at.astimezone(ZoneInfo(zone))
    if kind == "cron":
        return {"rule": f"{local.minute} {local.hour} * * *"}
    if kind == "rrule":
        return {"rule": f"FREQ=DAILY;BYHOUR={local.hour};BYMINUTE={local.minute}"}
    if kind == "interval":
        return {"rule": "1h", "anchor": at - DAY}
    raise ValueError(f"unknown kind {kind!r}: expected one of {sorted(set(KINDS))}")


def truncate_all() -> None:
    from django.db import connection

    clear_broker(keep_redbeat=False)
    with connection.cursor() as cursor:
        cursor.execute(
            "TRUNCATE scheduler_app_occurrence, scheduler_app_scheduleversion,"
            " scheduler_app_schedule, scheduler_app_schedule_runtime,"
            " django_celery_beat_periodictask,"
            " django_celery_beat_crontabschedule, django_celery_beat_intervalschedule CASCADE"
        )


def analyze() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE scheduler_app_schedule")
        cursor.execute("VACUUM ANALYZE scheduler_app_schedule_runtime")
        cursor.execute("VACUUM ANALYZE django_celery_beat_periodictask")
        cursor.execute("VACUUM ANALYZE scheduler_app_occurrence")


def templates(at: datetime) -> list[tuple[str, str, Any]]:
    """One (kind, zone, our schedule) per kind and zone, each with a slot exactly at ``at``."""
    from scheduler_app.clock import FakeClock
    from scheduler_app.services import create_schedule

    clock = FakeClock(at - timedelta(minutes=1))
    made = []
    for zone in ZONES:
        for kind in dict.fromkeys(KINDS):
            fields = local_rule(kind, zone, at)
            schedule = create_schedule(
                clock=clock, task=TASK, kind=kind, timezone=zone, kwargs={"n": 0}, **fields
            )
            if schedule.next_run_at != at:
                raise AssertionError(f"template {kind} {zone}: next {schedule.next_run_at} != {at}")
            made.append((kind, zone, schedule))
    return made


def name_of(index: int) -> str:
    return f"{PREFIX}{index:08d}"


def _copy_ids(rows: Iterable[tuple[Any, ...]]) -> None:
    """Fill the session's ``bench_ids`` temp table with COPY (the fast path to PostgreSQL)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE IF EXISTS bench_ids")
        cursor.execute(
            "CREATE TEMP TABLE bench_ids (i int PRIMARY KEY, sid uuid NOT NULL, vid uuid NOT NULL,"
            " tid uuid NOT NULL, ptid int, anchor timestamptz, next_run_at timestamptz)"
        )
        raw = cursor.cursor  # the psycopg cursor under Django's wrapper
        with raw.copy(
            "COPY bench_ids (i, sid, vid, tid, ptid, anchor, next_run_at) FROM STDIN"
        ) as copy:
            for row in rows:
                copy.write_row(row)


def _insert_from_templates(next_run_at: datetime | None, dcb_last_run_at: datetime | None) -> None:
    """``INSERT ... SELECT`` every row of ``bench_ids`` from its template (ours, then
    django-celery-beat's when ``ptid`` is set); name and kwargs from ``i``; per-row ``anchor``
    and ``next_run_at`` when given (the version snapshot's anchor follows)."""
    from django.db import connection
    from django_celery_beat.models import PeriodicTask

    from scheduler_app.models import Schedule, ScheduleRuntime, ScheduleVersion

    special = {
        "id": "b.sid",
        "key": "NULL",
        "name": f"'{PREFIX}' || lpad(b.i::text, 8, '0')",
        "kwargs": "jsonb_build_object('n', b.i)",
        "anchor": "coalesce(b.anchor, t.anchor)",
        "next_run_at": "coalesce(b.next_run_at, %s::timestamptz, t.next_run_at)",
    }
    version_table = ScheduleVersion._meta.db_table
    with connection.cursor() as cursor:
        # Each schedule is a row of its runtime table, then of the definition table.
        for model, params in ((ScheduleRuntime, [next_run_at]), (Schedule, [])):
            columns = [f.column for f in model._meta.local_concrete_fields]
            exprs = [special.get(column, f't."{column}"') for column in columns]
            names = ", ".join(f'"{column}"' for column in columns)
            cursor.execute(
                f'INSERT INTO "{model._meta.db_table}" ({names})'
                f" SELECT {', '.join(exprs)} FROM bench_ids b"
                f' JOIN "{model._meta.db_table}" t ON t.id = b.tid',
                params,
            )
        cursor.execute(
            f'INSERT INTO "{version_table}"'
            " (id, schedule_id, version, definition, created_at, approved_at, approved_by)"
            " SELECT b.vid, b.sid, 1, v.definition"
            " || jsonb_build_object('kwargs', jsonb_build_object('n', b.i))"
            " || CASE WHEN b.anchor IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('anchor',"
            " to_char(b.anchor AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US') || '+00:00')"
            " END, v.created_at, v.approved_at, v.approved_by"
            f' FROM bench_ids b JOIN "{version_table}" v ON v.schedule_id = b.tid'
        )
        if dcb_last_run_at is None:
            return
        special = {
            "name": f"'{PREFIX}' || lpad(b.i::text, 8, '0')",
            "kwargs": "'{\"n\": ' || b.i || '}'",
            "last_run_at": "%s::timestamptz",
        }
        columns = [f.column for f in PeriodicTask._meta.concrete_fields if f.column != "id"]
        exprs = [special.get(column, f'p."{column}"') for column in columns]
        cursor.execute(
            f'INSERT INTO "{PeriodicTask._meta.db_table}" ({", ".join(columns)})'
            f" SELECT {', '.join(exprs)} FROM bench_ids b"
            f' JOIN "{PeriodicTask._meta.db_table}" p ON p.id = b.ptid',
            [dcb_last_run_at],
        )


def create_schedules(size: int, at: datetime, dcb: bool = True) -> dict[str, Any]:
    """``size`` schedules in ours and (``dcb``) in django-celery-beat, none due (the idle
    state). One template per kind and zone is made through the public API
    (``create_schedule``; a ``PeriodicTask`` for django-celery-beat), then copied in SQL
    (COPY of the ids, ``INSERT ... SELECT``): a million rows take minutes, not hours."""
    from django_celery_beat.models import (
        CrontabSchedule,
        IntervalSchedule,
        PeriodicTask,
        PeriodicTasks,
    )

    from scheduler_app.definition.schedule import version_id
    from scheduler_app.models import Schedule

    begin = time.perf_counter()
    truncate_all()
    made = templates(at)
    ours = {(kind, zone): schedule.id for kind, zone, schedule in made}
    theirs: dict[tuple[str, str], int] = {}
    if dcb:
        hourly = IntervalSchedule.objects.create(every=3600, period=IntervalSchedule.SECONDS)
        for zone in ZONES:
            local = at.astimezone(ZoneInfo(zone))
            crontab = CrontabSchedule.objects.create(
                minute=str(local.minute), hour=str(local.hour), timezone=zone
            )
            for kind in dict.fromkeys(KINDS):
                theirs[kind, zone] = PeriodicTask.objects.create(
                    name=f"template-{kind}-{zone}",
                    task=TASK,
                    interval=hourly if kind == "interval" else None,
                    crontab=None if kind == "interval" else crontab,
                    enabled=True,
                ).id

    def rows() -> Iterator[tuple[Any, ...]]:
        for index in range(size):
            key = kind_zone(index)
            sid = uuid.uuid4()
            yield (index, sid, version_id(sid, 1), ours[key], theirs.get(key), None, None)

    _copy_ids(rows())
    copied = time.perf_counter()
    _insert_from_templates(at + DAY, datetime.now(UTC) if dcb else None)
    Schedule.objects.filter(id__in=ours.values()).delete()  # the templates (versions cascade)
    if dcb:
        PeriodicTask.objects.filter(id__in=theirs.values()).delete()
        PeriodicTasks.update_changed()
    inserted = time.perf_counter()
    analyze()
    return {
        "seconds": round(time.perf_counter() - begin, 2),
        "ids_s": round(copied - begin, 2),
        "insert_s": round(inserted - copied, 2),
        "analyze_s": round(time.perf_counter() - inserted, 2),
        "dcb": dcb,
    }


def set_due(burst: int, at: datetime) -> None:
    """The first ``burst`` schedules due at ``at`` in both schedulers; the rest not due.

    Only rows that differ from that state are written (a million-row table is not rewritten
    for every burst)."""
    from django.db import connection
    from django_celery_beat.models import PeriodicTasks

    cut = name_of(burst)
    idle = at + DAY
    real_now = datetime.now(UTC)
    counters = ("occurrence_count", "missed_count", "skipped_count", "caught_up_count")
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE scheduler_app_occurrence CASCADE")
        cursor.execute(
            # The runtime (next run, status, counters) is its own table; the name is the
            # definition's.
            "UPDATE scheduler_app_schedule_runtime r SET next_run_at = CASE WHEN name < %s"
            " THEN %s ELSE %s END, last_scheduled_for = NULL, status = 'active', "
            + ", ".join(f"{c} = 0" for c in counters)
            + " FROM scheduler_app_schedule s WHERE s.id = r.id AND name LIKE %s"
            " AND (next_run_at IS DISTINCT FROM CASE WHEN name < %s"
            " THEN %s::timestamptz ELSE %s::timestamptz END OR last_scheduled_for IS NOT NULL"
            " OR status <> 'active' OR " + " OR ".join(f"{c} <> 0" for c in counters) + ")",
            [cut, at, idle, PREFIX + "%", cut, at, idle],
        )
        cursor.execute(
            "UPDATE django_celery_beat_periodictask SET last_run_at = CASE WHEN name < %s"
            " THEN %s ELSE %s END, total_run_count = 0 WHERE name LIKE %s AND ("
            " (name < %s AND last_run_at IS DISTINCT FROM %s)"
            " OR (name >= %s AND (last_run_at IS NULL OR last_run_at < %s"
            "  OR (interval_id IS NOT NULL AND last_run_at < %s)))"
            " OR total_run_count <> 0)",
            [
                cut,
                at - HOUR,
                real_now,
                PREFIX + "%",
                cut,
                at - HOUR,
                cut,
                at,
                real_now - timedelta(minutes=30),
            ],
        )
    PeriodicTasks.update_changed()
    vacuum_schedules()
    clear_broker()


def vacuum_schedules() -> None:
    """What autovacuum does in a running install, outside the timed part (this machine's
    PostgreSQL runs without it): each arrangement rewrites the due rows, and their dead
    versions would lead the due index for every later sample (bench/ledger_size.py measured
    a 6 ms idle tick from 194,000 of them instead of 0.5 ms)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("VACUUM scheduler_app_schedule")
        cursor.execute("VACUUM scheduler_app_schedule_runtime")  # the due index is there
        cursor.execute("VACUUM django_celery_beat_periodictask")


def set_idle(at: datetime) -> None:
    set_due(0, at)


def arrange_soak(due: int, at: datetime, hour: float) -> int:
    """The first ``due`` interval schedules (1 h, fixed rate) get one slot each during the
    simulated hour, spread evenly: their anchor moves to ``at - 1 day + offset`` (the version
    snapshot is left as it is: it does not drive timing). Everything else stays idle."""
    from django.db import connection

    set_idle(at)
    with connection.cursor() as cursor:
        cursor.execute(
            "WITH picked AS (SELECT id, row_number() OVER (ORDER BY name) - 1 AS k"
            " FROM scheduler_app_schedule WHERE kind = 'interval' AND name LIKE %s"
            " ORDER BY name LIMIT %s)"
            " , anchored AS (UPDATE scheduler_app_schedule s SET"
            " anchor = %s::timestamptz + make_interval(secs => picked.k * %s)"
            " FROM picked WHERE s.id = picked.id RETURNING s.id)"
            # The next run is the runtime's (its own table).
            " UPDATE scheduler_app_schedule_runtime r SET"
            " next_run_at = %s::timestamptz + make_interval(secs => picked.k * %s)"
            " FROM picked WHERE r.id = picked.id AND r.id IN (SELECT id FROM anchored)",
            [PREFIX + "%", due, at - DAY, hour / max(due, 1), at, hour / max(due, 1)],
        )
        return int(cursor.rowcount)


def restore_soak(at: datetime) -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE scheduler_app_schedule SET anchor = %s WHERE kind = 'interval'"
            " AND name LIKE %s AND anchor <> %s",
            [at - DAY, PREFIX + "%", at - DAY],
        )
    set_idle(at)


def create_steady(rate: int, start: datetime) -> list[datetime]:
    """``rate`` interval schedules of 1 min (UTC, fixed rate, overlap ``allow``: no worker
    runs them), anchors staggered evenly over the minute; first slots at or after ``start``."""
    from scheduler_app.clock import FakeClock
    from scheduler_app.definition.schedule import version_id
    from scheduler_app.models import Schedule
    from scheduler_app.services import create_schedule

    truncate_all()
    base = start.replace(second=0, microsecond=0) - DAY
    template = create_schedule(
        clock=FakeClock(base),
        task=TASK,
        kind="interval",
        rule="1m",
        anchor=base,
        timezone="UTC",
        overlap_policy="allow",
        kwargs={"n": 0},
    )
    step = 60_000_000 // rate  # microseconds between neighbours
    anchors = [base + timedelta(microseconds=index * step) for index in range(rate)]

    def rows() -> Iterator[tuple[Any, ...]]:
        for index in range(rate):
            anchor = base + timedelta(microseconds=index * step)
            minutes = -(-(start - anchor) // timedelta(minutes=1))  # ceil
            sid = uuid.uuid4()
            first = anchor + timedelta(minutes=minutes)
            yield (index, sid, version_id(sid, 1), template.id, None, anchor, first)

    _copy_ids(rows())
    _insert_from_templates(None, None)
    Schedule.objects.filter(id=template.id).delete()
    analyze()
    return anchors


def slots_between(anchor: datetime, start: datetime, end: datetime) -> int:
    """How many slots of a 1-minute grid through ``anchor`` fall in [start, end)."""
    minute = timedelta(minutes=1)
    first = anchor + minute * -(-(start - anchor) // minute)
    return 0 if first >= end else 1 + (end - first - timedelta(microseconds=1)) // minute
