"""Scale benchmark (``make bench``): our scheduler and django-celery-beat, side by side, one run.

Issue 6. Same PostgreSQL database, same Redis db, same machine, same process tree. For every
size it creates the same schedules in both schedulers (mixed cron / rrule / interval in several
zones; django-celery-beat has no rrule, so those become the equivalent crontab rows) and
measures, next to the raw limits of the stack measured in the same run:

- start-up: a fresh process builds the beat scheduler class and runs its first tick; RSS then;
- idle tick: wall time and SQL queries of a tick with nothing due (same fresh process);
- burst: the time until all of B slots due at the same instant are published to Redis
  (B = 1,000, 10,000, 100,000 where the size allows).
  Ours: ``Ticker`` + ``CeleryPublisher`` with a FakeClock standing at the due instant (the tick
  is a single call). django-celery-beat: its ``DatabaseScheduler`` is built, its heap filled
  (what ``tick()`` does first; at start-up in real life), then ``tick()`` is driven the way
  ``celery beat`` drives it (sleeping what it asks for) until every due entry is sent or the
  budget runs out; its schedules are really due (``last_run_at`` one period back);
- soak: RSS of a fresh process driving ``Ticker`` through one simulated hour (FakeClock) with
  some of the size's schedules due during it (ours only: see ``DCB_SOAK_NOTE``);

and, once per run (their own schedules, independent of the sizes):

- lateness: a real ``celery beat -S scheduler_app.beat:DurableScheduler`` under a steady
  ``--lateness-rate`` slots per minute; ``dispatched_at - scheduled_for`` p50/p95/p99/max;
- sustained: one, then two beat processes (SKIP LOCKED) working through ``--backlog`` due
  schedules; occurrences per second, compared with the raw ``apply_async`` rate.

    python -m bench.scale [--sizes 1000,10000] [--only startup,burst,...] [--repeats 3]
                          [--dcb-budget 60] [--budget 600] [--no-write] [--no-profile]
                          [--lateness-seconds 120] [--backlog 20000] [--merge]

Schedules are created in bulk (COPY + ``INSERT ... SELECT`` from templates made through the
public API) once per size and reused by every figure of that size: 100,000 take about half a
minute, 1,000,000 a few minutes. ``--budget`` bounds each of our bursts and soaks,
``--dcb-budget`` each django-celery-beat burst and start-up/idle process, in seconds; what does
not finish is reported as such. ``--only`` runs some parts (``PARTS``) and ``--merge`` fills the
others from the previous ``bench/results/scale.json``, so a long run can be split.
Needs ``DJANGO_SETTINGS_MODULE=bench.settings``, ``DATABASE_URL`` (a dedicated database: the
bench truncates its tables) and ``CELERY_BROKER_URL`` (a dedicated Redis db: it is flushed).
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import io
import json
import os
import pstats
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

T0 = time.perf_counter()  # child processes report start-up from here (interpreter is up)

from bench import report  # noqa: E402

NAME = "scale"
HEADING = "Scale (`make bench`)"
TASK = "bench.noop"
QUEUE = "celery"
ZONES = ["UTC", "Europe/Riga", "America/New_York", "Asia/Tokyo", "Asia/Kolkata", "Australia/Sydney"]
KINDS = ["cron", "cron", "rrule", "interval"]  # 50% cron, 25% rrule, 25% interval
PREFIX = "bench-"
DAY = timedelta(days=1)
HOUR = timedelta(hours=1)
MIB = 1024 * 1024

TARGETS = {
    "idle_tick_ms": 5.0,
    "idle_tick_queries": 3,
    "startup_s": 1.0,
    "rss_mib": 120.0,
    "burst_1000_s": 0.3,
    "burst_1000_ratio": 50.0,
    "burst_100000_s": 30.0,
    "sustained_vs_raw": 0.5,
    "two_beats_ratio": 1.6,
    "lateness_p99_s": 1.0,
}


BURSTS = (1000, 10_000, 100_000)
PARTS = ("raw", "startup", "burst", "soak", "profile", "lateness", "sustained")
SIZE_PARTS = ("startup", "burst", "soak", "profile")
DCB_SOAK_NOTE = (
    "not measured: django-celery-beat reads the time in several places (`datetime.now()`,"
    " `django.utils.timezone.now()`, Celery's `app.now()`, `time.monotonic()` for its heap"
    " and sync intervals), so a simulated hour needs a clock-patching library"
    " (time-machine, freezegun), which is not a dependency of this project"
)


class BudgetExceeded(Exception):
    pass


# --- set-up --------------------------------------------------------------------------------


def ensure_database() -> None:
    """Create the bench database named by DATABASE_URL if it does not exist yet."""
    import dj_database_url
    import psycopg

    config = dj_database_url.parse(os.environ.get("DATABASE_URL", ""))
    name = config["NAME"]
    if not name or "test" in name:
        raise SystemExit(f"refusing database {name!r}: point DATABASE_URL at a dedicated one")
    dsn = {"host": config["HOST"], "port": config["PORT"] or 5432, "user": config["USER"]}
    with psycopg.connect(dbname="postgres", autocommit=True, **dsn) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def setup_django(migrate: bool = False) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")
    if migrate:
        ensure_database()
    import django

    django.setup()
    from django.conf import settings

    name = settings.DATABASES["default"]["NAME"]
    if settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
        raise SystemExit("bench.scale needs PostgreSQL: set DATABASE_URL to the bench database")
    if "test" in str(name):
        raise SystemExit(f"refusing to run against database {name!r}: use a dedicated one")
    broker = settings.CELERY_BROKER_URL
    if not broker.startswith("redis://"):
        raise SystemExit("bench.scale needs Redis: set CELERY_BROKER_URL=redis://.../<db>")
    if migrate:
        from django.core.management import call_command

        call_command("migrate", verbosity=0)


def celery_app() -> Any:
    from project.celery import app

    app.set_current()
    app.set_default()
    if TASK not in app.tasks:
        app.task(name=TASK)(_noop)
    return app


def _noop(**kwargs: Any) -> None:
    return None


def redis_client() -> Any:
    import redis
    from django.conf import settings

    return redis.Redis.from_url(settings.CELERY_BROKER_URL)


def rss() -> dict[str, float]:
    """Current and peak resident set size of this process, in MiB."""
    values = {}
    with open("/proc/self/status") as status:
        for line in status:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(rest.split()[0]) * 1024 / MIB
    return {"rss_mib": round(values["VmRSS"], 1), "peak_rss_mib": round(values["VmHWM"], 1)}


def due_instant() -> datetime:
    """The shared due instant T: this minute (UTC). Real for django-celery-beat, whose crontab
    pre-filter keeps only hours near the server's current hour; a FakeClock for ours."""
    return datetime.now(UTC).replace(second=0, microsecond=0)


def truncate_all() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "TRUNCATE scheduler_app_occurrence, scheduler_app_scheduleversion,"
            " scheduler_app_schedule, django_celery_beat_periodictask,"
            " django_celery_beat_crontabschedule, django_celery_beat_intervalschedule CASCADE"
        )


def analyze() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE scheduler_app_schedule")
        cursor.execute("VACUUM ANALYZE django_celery_beat_periodictask")
        cursor.execute("VACUUM ANALYZE scheduler_app_occurrence")


