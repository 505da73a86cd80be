"""The ledger of ``bench/ledger_size.py``: filling it up to a size in SQL (``--generate``), its
sizes on disk, and the SQL helpers the measurement uses too.

Imported by ``bench/ledger_size.py`` once Django is set up (``bench.settings``); the rows and
what the first ``--generate`` truncates are described there.
"""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import connection

from bench.scale.env import due_instant
from bench.scale.workload import create_schedules
from scheduler_app.partitions.maintain import create_ahead
from scheduler_app.partitions.ranges import Interval

TABLE = "scheduler_app_occurrence"
ATTEMPTS = "scheduler_app_occurrenceattempt"
META = "bench_ledger_size"
MONTHS = 25
MONTH = timedelta(days=30)


def execute(sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params or [])
        return list(cursor.fetchall()) if cursor.description else []


def load() -> float:
    return round(os.getloadavg()[0], 2)


# --- generation -------------------------------------------------------------------------------


def meta() -> tuple[int, datetime, int] | None:
    """(rows generated, start of the first month, schedules), or None: nothing generated."""
    if not execute("SELECT to_regclass(%s)", [META])[0][0]:
        return None
    rows = execute(f"SELECT total, first, schedules FROM {META}")
    return (int(rows[0][0]), rows[0][1], int(rows[0][2])) if rows else None


def start_over(schedules: int) -> tuple[int, datetime, int]:
    """Truncate the scheduler tables, make the schedules and the partitions."""
    now = datetime.now(UTC)
    execute(f"DROP TABLE IF EXISTS {META}")
    execute(f"TRUNCATE {ATTEMPTS}, {TABLE}")
    due = due_instant()
    made = create_schedules(schedules, due, dcb=False)
    print(f"{schedules:,} schedules in {made['seconds']:.1f} s")
    # The monitor reads the ledger for schedules that expect a success every so often.
    execute(
        "UPDATE scheduler_app_schedule SET expected_every = 86400 "
        "WHERE (substr(name, length(name) - 7))::int %% 10 = 5"
    )
    first = (now - timedelta(hours=1)) - MONTHS * MONTH
    report = create_ahead(first, count=MONTHS + 3, interval=Interval.MONTH)
    print(f"partitions created: {len(report.created)}")
    execute(
        f"CREATE TABLE {META} (total bigint, first timestamptz, schedules int, due timestamptz)"
    )
    execute(f"INSERT INTO {META} VALUES (0, %s, %s, %s)", [first, schedules, due])
    execute("DROP TABLE IF EXISTS bench_ledger_ids")
    execute(
        "CREATE TABLE bench_ledger_ids AS SELECT id AS sid, "
        "(SELECT v.id FROM scheduler_app_scheduleversion v WHERE v.schedule_id = s.id "
        "ORDER BY version DESC LIMIT 1) AS vid, row_number() OVER (ORDER BY name) - 1 AS s "
        "FROM scheduler_app_schedule s"
    )
    execute("CREATE UNIQUE INDEX ON bench_ledger_ids (s)")
    return 0, first, schedules


def per_month(total: int, month: int) -> int:
    """How many of ``total`` rows month ``month`` holds."""
    return total // MONTHS + (1 if month < total % MONTHS else 0)


# Row j of month c: schedule s = j % S, its t-th row of the month (t = j / S) at a point of a
# Weyl sequence over the month (distinct for every t, evenly spread for any count), plus s % 600
# seconds; so (schedule, slot) stays unique however many rows are added later.
INSERT = f"""
WITH made AS (
    INSERT INTO {TABLE} (id, schedule_id, schedule_version_id, trigger, scheduled_for,
        window_start, window_end, timezone, idempotency_key, task, args, kwargs, target,
        handoff_id, not_before, state, reason, last_error, attempts, publish_count,
        lease_owner, lease_expires_at, fencing_token, created_at, dispatched_at, started_at,
        finished_at, received_by, requested_by, note)
    SELECT gen_random_uuid(), ids.sid, ids.vid,
        CASE WHEN h >= 990 AND h < 995 THEN 'manual' ELSE 'scheduled' END,
        slot, slot, slot, 'UTC',
        ids.sid || ':' || to_char(slot AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US'),
        'bench.noop', '[]', jsonb_build_object('n', ids.s), 'celery', '', slot, state,
        CASE WHEN state = 'skipped' THEN 'overlap' WHEN state = 'expired' THEN 'deadline'
             ELSE '' END,
        CASE WHEN state = 'failed' THEN 'RuntimeError: bench failure' ELSE '' END,
        CASE WHEN state IN ('succeeded', 'failed', 'running') THEN 1 ELSE 0 END,
        CASE WHEN state IN ('succeeded', 'failed', 'running') THEN 1 ELSE 0 END,
        CASE WHEN state = 'running' THEN 'bench-worker' ELSE '' END,
        CASE WHEN state = 'running' THEN slot + interval '365 days' END,
        CASE WHEN state = 'running' THEN 1 ELSE 0 END,
        slot, slot + interval '300 milliseconds',
        CASE WHEN state IN ('succeeded', 'failed', 'running')
             THEN slot + interval '2 seconds' END,
        CASE WHEN state = 'running' THEN NULL ELSE slot + interval '5 seconds' END,
        '', '', ''
    FROM (
        SELECT j, j %% %(schedules)s AS s, (j * 7919 + %(month)s) %% 1000 AS h,
            %(start)s::timestamptz
                + ((((j / %(schedules)s) * 648055) %% 1048576)::float8 / 1048576)
                  * interval '29 days 16 hours'
                + (j %% %(schedules)s %% 600) * interval '1 second' AS slot,
            CASE
                WHEN %(last)s AND j < %(schedules)s AND j %% %(schedules)s >= %(schedules)s - 10
                    THEN 'running'
                WHEN (j * 7919 + %(month)s) %% 1000 < 20 THEN 'failed'
                WHEN (j * 7919 + %(month)s) %% 1000 < 30 THEN 'skipped'
                WHEN (j * 7919 + %(month)s) %% 1000 < 33 THEN 'cancelled'
                WHEN (j * 7919 + %(month)s) %% 1000 < 35 THEN 'expired'
                ELSE 'succeeded'
            END AS state
        FROM generate_series(%(low)s::bigint, %(high)s::bigint - 1) AS j
    ) AS g
    JOIN bench_ledger_ids ids ON ids.s = g.s
    RETURNING id, scheduled_for, state, started_at, finished_at
)
INSERT INTO {ATTEMPTS} (occurrence_id, scheduled_for, kind, number, worker, started_at,
    finished_at, outcome, error, "by", note)
SELECT id, scheduled_for, 'run', 1, 'bench-worker', started_at, finished_at,
    CASE WHEN state = 'running' THEN '' ELSE state END,
    CASE WHEN state = 'failed' THEN 'RuntimeError: bench failure' ELSE '' END, '', ''
FROM made WHERE state IN ('succeeded', 'failed', 'running')
"""


