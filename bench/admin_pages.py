"""How fast the admin's schedule list, occurrence list and monitoring page are on a big database.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/<scratch db> \\
        .venv/bin/python bench/admin_pages.py --schedules 100000 --occurrences 10000000

Fills the (scratch!) database with schedules and occurrences spread over the last 30 days
(PostgreSQL only: the rows are generated in SQL), then times each page through Django's test
client as a superuser: the median of 5 loads and the number of queries. It truncates the
scheduler tables first: never point it at a database you care about.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")

import django

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth.models import User  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

PAGES = {
    "schedule list": "/admin/scheduler_app/schedule/",
    "schedule list, filtered (last outcome failed)": "/admin/scheduler_app/schedule/?last=failed",
    "occurrence list": "/admin/scheduler_app/occurrence/",
    "occurrence list, one schedule": "/admin/scheduler_app/occurrence/?schedule__id__exact={sid}",
    "monitoring": "/admin/scheduler_app/schedule/monitoring/",
}


def fill(schedules: int, occurrences: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "TRUNCATE scheduler_app_occurrenceattempt, scheduler_app_occurrence, "
            "scheduler_app_scheduleversion, scheduler_app_schedule, "
            "scheduler_app_schedule_runtime CASCADE"
        )
        # A schedule is a row of its runtime table and one of the definition table (one id,
        # derived from g in both statements).
        cursor.execute(
            """
            INSERT INTO scheduler_app_schedule_runtime (
                id, status, interval_mode, next_run_at, missed_count, skipped_count,
                caught_up_count, occurrence_count, last_error, updated_at)
            SELECT md5('schedule ' || g)::uuid, 'active', 'fixed_rate',
                date_trunc('hour', now()) + interval '1 hour' + (g %% 60) * interval '1 minute',
                0, 0, 0, 0, '', now()
            FROM generate_series(1, %s) AS g
            """,
            [schedules],
        )
        cursor.execute(
            """
            INSERT INTO scheduler_app_schedule (
                id, key, name, tenant, task, kwargs, objective, kind, rule, dialect, timezone,
                dst_nonexistent, dst_ambiguous, misfire_policy, max_lateness, catch_up_window,
                catch_up_limit, overlap_policy, on_pause, active_window, window_policy,
                max_attempts, retry_delay, cancel_grace, jitter, mode,
                origin, version, pause_note, paused_by, code_location, job_type,
                payload_ref, options, lateness_class, approved_by, consecutive_failures,
                archive_on_completion, health, health_reason, created_at)
            SELECT md5('schedule ' || g)::uuid, NULL, 'schedule ' || g, 't' || (g %% 50),
                'demo.ping', '{}', '', 'cron', (g %% 60) || ' * * * *', 'vixie', 'Europe/Riga',
                'auto', 'auto', 'catch_up', 60, 86400, 12, 'skip', 'keep', '', 'defer',
                3, 10, 60, 0, 'live', 'api', 1,
                '', '', '', '', '', '{}', '', '', 0, false, 'ok', '',
                now()
            FROM generate_series(1, %s) AS g
            """,
            [schedules],
        )
        cursor.execute(
            """
            INSERT INTO scheduler_app_scheduleversion (id, schedule_id, version, definition,
                created_at)
            SELECT gen_random_uuid(), id, 1, '{}', now() FROM scheduler_app_schedule
            """
        )
        cursor.execute(
            """
            CREATE TEMP TABLE numbered AS
            SELECT s.id AS sid, v.id AS vid, row_number() OVER () - 1 AS n
            FROM scheduler_app_schedule s JOIN scheduler_app_scheduleversion v
              ON v.schedule_id = s.id
            """
        )
        cursor.execute("CREATE INDEX ON numbered (n)")
        cursor.execute(
            """
            INSERT INTO scheduler_app_occurrence (
                id, trigger, scheduled_for, window_start, window_end, timezone, idempotency_key,
                task, kwargs, not_before, state, reason, last_error, attempts, publish_count,
                lease_owner, fencing_token, created_at, dispatched_at, started_at, finished_at,
                schedule_id, schedule_version_id, note, received_by, requested_by)
            SELECT gen_random_uuid(), 'manual', slot, slot, slot, 'Europe/Riga',
                numbered.sid || ':' || g, 'demo.ping', '{}', slot,
                CASE WHEN g %% 50 = 0 THEN 'failed' WHEN g %% 23 = 0 THEN 'skipped'
                     ELSE 'succeeded' END,
                CASE WHEN g %% 23 = 0 THEN 'overlap' ELSE '' END, '', 1, 1, '', 0, slot,
                slot + interval '300 milliseconds', slot + interval '2 seconds',
                slot + interval '5 seconds', numbered.sid, numbered.vid, '', '', ''
            FROM (
                SELECT g, now() - (g::float8 / %s) * interval '30 days' AS slot
                FROM generate_series(1, %s) AS g
            ) AS rows
            JOIN numbered ON numbered.n = rows.g %% %s
            """,
            [occurrences, occurrences, schedules],
        )
        cursor.execute("ANALYZE")


def timed(client: Client, url: str) -> tuple[float, int]:
    with CaptureQueriesContext(connection) as captured:
        started = time.perf_counter()
        response = client.get(url)
        elapsed = time.perf_counter() - started
    if response.status_code != 200:
        raise SystemExit(f"{url}: HTTP {response.status_code}")
    return elapsed, len(captured)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schedules", type=int, default=100_000)
    parser.add_argument("--occurrences", type=int, default=10_000_000)
    parser.add_argument("--skip-fill", action="store_true", help="reuse the rows already there")
    options = parser.parse_args()
    if connection.vendor != "postgresql":
        raise SystemExit("PostgreSQL only: set DATABASE_URL to a scratch database")
    settings.ALLOWED_HOSTS = ["testserver"]
    settings.SCHEDULER_ALLOWED_TASKS = ("demo.*",)
    if not options.skip_fill:
        started = time.perf_counter()
        fill(options.schedules, options.occurrences)
        print(f"filled in {time.perf_counter() - started:.0f} s")
    user = User.objects.filter(username="bench").first() or User.objects.create_superuser(
        "bench", "bench@example.com", uuid.uuid4().hex
    )
    client = Client()
    client.force_login(user)
    with connection.cursor() as cursor:
        cursor.execute("SELECT id FROM scheduler_app_schedule LIMIT 1")
        sid = cursor.fetchone()[0]
        cursor.execute("SELECT count(*) FROM scheduler_app_occurrence")
        total = cursor.fetchone()[0]
        cursor.execute("SELECT count(*) FROM scheduler_app_schedule")
        count = cursor.fetchone()[0]
    print(f"{count:,} schedules, {total:,} occurrences")
    print("| page | median of 5 | queries |")
    print("|---|---|---|")
    for name, url in PAGES.items():
        url = url.format(sid=sid)
        timed(client, url)  # warm caches
        runs = [timed(client, url) for _ in range(5)]
        median = statistics.median(elapsed for elapsed, _ in runs)
        print(f"| {name} | {median * 1000:.0f} ms | {runs[0][1]} |")


if __name__ == "__main__":
    main()