def templates(at: datetime) -> list[tuple[str, str, Any]]:
    """One (kind, zone, our schedule) per kind and zone, each with a slot exactly at ``at``."""
    from scheduler_app.clock import FakeClock
    from scheduler_app.services import create_schedule

    clock = FakeClock(at - timedelta(minutes=1))
    made = []
    for zone in ZONES:
        local = at.astimezone(ZoneInfo(zone))
        for kind in dict.fromkeys(KINDS):
            if kind == "cron":
                fields = {"rule": f"{local.minute} {local.hour} * * *"}
            elif kind == "rrule":
                fields = {"rule": f"FREQ=DAILY;BYHOUR={local.hour};BYMINUTE={local.minute}"}
            else:
                fields = {"rule": "1h", "anchor": at - DAY}
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

    from scheduler_app.models import Schedule, ScheduleVersion

    special = {
        "id": "b.sid",
        "key": "NULL",
        "name": f"'{PREFIX}' || lpad(b.i::text, 8, '0')",
        "kwargs": "jsonb_build_object('n', b.i)",
        "anchor": "coalesce(b.anchor, t.anchor)",
        "next_run_at": "coalesce(b.next_run_at, %s::timestamptz, t.next_run_at)",
    }
    columns = [f.column for f in Schedule._meta.concrete_fields]
    exprs = [special.get(column, f't."{column}"') for column in columns]
    names = ", ".join(f'"{column}"' for column in columns)
    version_table = ScheduleVersion._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f'INSERT INTO "{Schedule._meta.db_table}" ({names})'
            f" SELECT {', '.join(exprs)} FROM bench_ids b"
            f' JOIN "{Schedule._meta.db_table}" t ON t.id = b.tid',
            [next_run_at],
        )
        cursor.execute(
            f'INSERT INTO "{version_table}" (id, schedule_id, version, definition, created_at)'
            " SELECT b.vid, b.sid, 1, v.definition"
            " || jsonb_build_object('kwargs', jsonb_build_object('n', b.i))"
            " || CASE WHEN b.anchor IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('anchor',"
            " to_char(b.anchor AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US') || '+00:00')"
            " END, v.created_at"
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

    from scheduler_app.definitions import version_id
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
            key = (KINDS[index % len(KINDS)], ZONES[(index // len(KINDS)) % len(ZONES)])
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
        cursor.execute("TRUNCATE scheduler_app_occurrence")
        cursor.execute(
            "UPDATE scheduler_app_schedule SET next_run_at = CASE WHEN name < %s THEN %s"
            " ELSE %s END, last_scheduled_for = NULL, status = 'active', "
            + ", ".join(f"{c} = 0" for c in counters)
            + " WHERE name LIKE %s AND (next_run_at IS DISTINCT FROM CASE WHEN name < %s"
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
    redis_client().flushdb()


def set_idle(at: datetime) -> None:
    set_due(0, at)


# --- raw limits of the stack ---------------------------------------------------------------


def timed_loop(step: Callable[[int], None], count: int, budget: float) -> dict[str, float]:
    """Run ``step(i)`` ``count`` times or until ``budget`` seconds pass; items per second."""
    begin = time.perf_counter()
    deadline = begin + budget
    done = 0
    while done < count and time.perf_counter() < deadline:
        step(done)
        done += 1
    elapsed = time.perf_counter() - begin
    return {"items": done, "seconds": elapsed, "rate": done / elapsed}


def raw_limits(repeats: int, messages: int, rows: int) -> dict[str, Any]:
    from django.db import connection
    from kombu import Producer

    app = celery_app()
    noop = app.tasks[TASK]
    client = redis_client()

    def apply_async_loop() -> dict[str, float]:
        return timed_loop(lambda i: noop.apply_async(kwargs={"n": i}), messages, 20)

    def producer_loop() -> dict[str, float]:
        with app.producer_or_acquire() as producer:
            return timed_loop(
                lambda i: noop.apply_async(kwargs={"n": i}, producer=producer), messages, 20
            )

    def kombu_loop() -> dict[str, float]:
        with app.connection_for_write() as conn:
            producer = Producer(conn)
            return timed_loop(
                lambda i: producer.publish(
                    {"n": i}, exchange="", routing_key="bench.raw", serializer="json"
                ),
                messages * 3,
                20,
            )

    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TABLE IF NOT EXISTS bench_upsert (id uuid PRIMARY KEY, key text UNIQUE,"
            " created_at timestamptz NOT NULL, payload jsonb NOT NULL)"
        )

    def insert_loop() -> dict[str, float]:
        with connection.cursor() as cursor:
            cursor.execute("TRUNCATE bench_upsert")
        batch = 1000
        stamp = datetime.now(UTC)

        def step(i: int) -> None:
            ids = [uuid.uuid4() for _ in range(batch)]
            keys = [f"k{i}-{n}" for n in range(batch)]
            with connection.cursor() as cursor:
                cursor.execute(
                    "INSERT INTO bench_upsert (id, key, created_at, payload)"
                    " SELECT u, k, %s, '{\"n\": 1}'::jsonb FROM unnest(%s::uuid[], %s::text[])"
                    " AS t(u, k) ON CONFLICT DO NOTHING",
                    [stamp, ids, keys],
                )

        result = timed_loop(step, rows // batch, 20)  # autocommit: one transaction per batch
        result["rate"] *= batch
        result["items"] *= batch
        return result

    loops = {
        "apply_async": ("plain `apply_async` loop (default producer pool)", apply_async_loop),
        "producer": ("`apply_async` with one kombu `Producer` (one connection)", producer_loop),
        "kombu": ("kombu `Producer.publish` of a small JSON body, one connection", kombu_loop),
        "insert": (
            "PostgreSQL `INSERT ... ON CONFLICT DO NOTHING`, batches of 1,000",
            insert_loop,
        ),
    }
    samples: dict[str, list[float]] = {key: [] for key in loops}
    for _ in range(repeats):
        for key, (_, loop) in loops.items():  # interleaved: drifts hit every row alike
            client.flushdb()
            samples[key].append(loop()["rate"])
    client.flushdb()
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE bench_upsert")
    return {
        key: {"label": label, "per_second": report.summarize(samples[key], 0)}
        for key, (label, _) in loops.items()
    }


# --- start-up and idle ticks: a fresh process per sample ----------------------------------


def child(which: str, ticks: int) -> dict[str, Any]:
    """Run inside a fresh process: build the scheduler, first tick, RSS, idle ticks."""
    setup_django()
    app = celery_app()
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    ready = time.perf_counter()
    if which == "ours":
        from scheduler_app.beat import DurableScheduler

        scheduler: Any = DurableScheduler(app=app)
    else:
        from django_celery_beat.schedulers import DatabaseScheduler

        scheduler = DatabaseScheduler(app=app)
    built = time.perf_counter()
    first = scheduler.tick()
    ticked = time.perf_counter()
    memory = rss()
    seconds, queries = [], []
    for _ in range(ticks):
        with CaptureQueriesContext(connection) as captured:
            begin = time.perf_counter()
            scheduler.tick()
            seconds.append(time.perf_counter() - begin)
        queries.append(len(captured.captured_queries))
    bare: list[float] = []
    if which == "ours":  # the Ticker alone: without beat's close_old_connections()
        for _ in range(ticks):
            begin = time.perf_counter()
            scheduler.ticker.tick()
            bare.append((time.perf_counter() - begin) * 1000)
    if which == "dcb":
        scheduler._finalize.cancel()  # no sync at exit: nothing was sent
    return {
        "import_setup_s": ready - T0,
        "construct_s": built - ready,
        "first_tick_s": ticked - built,
        "startup_s": ticked - ready,
        "first_tick_sleep": first,
        **memory,
        "idle_tick_ms": [s * 1000 for s in seconds],
        "idle_tick_queries": queries,
        "ticker_idle_tick_ms": bare,
    }


def startup_samples(which: str, repeats: int, ticks: int, budget: float) -> dict[str, Any]:
    runs = []
    for _ in range(repeats):
        begin = time.perf_counter()
        try:
            done = subprocess.run(
                [sys.executable, "-m", "bench.scale", "--child", which, "--ticks", str(ticks)],
                capture_output=True,
                text=True,
                timeout=budget,
                cwd=report.ROOT,
                check=True,
            )
        except subprocess.TimeoutExpired:
            return {"finished": False, "budget_s": budget}
        except subprocess.CalledProcessError as exc:
            if which == "ours":
                raise SystemExit(f"child {which} failed:\n{exc.stderr}") from exc
            return {"finished": False, "budget_s": budget, "error": exc.stderr[-2000:]}
        result = json.loads(done.stdout.strip().splitlines()[-1])
        result["process_s"] = time.perf_counter() - begin
        runs.append(result)
    idle = [value for run in runs for value in run["idle_tick_ms"]]
    queries = [value for run in runs for value in run["idle_tick_queries"]]
    return {
        "finished": True,
        "startup_s": report.summarize([r["startup_s"] for r in runs]),
        "construct_s": report.summarize([r["construct_s"] for r in runs]),
        "first_tick_s": report.summarize([r["first_tick_s"] for r in runs]),
        "import_setup_s": report.summarize([r["import_setup_s"] for r in runs]),
        "rss_mib": report.summarize([r["rss_mib"] for r in runs], 1),
        "peak_rss_mib": report.summarize([r["peak_rss_mib"] for r in runs], 1),
        "idle_tick_ms": report.summarize(idle, 3),
        "idle_tick_queries": {"min": min(queries), "max": max(queries), "n": len(queries)},
        **(
            {"ticker_idle_tick_ms": report.summarize(bare, 3)}
            if (bare := [value for run in runs for value in run["ticker_idle_tick_ms"]])
            else {}
        ),
    }


# --- bursts --------------------------------------------------------------------------------


def _alarm(_signum: int, _frame: Any) -> None:
    raise BudgetExceeded


def ours_burst(burst: int, at: datetime, budget: float) -> dict[str, Any]:
    from scheduler_app.clock import FakeClock
    from scheduler_app.models import Occurrence, OccurrenceState
    from scheduler_app.publishing import CeleryPublisher
    from scheduler_app.ticker import Ticker

    set_due(burst, at)
    ticker = Ticker(CeleryPublisher(celery_app()), clock=FakeClock(at), owner="bench")
    published = ticks = 0
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, budget)
    begin = time.perf_counter()
    finished = True
    try:
        while published < burst:
            result = ticker.tick()
            ticks += 1
            published += result.published
            if not result.published and not result.created:
                break
    except BudgetExceeded:
        finished = False
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    elapsed = time.perf_counter() - begin
    dispatched = Occurrence.objects.filter(state=OccurrenceState.DISPATCHED).count()
    queued = redis_client().llen(QUEUE)
    if finished and (dispatched != burst or queued != burst):
        raise AssertionError(f"ours: {dispatched} dispatched, {queued} queued, expected {burst}")
    return {
        "finished": finished,
        "seconds": elapsed,
        "sent": queued,
        "ticks": ticks,
    }


def dcb_burst(burst: int, at: datetime, budget: float) -> dict[str, Any]:
    from django_celery_beat.schedulers import DatabaseScheduler

    sent: set[str] = set()

    class Counting(DatabaseScheduler):  # type: ignore[misc]
        def apply_entry(self, entry: Any, producer: Any = None) -> None:
            sent.add(entry.name)
            super().apply_entry(entry, producer=producer)

    set_due(burst, at)
    build = time.perf_counter()
    # Building the scheduler loads every enabled row: at large sizes that alone can outlast
    # the budget (and grow to gigabytes), so it is bounded by the same budget.
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, budget)
    try:
        scheduler = Counting(app=celery_app())
        # What tick() does first when it has no heap (at start-up in a running beat).
        scheduler.old_schedulers = copy.copy(scheduler.schedule)
        scheduler.populate_heap()
        _ = scheduler.producer  # connect before the clock starts
    except BudgetExceeded:
        return {
            "finished": False,
            "seconds": budget,
            "sent": 0,
            "queued": 0,
            "ticks": 0,
            "startup_s": time.perf_counter() - build,
            "build_unfinished": True,
        }
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    begin = time.perf_counter()
    deadline = begin + budget
    ticks = 0
    while len(sent) < burst:
        now = time.perf_counter()
        if now >= deadline:
            break
        interval = scheduler.tick()
        ticks += 1
        if interval and interval > 0:
            time.sleep(min(interval, max(deadline - time.perf_counter(), 0)))
    elapsed = time.perf_counter() - begin
    scheduler._finalize.cancel()
    queued = redis_client().llen(QUEUE)
    return {
        "finished": len(sent) >= burst,
        "seconds": elapsed,
        "sent": len(sent),
        "queued": queued,
        "ticks": ticks,
        "startup_s": begin - build,
    }


def bursts_for(size: int) -> list[int]:
    """Bursts of 1,000, 10,000 and 100,000 where the size allows (the size itself if smaller)."""
    return [burst for burst in BURSTS if burst <= size] or [size]


def burst_samples(
    run: Callable[[int, datetime, float], dict[str, Any]],
    burst: int,
    at: datetime,
    repeats: int,
    budget: float,
) -> dict[str, Any]:
    """Repeat a burst; one that does not finish within the budget is not repeated."""
    runs = []
    for _ in range(repeats):
        result = run(burst, at, budget)
        runs.append(result)
        print(
            f"    burst {burst:,}: {'done' if result['finished'] else 'DNF'}"
            f" {result['sent']:,} sent in {result['seconds']:.2f} s",
            flush=True,
        )
        if not result["finished"]:
            break
    finished = [r for r in runs if r["finished"]]
    summary: dict[str, Any] = {"burst": burst, "budget_s": budget, "runs": runs}
    if len(finished) == len(runs):
        summary["finished"] = True
        summary["seconds"] = report.summarize([r["seconds"] for r in runs])
        summary["per_second"] = round(burst / summary["seconds"]["median"], 1)
    else:
        last = runs[-1]
        summary["finished"] = False
        summary["sent_within_budget"] = last["sent"]
        summary["per_second"] = round(last["sent"] / last["seconds"], 1)
    return summary


# --- RSS after an hour of simulated ticks ---------------------------------------------------


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
            " UPDATE scheduler_app_schedule s SET"
            " anchor = %s::timestamptz + make_interval(secs => picked.k * %s),"
            " next_run_at = %s::timestamptz + make_interval(secs => picked.k * %s)"
            " FROM picked WHERE s.id = picked.id",
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


def soak_child(at: datetime, hour: float) -> dict[str, Any]:
    """Inside a fresh process: drive ``Ticker`` (real ``CeleryPublisher`` to Redis) with a
    FakeClock through ``hour`` simulated seconds, advancing by the sleep each tick returns
    (what ``celery beat`` does); RSS at the start, every simulated minute, and at the end."""
    setup_django()
    from scheduler_app.clock import FakeClock
    from scheduler_app.publishing import CeleryPublisher
    from scheduler_app.ticker import Ticker

    clock = FakeClock(at - timedelta(seconds=1))
    ticker = Ticker(CeleryPublisher(celery_app()), clock=clock, owner="bench-soak")
    begin = time.perf_counter()
    ticker.tick()
    start = rss()
    end = at + timedelta(seconds=hour)
    ticks = published = created = spins = 0
    samples = [start["rss_mib"]]
    next_sample = clock.now() + timedelta(minutes=1)
    while clock.now() < end:
        result = ticker.tick()
        ticks += 1
        published += result.published
        created += result.created
        if result.sleep > 0:
            clock.advance(result.sleep)
            spins = 0
        else:
            spins += 1
            if spins > 100:  # should not happen: never let a stuck row stall the hour
                clock.advance(1.0)
        if clock.now() >= next_sample:
            samples.append(rss()["rss_mib"])
            next_sample += timedelta(minutes=1)
    final = rss()
    return {
        "rss_start_mib": start["rss_mib"],
        "rss_end_mib": final["rss_mib"],
        "rss_max_mib": max([*samples, final["rss_mib"]]),
        "peak_rss_mib": final["peak_rss_mib"],
        "ticks": ticks,
        "created": created,
        "published": published,
        "wall_s": round(time.perf_counter() - begin, 2),
    }


def soak_samples(
    size: int, at: datetime, repeats: int, due: int, hour: float, budget: float
) -> dict[str, Any]:
    due = min(due, size // len(KINDS))
    runs = []
    for _ in range(repeats):
        arranged = arrange_soak(due, at, hour)
        redis_client().flushdb()
        try:
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "bench.scale",
                    "--child",
                    "soak",
                    "--at",
                    at.isoformat(),
                    "--hour",
                    str(hour),
                ],
                capture_output=True,
                text=True,
                timeout=budget,
                cwd=report.ROOT,
                check=True,
            )
        except subprocess.TimeoutExpired:
            restore_soak(at)
            return {"finished": False, "budget_s": budget, "due": due}
        except subprocess.CalledProcessError as exc:  # reported, the rest of the run goes on
            print(f"    soak child failed:\n{exc.stderr[-3000:]}", flush=True)
            restore_soak(at)
            return {"finished": False, "budget_s": budget, "due": due, "error": exc.stderr[-3000:]}
        result = json.loads(done.stdout.strip().splitlines()[-1])
        result["queued"] = redis_client().llen(QUEUE)
        result["arranged"] = arranged
        runs.append(result)
        print(
            f"    soak: RSS {result['rss_start_mib']:.0f} -> {result['rss_end_mib']:.0f} MiB"
            f" (max {result['rss_max_mib']:.0f}), {result['ticks']:,} ticks,"
            f" {result['published']:,} published, {result['wall_s']:.0f} s",
            flush=True,
        )
    restore_soak(at)
    return {
        "finished": True,
        "due": due,
        "hour_s": hour,
        "rss_start_mib": report.summarize([r["rss_start_mib"] for r in runs], 1),
        "rss_end_mib": report.summarize([r["rss_end_mib"] for r in runs], 1),
        "rss_max_mib": report.summarize([r["rss_max_mib"] for r in runs], 1),
        "ticks": report.summarize([r["ticks"] for r in runs], 0),
        "wall_s": report.summarize([r["wall_s"] for r in runs], 1),
        "runs": runs,
    }


# --- a beat in real time: lateness and sustained throughput ----------------------------------


def start_beats(count: int, *extra: str) -> list[subprocess.Popen[str]]:
    """``count`` real ``celery beat -S scheduler_app.beat:DurableScheduler`` processes."""
    return [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "project",
                "beat",
                "-S",
                "scheduler_app.beat:DurableScheduler",
                "--loglevel",
                "WARNING",
                *extra,
            ],
            cwd=report.ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(count)
    ]


def stop(processes: list[subprocess.Popen[str]]) -> list[str]:
    """SIGTERM each, wait; return the tail of their stderr (warnings, errors)."""
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    tails = []
    for process in processes:
        try:
            _, err = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            _, err = process.communicate()
        tails.append((err or "")[-1500:])
    return tails


def create_steady(rate: int, start: datetime) -> list[datetime]:
    """``rate`` interval schedules of 1 min (UTC, fixed rate, overlap ``allow``: no worker
    runs them), anchors staggered evenly over the minute; first slots at or after ``start``."""
    from scheduler_app.clock import FakeClock
    from scheduler_app.definitions import version_id
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


def lateness_run(rate: int, duration: float, lead: float) -> dict[str, Any]:
    """One run: a real beat for ``lead + duration`` s over ``rate`` slots per minute; the
    lateness of every slot due in the window: ``dispatched_at - scheduled_for``."""
    from scheduler_app.models import Occurrence

    start = datetime.now(UTC) + timedelta(seconds=lead)
    anchors = create_steady(rate, start)
    redis_client().flushdb()
    end = start + timedelta(seconds=duration)
    expected = sum(slots_between(anchor, start, end) for anchor in anchors)
    beats = start_beats(1)
    time.sleep(max((end - datetime.now(UTC)).total_seconds(), 0) + 5)  # grace for the tail
    errors = stop(beats)
    rows = list(
        Occurrence.objects.filter(scheduled_for__gte=start, scheduled_for__lt=end).values_list(
            "scheduled_for", "dispatched_at"
        )
    )
    late = [(d - s).total_seconds() for s, d in rows if d is not None]
    result: dict[str, Any] = {
        "expected": expected,
        "materialized": len(rows),
        "dispatched": len(late),
        "queued": redis_client().llen(QUEUE),
        "stderr": [e for e in errors if e.strip()],
    }
    if late:
        result |= {f"p{int(q * 100)}_s": report.percentile(late, q) for q in (0.5, 0.95, 0.99)} | {
            "max_s": max(late),
            "min_s": min(late),
        }
    return result


def lateness_samples(repeats: int, rate: int, duration: float) -> dict[str, Any]:
    runs = []
    for _ in range(repeats):
        run = lateness_run(rate, duration, lead=15.0)
        runs.append(run)
        print(
            f"  lateness: {run['dispatched']:,}/{run['expected']:,} dispatched,"
            f" p50 {run.get('p50_s', float('nan')):.3f} s, p99 {run.get('p99_s', float('nan')):.3f}"
            f" s, max {run.get('max_s', float('nan')):.3f} s",
            flush=True,
        )
    truncate_all()
    redis_client().flushdb()
    done = [r for r in runs if "p50_s" in r]
    summary: dict[str, Any] = {"rate_per_minute": rate, "duration_s": duration, "runs": runs}
    for key in ("p50_s", "p95_s", "p99_s", "max_s"):
        if done:
            summary[key] = report.summarize([r[key] for r in done])
    for key in ("expected", "materialized", "dispatched"):
        summary[key] = report.summarize([r[key] for r in runs], 0)
    return summary


def sustain_child(seconds: float, backlog: int) -> dict[str, Any]:
    """One beat (``Ticker`` + ``CeleryPublisher``, real clock) working through the backlog:
    ready -> wait for "go" on stdin -> tick until every occurrence is dispatched."""
    setup_django()
    from scheduler_app.models import Occurrence, OccurrenceState
    from scheduler_app.publishing import CeleryPublisher
    from scheduler_app.ticker import Ticker

    app = celery_app()
    ticker = Ticker(CeleryPublisher(app))
    with app.producer_or_acquire():  # connect before the clock starts
        pass
    Occurrence.objects.exists()
    print("ready", flush=True)
    sys.stdin.readline()
    begin = time.perf_counter()
    deadline = begin + seconds
    ticks = published = created = 0
    last = begin
    while time.perf_counter() < deadline:
        result = ticker.tick()
        ticks += 1
        published += result.published
        created += result.created
        if result.published:
            last = time.perf_counter()
        if not result.published and not result.created:
            dispatched = Occurrence.objects.filter(state=OccurrenceState.DISPATCHED).count()
            if dispatched >= backlog:
                break
            time.sleep(min(result.sleep, 0.05))
    return {
        "published": published,
        "created": created,
        "ticks": ticks,
        "active_s": last - begin,
        "rate": published / max(last - begin, 1e-9),
    }


def sustained_run(beats: int, backlog: int, at: datetime, seconds: float) -> dict[str, Any]:
    from django.db.models import Max

    from scheduler_app.models import Occurrence, OccurrenceState

    set_due(backlog, at)
    children = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bench.scale",
                "--child",
                "sustain",
                "--seconds",
                str(seconds),
                "--backlog",
                str(backlog),
            ],
            cwd=report.ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(beats)
    ]
    for child_process in children:
        assert child_process.stdout is not None
        line = child_process.stdout.readline()
        if line.strip() != "ready":
            raise SystemExit(f"sustain child not ready: {line!r} {child_process.stderr}")
    go = datetime.now(UTC)
    for child_process in children:
        assert child_process.stdin is not None
        child_process.stdin.write("go\n")
        child_process.stdin.flush()
    results = []
    for child_process in children:
        out, err = child_process.communicate(timeout=seconds + 120)
        if child_process.returncode:
            raise SystemExit(f"sustain child failed:\n{err}")
        results.append(json.loads(out.strip().splitlines()[-1]))
    dispatched = Occurrence.objects.filter(state=OccurrenceState.DISPATCHED)
    count = dispatched.count()
    last = dispatched.aggregate(Max("dispatched_at"))["dispatched_at__max"]
    elapsed = (last - go).total_seconds() if last else seconds
    queued = redis_client().llen(QUEUE)
    return {
        "beats": beats,
        "backlog": backlog,
        "dispatched": count,
        "queued": queued,
        "finished": count >= backlog,
        "seconds": elapsed,
        "per_second": count / elapsed,
        "per_beat": results,
    }