FOLLOW = f"""
WITH m AS (
    SELECT schedule_id, max(finished_at) FILTER (WHERE state = 'succeeded') AS success,
        max(scheduled_for) FILTER (WHERE trigger IN ('scheduled', 'catch_up')) AS slot,
        min(scheduled_for) AS first
    FROM {TABLE} GROUP BY schedule_id
), runtime AS (
    UPDATE scheduler_app_schedule_runtime r SET last_scheduled_for = m.slot
    FROM m WHERE r.id = m.schedule_id
)
UPDATE scheduler_app_schedule s SET last_success_at = m.success,
    created_at = LEAST(s.created_at, m.first)
FROM m WHERE s.id = m.schedule_id
"""
"""The schedule rows as the beat and the workers would have left them after these rows: the
latest success (migration 0015 fills an existing install's so), the last slot handled, and
created no later than their first occurrence."""


def generate(total: int, schedules: int, fresh: bool) -> dict[str, Any]:
    """Add rows until the ledger holds ``total`` (``fresh``: from an empty ledger); the elapsed
    time and the sizes."""
    began = time.perf_counter()
    known = meta()
    if fresh or known is None or known[2] != schedules:
        known = start_over(schedules)
    done, first, _ = known
    if total <= done:
        print(f"the ledger already holds {done:,} generated rows")
        return {}
    for month in range(MONTHS):
        low, high = per_month(done, month), per_month(total, month)
        started = time.perf_counter()
        params = {
            "schedules": schedules,
            "month": month,
            "start": first + month * MONTH,
            "last": month == MONTHS - 1,
            "low": low,
            "high": high,
        }
        execute(INSERT, params)  # type: ignore[arg-type]  # psycopg takes a mapping too
        elapsed = time.perf_counter() - started
        print(f"month {month + 1}/{MONTHS}: {high - low:,} rows in {elapsed:.1f} s (load {load()})")
    execute(f"UPDATE {META} SET total = %s", [total])
    execute(FOLLOW)
    inserted = time.perf_counter() - began
    execute(f"VACUUM ANALYZE {TABLE}")
    execute(f"VACUUM ANALYZE {ATTEMPTS}")
    seconds = time.perf_counter() - began
    sizes = measure_sizes()
    print(
        f"generated {total - done:,} rows in {seconds:.0f} s (insert {inserted:.0f} s); "
        f"database {sizes['database_bytes'] / 1e9:.2f} GB, "
        f"{sizes['bytes_per_occurrence']:.0f} bytes per occurrence"
    )
    return {"added": total - done, "seconds": round(seconds, 1), "load": load(), **sizes}


def measure_sizes() -> dict[str, Any]:
    [(occurrences, attempts, database, ledger, attempt_bytes)] = execute(
        f"SELECT (SELECT count(*) FROM {TABLE}), (SELECT count(*) FROM {ATTEMPTS}), "
        "pg_database_size(current_database()), "
        "(SELECT sum(pg_total_relation_size(inhrelid)) FROM pg_inherits "
        f"WHERE inhparent = '{TABLE}'::regclass), "
        "(SELECT sum(pg_total_relation_size(inhrelid)) FROM pg_inherits "
        f"WHERE inhparent = '{ATTEMPTS}'::regclass)"
    )
    return {
        "occurrences": occurrences,
        "attempts": attempts,
        "database_bytes": database,
        "ledger_bytes": int(ledger),
        "attempt_bytes": int(attempt_bytes or 0),
        "bytes_per_occurrence": round(database / max(occurrences, 1), 1),
        "partitions": execute(
            f"SELECT count(*) FROM pg_inherits WHERE inhparent = '{TABLE}'::regclass"
        )[0][0],
    }
