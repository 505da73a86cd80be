"""Does the beat, the monitor and the admin stay as fast when the ledger grows (issue 22)?

    export DJANGO_SETTINGS_MODULE=bench.settings CELERY_BROKER_URL=redis://127.0.0.1:6379/<db>
    export DATABASE_URL=postgres://postgres@127.0.0.1:5432/<scratch db>
    .venv/bin/python bench/ledger_size.py --generate 1000000 --measure
    .venv/bin/python bench/ledger_size.py --generate 10000000 --measure   # adds 9,000,000

``--generate N`` fills the ledger up to N occurrences: the first time it TRUNCATES EVERY
SCHEDULER TABLE (and django-celery-beat's) of the database it is pointed at and empties the
Redis db, then makes ``--schedules`` schedules (``bench.scale.workload``), the monthly
partitions (``scheduler_app.partitions``, as ``manage.py scheduler_partitions`` does) and
the rows, in SQL (``INSERT ... SELECT ... FROM generate_series``, one statement per month):
spread over 25 months up to an hour ago, 96.5% succeeded, 2% failed, 1% skipped, the rest
cancelled or expired, a few running with a live lease, 0.5% manual, and one attempt row per
occurrence that ran. A later, larger ``--generate`` adds rows to the same months;
``--fresh`` starts over.

``--measure`` times, on whatever ledger is there, each the median of ``--samples``:

- burst: 1,000 schedules due at one instant, ``Ticker.tick()`` until all 1,000 are in Redis
  (``bench.scale.drivers.ours.running_ticker``; the burst's rows are deleted after each);
- idle tick: ``Ticker.tick()`` with nothing due, after 10 unmeasured warm-up ticks;
- monitor pass: ``run_monitor`` (the beat's), with ``expected_every`` on 1 schedule in 10;
  again with 100 of them two days without a success (each problem reads the ledger);
- the admin's pages (``bench/admin_pages.py``'s list, without the schedule list filtered by
  last outcome unless ``--every-page``) through Django's test client, as a superuser.

Never point it at a database you care about. Writes ``bench/results/ledger_size.json``
(one entry per ledger size), with the 1-minute load average beside each figure.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")

import django

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth.models import User  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from bench.admin_pages import PAGES, timed  # noqa: E402
from bench.ledger_fill import (  # noqa: E402
    META,
    TABLE,
    execute,
    generate,
    load,
    measure_sizes,
    meta,
)
from bench.scale.drivers.ours import running_ticker  # noqa: E402
from bench.scale.env import DAY, PREFIX, clear_broker, queued  # noqa: E402
from bench.scale.workload import name_of  # noqa: E402
from scheduler_app.monitoring.monitor import run_monitor  # noqa: E402
from scheduler_app.partitions.ddl import partitions  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "ledger_size.json"
BURST = 1000
WARM_UP = 10


# --- measurement ------------------------------------------------------------------------------


def arrange(due: int, at: datetime) -> None:
    """The first ``due`` schedules due at ``at``, the others a day later; no burst rows."""
    execute(f"DELETE FROM {TABLE} WHERE scheduled_for >= %s", [at - timedelta(minutes=1)])
    execute(
        # The runtime (next run, status) is its own table; the name is the definition's.
        "UPDATE scheduler_app_schedule_runtime r SET next_run_at = CASE WHEN name < %s THEN %s "
        "ELSE %s END, last_scheduled_for = NULL, status = 'active' "
        "FROM scheduler_app_schedule s WHERE s.id = r.id AND name LIKE %s AND "
        "(next_run_at IS DISTINCT FROM CASE WHEN name < %s THEN %s::timestamptz "
        "ELSE %s::timestamptz END OR last_scheduled_for IS NOT NULL OR status <> 'active')",
        [name_of(due), at, at + DAY, PREFIX + "%", name_of(due), at, at + DAY],
    )
    vacuum_hot(at)
    clear_broker()


def vacuum_hot(at: datetime) -> None:
    """What autovacuum does in a running install (this machine's PostgreSQL runs without it):
    the schedule table and the partition of ``at`` vacuumed after the bench rewrote them.
    Without it the dead entries of earlier arrangements lead the due index, and the idle
    tick's probe visited 4,000 of them (6 ms instead of 0.5)."""
    execute("VACUUM (ANALYZE) scheduler_app_schedule")
    execute("VACUUM (ANALYZE) scheduler_app_schedule_runtime")
    for part in partitions():
        if part.range is None or part.range.start <= at < part.range.end:
            execute(f'VACUUM "{part.name}"')


def summary(samples: list[float]) -> dict[str, Any]:
    return {
        "median_ms": round(statistics.median(samples) * 1000, 3),
        "min_ms": round(min(samples) * 1000, 3),
        "max_ms": round(max(samples) * 1000, 3),
        "samples": len(samples),
        "load": load(),
    }


def measure_burst(at: datetime, samples: int) -> dict[str, Any]:
    times = []
    for _ in range(samples):
        arrange(BURST, at)
        ticker = running_ticker(at)
        published, began = 0, time.perf_counter()
        while published < BURST:
            result = ticker.tick()
            published += result.published
            if not result.published and not result.created:
                break
        times.append(time.perf_counter() - began)
        [(dispatched,)] = execute(
            f"SELECT count(*) FROM {TABLE} WHERE scheduled_for = %s AND state = 'dispatched'",
            [at],
        )
        if dispatched != BURST or queued() != BURST:
            raise AssertionError(f"burst: {dispatched} dispatched, {queued()} queued")
    arrange(0, at)
    result = summary(times)
    print(f"burst of {BURST:,}: {result['median_ms']:.0f} ms (load {result['load']})")
    return result


def measure_idle(at: datetime, samples: int) -> dict[str, Any]:
    arrange(0, at)
    ticker = running_ticker(at)
    for _ in range(WARM_UP):
        ticker.tick()
    times = []
    for _ in range(samples):
        began = time.perf_counter()
        result = ticker.tick()
        times.append(time.perf_counter() - began)
        if result.created or result.published:
            raise AssertionError(f"idle tick did work: {result}")
    with CaptureQueriesContext(connection) as captured:
        ticker.tick()
    out = {**summary(times), "statements": len(captured)}
    print(f"idle tick: {out['median_ms']:.2f} ms, {len(captured)} statement(s) (load {load()})")
    return out


def timed_calls(call: Callable[[], object], samples: int) -> tuple[float, list[float]]:
    began = time.perf_counter()
    call()
    first = time.perf_counter() - began
    times = []
    for _ in range(samples):
        began = time.perf_counter()
        call()
        times.append(time.perf_counter() - began)
    return first, times


def measure_monitor(samples: int) -> dict[str, Any]:
    execute("UPDATE scheduler_app_schedule SET health = 'ok', health_reason = ''")
    now = datetime.now(UTC)
    first, times = timed_calls(lambda: run_monitor(now), samples)
    report = run_monitor(now)
    out = {
        **summary(times),
        "first_ms": round(first * 1000, 1),
        "problems": len(report.problems),
    }
    print(
        f"monitor pass: {out['median_ms']:.0f} ms (first, marking {out['problems']} "
        f"unhealthy: {out['first_ms']:.0f} ms) (load {out['load']})"
    )
    out["with_problems"] = measure_monitor_problems(samples, now)
    return out


PROBLEMS = 100


def measure_monitor_problems(samples: int, now: datetime) -> dict[str, Any]:
    """The pass when ``PROBLEMS`` schedules with ``expected_every`` have had no success for two
    days: each problem's message reads its latest ended occurrence from the ledger."""
    keep = execute(
        "SELECT id, last_success_at FROM scheduler_app_schedule "
        "WHERE expected_every IS NOT NULL ORDER BY id LIMIT %s",
        [PROBLEMS],
    )
    ids = [row[0] for row in keep]
    execute(
        "UPDATE scheduler_app_schedule SET last_success_at = %s WHERE id = ANY(%s)",
        [now - timedelta(days=2), ids],
    )
    try:
        first, times = timed_calls(lambda: run_monitor(now), samples)
        problems = len(run_monitor(now).problems)
    finally:
        for sid, success in keep:
            execute(
                "UPDATE scheduler_app_schedule SET last_success_at = %s, health = 'ok', "
                "health_reason = '' WHERE id = %s",
                [success, sid],
            )
    out = {**summary(times), "first_ms": round(first * 1000, 1), "problems": problems}
    print(
        f"monitor pass with {problems} problems: {out['median_ms']:.0f} ms "
        f"(first: {out['first_ms']:.0f} ms) (load {out['load']})"
    )
    return out


SLOW_PAGE = "schedule list, filtered (last outcome failed)"


def page_load(client: Client, url: str) -> tuple[float, list[float]]:
    """The page's time and each of its queries' (Django's own timing of them)."""
    with CaptureQueriesContext(connection) as captured:
        elapsed, _ = timed(client, url)
    times = [float(query["time"]) for query in captured.captured_queries]
    return elapsed, times


def measure_admin(samples: int, every_page: bool) -> dict[str, Any]:
    settings.ALLOWED_HOSTS = ["testserver"]
    user = User.objects.filter(username="bench").first() or User.objects.create_superuser(
        "bench", "bench@example.com", uuid.uuid4().hex
    )
    client = Client()
    client.force_login(user)
    [(sid,)] = execute(
        "SELECT id FROM scheduler_app_schedule WHERE name = %s", [name_of(BURST + 1)]
    )
    pages = {}
    for name, url in PAGES.items():
        if name == SLOW_PAGE and not every_page:
            continue
        url = url.format(sid=sid)
        timed(client, url)  # warm caches
        runs = [page_load(client, url) for _ in range(samples)]
        pages[name] = {
            **summary([elapsed for elapsed, _ in runs]),
            "queries": len(runs[0][1]),
            "sql_ms": round(statistics.median(sum(sql) for _, sql in runs) * 1000, 1),
            "slowest_sql_ms": round(max(runs[0][1]) * 1000, 1),
        }
        print(
            f"admin {name}: {pages[name]['median_ms']:.0f} ms, of which SQL "
            f"{pages[name]['sql_ms']:.0f} ms (load {pages[name]['load']})"
        )
    return pages


def next_slot() -> datetime:
    """The schedules' next common slot at least a minute ahead: they were made with one at
    the minute of the first ``--generate`` (daily crons and rrules, hourly intervals)."""
    [(due,)] = execute(f"SELECT due FROM {META}")
    days = (datetime.now(UTC) + timedelta(minutes=1) - due) // DAY + 1
    return due + days * DAY


def measure(samples: int, ticks: int, only: str, every_page: bool) -> dict[str, Any]:
    at = next_slot()
    out: dict[str, Any] = {"measured_at": datetime.now(UTC).isoformat(), "load_start": load()}
    out.update(measure_sizes())
    if "idle" in only:
        out["idle_tick"] = measure_idle(at, ticks)
    if "burst" in only:
        out["burst"] = measure_burst(at, samples)
    if "monitor" in only:
        out["monitor"] = measure_monitor(samples)
    if "admin" in only:
        out["admin"] = measure_admin(samples, every_page)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--generate", type=int, metavar="N", help="fill the ledger up to N rows")
    parser.add_argument("--schedules", type=int, default=10_000)
    parser.add_argument(
        "--fresh", action="store_true", help="with --generate: start over from an empty ledger"
    )
    parser.add_argument("--measure", action="store_true", help="measure the ledger there is")
    parser.add_argument("--samples", type=int, default=5, help="bursts, monitor passes, pages")
    parser.add_argument("--ticks", type=int, default=200, help="idle ticks sampled")
    parser.add_argument("--only", default="idle,burst,monitor,admin")
    parser.add_argument("--label", default="", help="kept beside the size in the JSON's key")
    parser.add_argument(
        "--every-page",
        action="store_true",
        help=f"also the admin's {SLOW_PAGE!r} (seconds per load already at 25,000 rows)",
    )
    options = parser.parse_args()
    logging.disable(logging.WARNING)  # the monitor's and the beat's own reports
    if connection.vendor != "postgresql":
        raise SystemExit("PostgreSQL only: set DATABASE_URL to a scratch database")
    if "test" in str(settings.DATABASES["default"]["NAME"]):
        raise SystemExit("refusing a test database: point DATABASE_URL at a scratch one")
    results = json.loads(RESULTS.read_text(encoding="utf-8")) if RESULTS.exists() else {}
    if options.generate:
        generated = generate(options.generate, options.schedules, options.fresh)
        if generated:
            results.setdefault("generation", {})[str(options.generate)] = generated
            RESULTS.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    if options.measure:
        known = meta()
        if known is None:
            raise SystemExit("nothing generated yet: run with --generate N first")
        figures = measure(options.samples, options.ticks, options.only, options.every_page)
        sizes = results.setdefault("sizes", {})
        key = f"{known[0]} {options.label}".strip()
        sizes[key] = {**sizes.get(key, {}), **figures}
        RESULTS.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