def sustained_samples(repeats: int, backlog: int, seconds: float) -> dict[str, Any]:
    at = due_instant()
    print(f"  sustained: creating {backlog:,} due schedules ...", flush=True)
    created = create_schedules(backlog, at, dcb=False)
    runs: dict[str, list[dict[str, Any]]] = {"1": [], "2": []}
    for _ in range(repeats):
        for beats in (1, 2):  # interleaved: drifts hit both alike
            run = sustained_run(beats, backlog, at, seconds)
            runs[str(beats)].append(run)
            print(
                f"  sustained, {beats} beat(s): {run['dispatched']:,} in {run['seconds']:.1f} s"
                f" = {run['per_second']:,.0f}/s"
                + (" (per beat: " + ", ".join(f"{r['rate']:,.0f}/s" for r in run["per_beat"]))
                + ")",
                flush=True,
            )
    truncate_all()
    redis_client().flushdb()
    ratios = [
        two["per_second"] / one["per_second"] for one, two in zip(runs["1"], runs["2"], strict=True)
    ]
    return {
        "backlog": backlog,
        "cap_s": seconds,
        "create": created,
        "one": report.summarize([r["per_second"] for r in runs["1"]], 1),
        "two": report.summarize([r["per_second"] for r in runs["2"]], 1),
        "two_per_beat": report.summarize([b["rate"] for r in runs["2"] for b in r["per_beat"]], 1),
        "ratio": report.summarize(ratios, 2),
        "finished": all(r["finished"] for rs in runs.values() for r in rs),
        "runs": runs,
    }


# --- profile -------------------------------------------------------------------------------


def profile_burst(burst: int, at: datetime, limit: int = 25) -> dict[str, Any]:
    """cProfile one of our bursts: where the time goes, per published slot."""
    from scheduler_app.clock import FakeClock
    from scheduler_app.publishing import CeleryPublisher
    from scheduler_app.ticker import Ticker

    set_due(burst, at)
    ticker = Ticker(CeleryPublisher(celery_app()), clock=FakeClock(at), owner="bench")
    profiler = cProfile.Profile()
    begin = time.perf_counter()
    profiler.enable()
    result = ticker.tick()
    profiler.disable()
    wall = time.perf_counter() - begin
    stats = pstats.Stats(profiler)
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]

    def cumulative(module: str, function: str) -> float:
        total = 0.0
        for (filename, _, name), (_, _, _, cum, _) in raw.items():
            if name == function and filename.endswith(module):
                total += cum
        return total

    phases = [
        ("tick (all)", "scheduler_app/ticker.py", "tick"),
        ("materialize (claim, plan, insert, advance)", "scheduler_app/ticker.py", "materialize"),
        ("  plan_schedule (Python: slots, keys, rows)", "materialize.py", "plan_schedule"),
        ("  insert occurrences (insert_occurrences)", "materialize.py", "insert_occurrences"),
        ("  bulk_create occurrences (older code)", "django/db/models/query.py", "bulk_create"),
        ("  advance schedules (save_advanced)", "materialize.py", "save_advanced"),
        ("dispatch (claim, publish, mark)", "scheduler_app/ticker.py", "dispatch"),
        ("  claim_pending (SELECT ... FOR UPDATE)", "outbox.py", "claim_pending"),
        ("  publish (Redis pipeline, or send_task per occurrence)", "publishing.py", "publish"),
        ("    context_headers", "outbox.py", "context_headers"),
        ("    kombu Producer.publish", "kombu/messaging.py", "publish"),
        ("  mark_dispatched (UPDATE)", "outbox.py", "mark_dispatched"),
        ("SQL: psycopg cursor execute", "psycopg/cursor.py", "execute"),
        ("Redis: socket sendall", "~", "<method 'sendall' of '_socket.socket' objects>"),
    ]
    rows = []
    for label, module, function in phases:
        seconds = cumulative(module, function)
        rows.append(
            {
                "phase": label,
                "seconds": round(seconds, 4),
                "us_per_slot": round(seconds / burst * 1e6, 1),
            }
        )
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(limit)
    return {
        "burst": burst,
        "published": result.published,
        "wall_s": round(wall, 3),
        "phases": rows,
        "top_own_time": text.getvalue(),
    }


# --- report --------------------------------------------------------------------------------


def stat(summary: dict[str, Any] | None, key: str, scale: float = 1.0, fmt: str = "{:.3f}") -> str:
    if not summary or not summary.get("finished", True) or key not in summary:
        return "-"
    values = summary[key]
    med, low, high = (values[k] * scale for k in ("median", "min", "max"))
    return f"{fmt.format(med)} ({fmt.format(low)}-{fmt.format(high)})"


def burst_cell(summary: dict[str, Any]) -> str:
    if summary["finished"]:
        return stat(summary, "seconds")
    if summary["runs"][-1].get("build_unfinished"):
        return f"did not finish in {summary['budget_s']:g} s (still loading its schedule)"
    return (
        f"did not finish within {summary['budget_s']:g} s"
        f" ({summary['sent_within_budget']:,} of {summary['burst']:,} sent)"
    )


def verdict(met: bool | None) -> str:
    if met is None:
        return "-"
    return "met" if met else "**missed**"


def judge(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's targets, each with what this run measured (``met`` None: not measured)."""
    sizes = payload["sizes"]
    verdicts: list[dict[str, Any]] = []

    def flat(target: str, figure: str, key: str, stat_key: str, fmt: str, limit: float) -> None:
        measured = [
            (s["size"], s["ours"][figure][key][stat_key])
            for s in sizes
            if s["ours"].get(figure, {}).get("finished") and key in s["ours"][figure]
        ]
        if not measured:
            verdicts.append({"target": target, "measured": "not measured", "met": None})
            return
        text = " / ".join(fmt.format(v) for _, v in measured)
        text += " at " + ", ".join(f"{n:,}" for n, _ in measured)
        verdicts.append(
            {"target": target, "measured": text, "met": max(v for _, v in measured) <= limit}
        )

    flat("idle tick <= 5 ms, flat", "startup", "idle_tick_ms", "median", "{:.2f} ms", 5.0)
    flat("idle tick <= 3 queries, flat", "startup", "idle_tick_queries", "max", "{}", 3)
    flat("start-up <= 1 s, flat", "startup", "startup_s", "median", "{:.3f} s", 1.0)
    flat("RSS after start <= 120 MiB, flat", "startup", "rss_mib", "median", "{:.0f} MiB", 120)
    flat(
        "RSS after an hour of ticks <= 120 MiB, flat",
        "soak",
        "rss_max_mib",
        "median",
        "{:.0f} MiB",
        120,
    )
    for s in sizes:
        bursts = s["ours"].get("bursts", {})
        ours = bursts.get("1000")
        dcb = s["dcb"].get("bursts", {}).get("1000")
        if ours is not None and ours["finished"]:
            seconds = ours["seconds"]["median"]
            verdicts.append(
                {
                    "target": f"burst of 1,000 <= 0.3 s ({s['size']:,} schedules)",
                    "measured": f"{seconds:.3f} s",
                    "met": seconds <= TARGETS["burst_1000_s"],
                }
            )
            if dcb is not None:
                if dcb["finished"]:
                    ratio = dcb["seconds"]["median"] / seconds
                    text = f"{ratio:.0f}x"
                else:
                    ratio = dcb["budget_s"] / seconds
                    text = f"> {ratio:.0f}x (django-celery-beat did not finish)"
                verdicts.append(
                    {
                        "target": f"burst of 1,000 >= 50x faster than django-celery-beat"
                        f" ({s['size']:,} schedules)",
                        "measured": text,
                        "met": ratio >= TARGETS["burst_1000_ratio"],
                    }
                )
        big = bursts.get("100000")
        if big is not None:
            verdicts.append(
                {
                    "target": f"burst of 100,000 <= 30 s ({s['size']:,} schedules)",
                    "measured": burst_cell(big),
                    "met": big["finished"]
                    and big["seconds"]["median"] <= TARGETS["burst_100000_s"],
                }
            )
    sustained = payload.get("sustained")
    raw = payload.get("raw_limits") or {}
    if sustained:
        one = sustained["one"]["median"]
        if raw:
            apply_rate = raw["apply_async"]["per_second"]["median"]
            verdicts.append(
                {
                    "target": "one beat >= 0.5x the raw `apply_async` rate",
                    "measured": f"{one:,.0f}/s vs {apply_rate:,.0f}/s = {one / apply_rate:.2f}x",
                    "met": one / apply_rate >= TARGETS["sustained_vs_raw"],
                }
            )
        ratio = sustained["ratio"]["median"]
        verdicts.append(
            {
                "target": "two beats together >= 1.6x one beat",
                "measured": f"{sustained['two']['median']:,.0f}/s vs {one:,.0f}/s = {ratio:.2f}x",
                "met": ratio >= TARGETS["two_beats_ratio"],
            }
        )
    else:
        for target in ("one beat >= 0.5x the raw `apply_async` rate", "two beats >= 1.6x one"):
            verdicts.append({"target": target, "measured": "not measured", "met": None})
    lateness = payload.get("lateness")
    if lateness and "p99_s" in lateness:
        p99 = lateness["p99_s"]["median"]
        verdicts.append(
            {
                "target": f"p99 dispatch lateness <= 1 s at {lateness['rate_per_minute']:,}"
                " slots per minute",
                "measured": f"{p99:.3f} s (worst run {lateness['p99_s']['max']:.3f} s)",
                "met": p99 <= TARGETS["lateness_p99_s"]
                and all(run["dispatched"] >= run["expected"] for run in lateness["runs"]),
            }
        )
    else:
        verdicts.append(
            {"target": "p99 dispatch lateness <= 1 s", "measured": "not measured", "met": None}
        )
    return verdicts


def dnf(summary: dict[str, Any] | None) -> str | None:
    """The cell text of a figure that was not measured or did not finish, else None."""
    if summary is None:
        return "not run"
    if summary.get("finished", True):
        return None
    if "note" in summary:
        return "not measured (see below)"
    if "error" in summary:
        return "failed (see JSON)"
    return f"did not finish in {summary['budget_s']:g} s"


def cell(summary: dict[str, Any] | None, key: str, fmt: str = "{:.3f}") -> str:
    return dnf(summary) or stat(summary, key, fmt=fmt)


def size_rows(s: dict[str, Any]) -> list[list[str]]:
    size = f"{s['size']:,}"
    created = s.get("create", {})
    rows = [
        [
            size,
            "schedules created (both schedulers, SQL bulk copy), s",
            f"{created.get('seconds', 0):.1f} (1 run)",
            "(same step)",
        ]
    ]
    o, d = s["ours"].get("startup"), s["dcb"].get("startup")
    if o is not None or d is not None:
        rows += [
            [size, "start-up: build + first tick, s", cell(o, "startup_s"), cell(d, "startup_s")],
            [
                size,
                "RSS after first tick, MiB",
                cell(o, "rss_mib", "{:.0f}"),
                cell(d, "rss_mib", "{:.0f}"),
            ],
            [
                size,
                "idle tick, ms",
                cell(o, "idle_tick_ms", "{:.2f}"),
                cell(d, "idle_tick_ms", "{:.2f}"),
            ],
            [
                size,
                "idle tick without beat's `close_old_connections()` (`Ticker.tick()`), ms",
                cell(o, "ticker_idle_tick_ms", "{:.2f}"),
                "-",
            ],
            [size, "SQL queries per idle tick", _queries(o), _queries(d)],
        ]
    soak, dcb_soak = s["ours"].get("soak"), s["dcb"].get("soak")
    if soak is not None:
        label = "RSS after an hour of simulated ticks"
        if soak.get("finished"):
            label += f" ({soak['due']:,} slots due in the hour)"
        rows += [
            [
                size,
                f"{label}: at start / at end / max, MiB",
                dnf(soak)
                or " / ".join(
                    stat(soak, key, fmt="{:.0f}")
                    for key in ("rss_start_mib", "rss_end_mib", "rss_max_mib")
                ),
                dnf(dcb_soak) or "-",
            ],
            [
                size,
                "simulated hour: ticks run / wall time, s",
                dnf(soak)
                or f"{stat(soak, 'ticks', fmt='{:.0f}')} / {stat(soak, 'wall_s', fmt='{:.0f}')}",
                "-",
            ],
        ]
    bursts, dcb_bursts = s["ours"].get("bursts", {}), s["dcb"].get("bursts", {})
    for burst in bursts_for(s["size"]):
        ours, dcb = bursts.get(str(burst)), dcb_bursts.get(str(burst))
        if ours is None and dcb is None:
            continue
        rows += [
            [
                size,
                f"burst of {burst:,} due at once: all published, s",
                burst_cell(ours) if ours else "not run",
                burst_cell(dcb) if dcb else "not run",
            ],
            [
                size,
                f"burst of {burst:,}: published per second",
                f"{ours['per_second']:,.0f}" if ours else "-",
                f"{dcb['per_second']:,.0f}" if dcb else "-",
            ],
        ]
    return rows


def render_lateness(lateness: dict[str, Any]) -> str:
    rows = []
    for key, label in (("p50_s", "p50"), ("p95_s", "p95"), ("p99_s", "p99"), ("max_s", "max")):
        rows.append([f"dispatch lateness {label}, s", cell(lateness, key)])
    for key, label in (
        ("expected", "slots due in the window"),
        ("materialized", "occurrences created for them"),
        ("dispatched", "dispatched"),
    ):
        rows.append([label, stat(lateness, key, fmt="{:,.0f}")])
    return report.markdown_table(["figure (median, min-max over runs)", "ours"], rows)


def render_sustained(sustained: dict[str, Any], raw: dict[str, Any]) -> str:
    rows = [
        ["one beat, occurrences/s", stat(sustained, "one", fmt="{:,.0f}")],
        ["two beats together, occurrences/s", stat(sustained, "two", fmt="{:,.0f}")],
        ["two beats: each beat, occurrences/s", stat(sustained, "two_per_beat", fmt="{:,.0f}")],
        ["two beats / one beat", stat(sustained, "ratio", fmt="{:.2f}x")],
    ]
    if raw:
        rows.append(
            [
                "raw `apply_async` loop of the same run, /s",
                stat(raw["apply_async"], "per_second", fmt="{:,.0f}"),
            ]
        )
    return report.markdown_table(["figure (median, min-max over runs)", "ours"], rows)


def render(payload: dict[str, Any]) -> str:
    facts = payload["machine"]
    settings = payload["settings"]
    raw = payload.get("raw_limits") or {}
    parts = [
        f"Run: {report.describe_run(facts, payload['command'])}"
        f" {report.describe_load(facts['load_before'], facts['load_after'])}",
    ]
    if payload.get("merged"):
        parts.append(
            "Split run: these figures come from earlier runs: "
            + "; ".join(f"{key}: {source}" for key, source in payload["merged"].items())
            + "."
        )
    if payload.get("wall_s"):
        parts.append(
            "Wall time per part: "
            + ", ".join(f"{key} {value:,.0f} s" for key, value in payload["wall_s"].items())
            + "."
        )
    if payload["sizes"]:
        parts.append(method_text(settings))
    if raw:
        parts += [
            "### Raw limits of the stack",
            report.markdown_table(
                ["raw limit (same run)", "median /s", "min /s", "max /s", "runs"],
                [
                    [
                        row["label"],
                        f"{row['per_second']['median']:,.0f}",
                        f"{row['per_second']['min']:,.0f}",
                        f"{row['per_second']['max']:,.0f}",
                        str(row["per_second"]["n"]),
                    ]
                    for row in raw.values()
                ],
            ),
        ]
    rows = [row for s in payload["sizes"] for row in size_rows(s)]
    if rows:
        parts += [
            "### Ours and django-celery-beat",
            report.markdown_table(
                ["schedules", "figure (median, min-max)", "ours", "django-celery-beat 2.9.0"],
                rows,
            ),
        ]
    lateness = payload.get("lateness")
    if lateness:
        parts += [
            f"### Dispatch lateness under a steady {lateness['rate_per_minute']:,} slots per"
            " minute",
            f"A real `celery beat -S scheduler_app.beat:DurableScheduler` process;"
            f" {lateness['rate_per_minute']:,} interval schedules of 1 min (UTC, fixed rate,"
            " overlap `allow`: no worker runs them) with anchors staggered evenly over the"
            f" minute (about {lateness['rate_per_minute'] / 60:,.0f} slots due every second)."
            f" Every slot due in a window of {lateness['duration_s']:g} s (starting 15 s after"
            " the beat is launched) counts; lateness = `dispatched_at - scheduled_for` of its"
            " occurrence (`dispatched_at` is taken after the batch is published, so it is an"
            f" upper bound). {len(lateness['runs'])} runs.",
            render_lateness(lateness),
        ]
    sustained = payload.get("sustained")
    if sustained:
        parts += [
            "### Sustained occurrences per second",
            f"A backlog of {sustained['backlog']:,} schedules due at once (the size's mix of"
            " kinds and zones); one `Ticker` + `CeleryPublisher` process per beat, real clock,"
            " started together, ticking (as `celery beat` does) until every occurrence is"
            " published to Redis (at most"
            f" {sustained['cap_s']:g} s); on PostgreSQL both beats claim with `FOR UPDATE SKIP"
            " LOCKED`. Occurrences/s = occurrences dispatched / (last `dispatched_at` - start),"
            " materialization included; one and two beats interleaved,"
            f" {sustained['one']['n']} runs each."
            + ("" if sustained["finished"] else " Some runs hit the cap (see JSON)."),
            render_sustained(sustained, raw),
        ]
    parts += [
        "### Targets",
        report.markdown_table(
            ["target (issue 6)", "measured", "result"],
            [[v["target"], v["measured"], verdict(v["met"])] for v in payload["targets"]],
        ),
    ]
    parts.append(skipped_text(payload))
    profile = payload.get("profile")
    if profile:
        parts += [
            "### Where our burst time goes",
            f"cProfile of one burst of {profile['burst']:,} at"
            f" {profile['size']:,} schedules ({profile['wall_s']:.2f} s under the profiler,"
            " which inflates many small Python calls; read it as a ranking). Cumulative time per"
            " phase, divided by the slots published:",
            report.markdown_table(
                ["phase", "s", "µs per slot"],
                [
                    [
                        row["phase"].replace("  ", "&nbsp;&nbsp;"),
                        f"{row['seconds']:.3f}",
                        f"{row['us_per_slot']:,.0f}",
                    ]
                    for row in profile["phases"]
                ],
            ),
        ]
    parts.append(f"Raw numbers: `bench/results/{NAME}.json`.")
    return "\n\n".join(parts)


def method_text(settings: dict[str, Any]) -> str:
    sizes = ", ".join(f"{n:,}" for n in settings["sizes"]) or "none"
    return (
        f"Sizes {sizes} active schedules, the same ones"
        " in both schedulers: 50% cron (`M H * * *`), 25% rrule (`FREQ=DAILY;BYHOUR=H;"
        "BYMINUTE=M`; a crontab row in django-celery-beat, which has no rrule) and 25% interval"
        f" (1 h), spread over {len(ZONES)} zones ({', '.join(ZONES)}), all with a slot at the"
        " same instant T (this minute). They are made once per size: one template per kind and"
        " zone through the public API, copied in SQL (COPY + `INSERT ... SELECT`), then reused"
        f" by every figure of that size. PostgreSQL database `{settings['database']}` and Redis"
        f" db {settings['redis_db']}, both only for this benchmark. Start-up, RSS and idle ticks:"
        f" a fresh process per sample ({settings['repeats']} samples per size and scheduler,"
        f" {settings['idle_ticks']} idle ticks each, nothing due); start-up is building the"
        " beat scheduler class (`DurableScheduler` / `DatabaseScheduler`) plus its first tick,"
        " after Django is set up; queries counted with `CaptureQueriesContext`; a"
        f" django-celery-beat process that needs more than {settings['dcb_budget']:g} s is"
        " stopped and reported as not finished. RSS after an hour: a fresh process drives"
        " `Ticker` + `CeleryPublisher` (real messages to Redis) with a FakeClock through one"
        " simulated hour, advancing by the sleep each tick returns (at most"
        " `SCHEDULER_MAX_INTERVAL`, as `celery beat` does; the reconciler runs every simulated"
        f" minute); up to {settings.get('soak_due', 0):,} of the interval schedules get one"
        " slot each, spread evenly over the hour; RSS is sampled every simulated minute."
        " Bursts (1,000 / 10,000 / 100,000 where the size allows): the"
        " first B schedules due at T, the rest a day later; ours runs `Ticker.tick()` with"
        " `CeleryPublisher` and a FakeClock at T (one call publishes the burst; batches of"
        f" `SCHEDULER_BATCH_SIZE` = {settings['batch_size']}); django-celery-beat's"
        " `DatabaseScheduler` is built and"
        " its heap filled first (not timed: a running beat has done it at start-up), then"
        " `tick()` is driven like `celery beat` does (sleeping what it returns) until every due"
        " entry is sent, with logging at its default level (a real beat also logs one INFO"
        " line per task). Both publish real Celery messages to Redis; the queue length is"
        f" checked afterwards. Ours: {settings['repeats']} bursts per row; django-celery-beat:"
        f" up to {settings['dcb_repeats']}, budget {settings['dcb_budget']:g} s each (a burst"
        " that does not finish is not repeated). Raw limits: interleaved, "
        f"{settings['raw_repeats']} runs each, at most 20 s per run."
    )


def skipped_text(payload: dict[str, Any]) -> str:
    figures = {"startup": "startup", "bursts": "burst", "soak": "soak"}
    ran = {key for key in ("lateness", "sustained", "profile") if payload.get(key)}
    ran |= {"raw"} if payload.get("raw_limits") else set()
    ran |= {figures[key] for s in payload["sizes"] for key in s["ours"] if key in figures}
    notes = [f"`{part}`" for part in PARTS if part not in ran]
    text = "Not measured in this run: " + ", ".join(notes) + " (`--only`)." if notes else ""
    soaked = any("soak" in s["ours"] for s in payload["sizes"])
    if soaked:
        text += f" RSS after an hour for django-celery-beat: {DCB_SOAK_NOTE}."
    text += (
        " Next-slot computation per rule kind is in the time-engine section above"
        ' (`make bench-timing`). Larger sizes: `make bench BENCH_ARGS="--sizes'
        ' 1000,10000,100000"` (about 25 s to create 100,000 schedules in both schedulers);'
        " `--sizes 1000000 --only startup,soak` for a million (see the Makefile)."
    )
    return text.strip()


def _queries(summary: dict[str, Any] | None) -> str:
    if summary is None or not summary.get("finished", True):
        return dnf(summary) or "-"
    q = summary["idle_tick_queries"]
    return str(q["min"]) if q["min"] == q["max"] else f"{q['min']}-{q['max']}"


# --- main ----------------------------------------------------------------------------------


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.scale",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--sizes", default="1000,10000", help="comma-separated schedule counts")
    parser.add_argument(
        "--only",
        default=",".join(PARTS),
        help=f"comma-separated parts to run (default all): {','.join(PARTS)}",
    )
    parser.add_argument("--repeats", type=int, default=3, help="samples per figure")
    parser.add_argument("--dcb-repeats", type=int, default=3)
    parser.add_argument(
        "--dcb-budget",
        type=float,
        default=60.0,
        help="s per django-celery-beat burst and per start-up/idle child",
    )
    parser.add_argument("--budget", type=float, default=600.0, help="s per burst of ours")
    parser.add_argument("--raw-repeats", type=int, default=3)
    parser.add_argument("--idle-ticks", type=int, default=20)
    parser.add_argument(
        "--soak-due", type=int, default=720, help="schedules due during the simulated hour"
    )
    parser.add_argument("--soak-hour", type=float, default=3600.0, help=argparse.SUPPRESS)
    parser.add_argument(
        "--lateness-rate", type=int, default=10_000, help="slots per minute, steady load"
    )
    parser.add_argument(
        "--lateness-seconds", type=float, default=120.0, help="measured window per run"
    )
    parser.add_argument("--backlog", type=int, default=20_000, help="due schedules, sustained")
    parser.add_argument(
        "--sustained-seconds", type=float, default=180.0, help="cap per sustained run"
    )
    parser.add_argument("--no-write", action="store_true", help="print only; write no files")
    parser.add_argument("--no-profile", action="store_true")
    parser.add_argument(
        "--merge",
        action="store_true",
        help="keep the parts not run now from bench/results/scale.json (a split run)",
    )
    parser.add_argument(
        "--child", choices=["ours", "dcb", "soak", "sustain"], help=argparse.SUPPRESS
    )
    parser.add_argument("--ticks", type=int, default=20, help=argparse.SUPPRESS)
    parser.add_argument("--at", help=argparse.SUPPRESS)
    parser.add_argument("--hour", type=float, default=3600.0, help=argparse.SUPPRESS)
    parser.add_argument("--seconds", type=float, default=60.0, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    if args.child in ("ours", "dcb"):
        print(json.dumps(child(args.child, args.ticks)))
        return 0
    if args.child == "soak":
        print(json.dumps(soak_child(datetime.fromisoformat(args.at), args.hour)))
        return 0
    if args.child == "sustain":
        print(json.dumps(sustain_child(args.seconds, args.backlog)))
        return 0
    command = " ".join(["python -m bench.scale", *argv]) if argv else "make bench"
    sizes = [int(value.replace("_", "")) for value in args.sizes.split(",") if value]
    only = [part.strip() for part in args.only.split(",") if part.strip()]
    unknown = set(only) - set(PARTS)
    if unknown:
        raise SystemExit(f"--only: unknown part(s) {', '.join(sorted(unknown))}; know {PARTS}")
    if "sustained" in only and "raw" not in only:
        only.append("raw")  # the sustained target compares with the raw rate of the same run
    if args.no_profile and "profile" in only:
        only.remove("profile")
    parts = [part for part in PARTS if part in only]
    if not any(part in parts for part in SIZE_PARTS):
        sizes = []

    setup_django(migrate=True)
    from django.conf import settings as django_settings

    load_before = report.load_average()
    timings: dict[str, float] = {}
    raw: dict[str, Any] = {}
    if "raw" in parts:
        print("raw limits ...", flush=True)
        begin = time.perf_counter()
        raw = raw_limits(args.raw_repeats, messages=3000, rows=50_000)
        timings["raw"] = time.perf_counter() - begin
        for row in raw.values():
            print(f"  {row['label']}: {row['per_second']['median']:,.0f}/s", flush=True)

    results = []
    profile = None
    for size in sizes:
        size_begin = time.perf_counter()
        at = due_instant()
        print(f"size {size:,}: creating schedules (T = {at.isoformat()}) ...", flush=True)
        created = create_schedules(size, at)
        print(f"  created in {created['seconds']:.1f} s", flush=True)
        set_idle(at)
        entry: dict[str, Any] = {"size": size, "create": created, "ours": {}, "dcb": {}}
        if "startup" in parts:
            for which, budget in (("ours", max(120.0, size / 1000)), ("dcb", args.dcb_budget)):
                print(f"  {which}: start-up and idle ticks ...", flush=True)
                entry[which]["startup"] = startup_samples(
                    which, args.repeats, args.idle_ticks, budget
                )
        if "burst" in parts:
            entry["ours"]["bursts"], entry["dcb"]["bursts"] = {}, {}
            for burst in bursts_for(size):
                print(f"  ours: burst {burst:,} ...", flush=True)
                entry["ours"]["bursts"][str(burst)] = burst_samples(
                    ours_burst, burst, at, args.repeats, args.budget
                )
                print(f"  django-celery-beat: burst {burst:,} ...", flush=True)
                entry["dcb"]["bursts"][str(burst)] = burst_samples(
                    dcb_burst, burst, at, args.dcb_repeats, args.dcb_budget
                )
        if "soak" in parts:
            print("  ours: an hour of simulated ticks ...", flush=True)
            entry["ours"]["soak"] = soak_samples(
                size, at, args.repeats, args.soak_due, args.soak_hour, args.budget
            )
            entry["dcb"]["soak"] = {"finished": False, "note": DCB_SOAK_NOTE}
        if "profile" in parts and size == max(sizes):
            burst = min(size, 1000)
            print(f"  profiling our burst of {burst:,} ...", flush=True)
            profile = {"size": size, **profile_burst(burst, at)}
            print(profile["top_own_time"])
        set_idle(at)
        entry["wall_s"] = round(time.perf_counter() - size_begin, 1)
        timings[f"size {size:,}"] = entry["wall_s"]
        results.append(entry)
    lateness = sustained = None
    if "lateness" in parts:
        print(f"lateness: {args.lateness_rate:,} slots per minute ...", flush=True)
        begin = time.perf_counter()
        lateness = lateness_samples(args.repeats, args.lateness_rate, args.lateness_seconds)
        timings["lateness"] = time.perf_counter() - begin
    if "sustained" in parts:
        print(f"sustained: backlog of {args.backlog:,} ...", flush=True)
        begin = time.perf_counter()
        sustained = sustained_samples(args.repeats, args.backlog, args.sustained_seconds)
        timings["sustained"] = time.perf_counter() - begin
    redis_client().flushdb()

    facts = report.machine()
    facts["load_before"], facts["load_after"] = load_before, report.load_average()
    payload: dict[str, Any] = {
        "benchmark": NAME,
        "timestamp": report.now().isoformat(timespec="seconds"),
        "command": command,
        "machine": facts,
        "settings": {
            "sizes": sizes,
            "parts": parts,
            "repeats": args.repeats,
            "dcb_repeats": args.dcb_repeats,
            "dcb_budget": args.dcb_budget,
            "budget": args.budget,
            "raw_repeats": args.raw_repeats,
            "idle_ticks": args.idle_ticks,
            "soak_due": args.soak_due,
            "soak_hour_s": args.soak_hour,
            "lateness_rate": args.lateness_rate,
            "lateness_seconds": args.lateness_seconds,
            "backlog": args.backlog,
            "sustained_seconds": args.sustained_seconds,
            "zones": ZONES,
            "kinds": KINDS,
            "database": django_settings.DATABASES["default"]["NAME"],
            "redis_db": django_settings.CELERY_BROKER_URL.rsplit("/", 1)[-1],
            "batch_size": _batch_size(),
        },
        "units": {"seconds": "s", "rss": "MiB", "idle_tick": "ms", "raw": "per second"},
        "wall_s": {key: round(value, 1) for key, value in timings.items()},
        "raw_limits": raw,
        "sizes": results,
        "lateness": lateness,
        "sustained": sustained,
    }
    if profile:
        payload["profile"] = {k: v for k, v in profile.items() if k != "top_own_time"}
        payload["profile"]["top_own_time"] = profile["top_own_time"].splitlines()
    if args.merge:
        merge_previous(payload)
    payload["targets"] = judge(payload)
    body = render(payload)
    print(f"## {HEADING}\n\n{body}")
    for key, value in payload["wall_s"].items():
        print(f"wall time, {key}: {value:.0f} s")
    if not args.no_write:
        json_path = report.write_json(NAME, payload)
        md_path = report.write_section(HEADING, body, facts)
        print(f"wrote {md_path.relative_to(report.ROOT)} and {json_path.relative_to(report.ROOT)}")
    met = [v["met"] for v in payload["targets"] if v["met"] is not None]
    print(f"targets: {sum(met)}/{len(met)} met")
    return 0


def merge_previous(payload: dict[str, Any]) -> None:
    """Fill what this run did not measure from the previous ``scale.json`` (a split run):
    per part, and per size and figure; ``merged`` records where each piece came from."""
    path = report.RESULTS_DIR / f"{NAME}.json"
    if not path.exists():
        return
    old = json.loads(path.read_text())
    source = f"`{old.get('command')}` ({old.get('timestamp')})"
    merged: dict[str, str] = dict(old.get("merged", {}))
    for key in ("raw_limits", "lateness", "sustained", "profile"):
        if not payload.get(key) and old.get(key):
            payload[key] = old[key]
            merged[key] = old.get("merged", {}).get(key, source)
    by_size = {entry["size"]: entry for entry in payload["sizes"]}
    for entry in old.get("sizes", []):
        mine = by_size.get(entry["size"])
        if mine is None:
            payload["sizes"].append(entry)
            merged[f"{entry['size']:,} schedules"] = source
            continue
        for which in ("ours", "dcb"):
            for figure, value in entry.get(which, {}).items():
                if figure not in mine[which]:
                    mine[which][figure] = value
                    merged[f"{figure} at {entry['size']:,}"] = source
    payload["sizes"].sort(key=lambda entry: entry["size"])
    payload["settings"]["sizes"] = [entry["size"] for entry in payload["sizes"]]
    payload["merged"] = merged


def _batch_size() -> int:
    from scheduler_app.conf import get_settings

    return get_settings().BATCH_SIZE


if __name__ == "__main__":
    raise SystemExit(main())
