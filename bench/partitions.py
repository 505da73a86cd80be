"""What partitioning the ledger costs and buys (PostgreSQL, migrations 0014 and 0016).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/<scratch db> \\
        .venv/bin/python bench/partitions.py --rows 1000000

1. Migration time: the ledger at 0013 filled with ``--rows`` finished occurrences spread over
   ``--months`` months (generated in SQL, one attempt each), then ``migrate`` to 0014, timed,
   and from 0015 to 0016 (the attempts partitioned alike), timed.
2. Lookups at that many partitions: one row by ``id`` alone (every partition's index probed)
   against ``(id, scheduled_for)`` (pruned to one partition): the median of ``--lookups``.
3. Removing a month: ``--rows`` finished occurrences (with one attempt each) in one month,
   removed by retention dropping the partition (and the attempts' partition of that month),
   then the same rows again removed by the
   batched delete (1,000 rows per transaction), for at most ``--delete-budget`` seconds
   (extrapolated to all rows when it runs out).

It truncates the scheduler tables and migrates the scheduler app back and forth: never point
it at a database you care about. Writes ``bench/results/partitions.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")

import django

django.setup()

from django.db import connection, transaction  # noqa: E402
from django.db.migrations.executor import MigrationExecutor  # noqa: E402

from scheduler_app.clock import FakeClock  # noqa: E402
from scheduler_app.models import FINAL_STATES  # noqa: E402
from scheduler_app.monitoring.retention import prune  # noqa: E402
from scheduler_app.partitions import ddl, retire  # noqa: E402
from scheduler_app.partitions.drop import droppable  # noqa: E402
from scheduler_app.partitions.maintain import create_ahead  # noqa: E402
from scheduler_app.partitions.ranges import Interval, floor, following  # noqa: E402
from scheduler_app.services import create_schedule  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "partitions.json"
SCHEDULES = 1000
BEFORE = ("scheduler_app", "0013_ledger_indexes")
AFTER = ("scheduler_app", "0014_partition_ledger")
BEFORE_ATTEMPTS = ("scheduler_app", "0015_schedule_last_success")
LATEST = ("scheduler_app", "0016_partition_attempts")
TABLE = "scheduler_app_occurrence"


def migrate(target: tuple[str, str]) -> float:
    executor = MigrationExecutor(connection)
    started = time.perf_counter()
    executor.migrate([target])
    return time.perf_counter() - started


def execute(sql: str, params: list[object] | None = None) -> list[tuple[object, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params or [])
        return list(cursor.fetchall()) if cursor.description else []


def copies(table: str, changed: dict[str, str], alias: str = "") -> str:
    """The column list of ``table`` and a SELECT list that copies a row but ``changed``."""
    names = [
        name
        for (name,) in execute(
            "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 "
            "AND NOT attisdropped ORDER BY attnum",
            [table],
        )
        if isinstance(name, str)
    ]
    prefix = f"{alias}." if alias else ""
    values = ", ".join(changed.get(name, f'{prefix}"{name}"') for name in names)
    return f"({', '.join(f'{chr(34)}{n}{chr(34)}' for n in names)}) SELECT {values}"


def seed_schedules(now: datetime) -> None:
    """``SCHEDULES`` schedules (copies of one made by the services), one version each, and
    the temporary table ``numbered`` (n -> schedule, version) the row generator joins."""
    execute(
        "TRUNCATE scheduler_app_schedule, scheduler_app_schedule_runtime, "
        "scheduler_app_scheduleversion CASCADE"
    )
    template = create_schedule(clock=FakeClock(now), task="demo.ping", kind="interval", rule="1h")
    # Each copy is a row of the runtime table and one of the definition table, with one id.
    copy_id = "md5('copy ' || g)::uuid"
    for table, changed in (
        ("scheduler_app_schedule_runtime", {"id": copy_id}),
        ("scheduler_app_schedule", {"id": copy_id, "key": "NULL"}),
    ):
        execute(
            f"INSERT INTO {table} "
            + copies(table, changed)
            + f" FROM {table}, generate_series(2, %s) AS g WHERE id = %s",
            [SCHEDULES, template.pk],
        )
    execute(
        "INSERT INTO scheduler_app_scheduleversion "
        + copies(
            "scheduler_app_scheduleversion",
            {"id": "gen_random_uuid()", "schedule_id": "s.id"},
            alias="v",
        )
        + " FROM scheduler_app_scheduleversion v, scheduler_app_schedule s "
        "WHERE v.schedule_id = %s AND s.id <> %s",
        [template.pk, template.pk],
    )
    execute("DROP TABLE IF EXISTS numbered")
    execute(
        "CREATE TEMP TABLE numbered AS SELECT s.id AS sid, v.id AS vid, "
        "row_number() OVER () - 1 AS n FROM scheduler_app_schedule s "
        "JOIN scheduler_app_scheduleversion v ON v.schedule_id = s.id"
    )


def add_rows(rows: int, first: datetime, last: datetime, *, attempts: bool = False) -> None:
    """``rows`` succeeded occurrences with slots evenly from ``first`` to ``last``, spread
    over the schedules of ``seed_schedules``."""
    execute(
        f"""
        INSERT INTO {TABLE} (id, schedule_id, schedule_version_id, trigger, scheduled_for,
            window_start, window_end, timezone, idempotency_key, task, args, kwargs, target,
            handoff_id, not_before, state, reason, last_error, attempts, publish_count,
            lease_owner, fencing_token, created_at, dispatched_at, started_at, finished_at,
            received_by, requested_by, note)
        SELECT gen_random_uuid(), numbered.sid, numbered.vid, 'scheduled', slot, slot, slot,
            'UTC', numbered.sid || ':' || to_char(slot, 'YYYY-MM-DD"T"HH24:MI:SS.US'),
            'demo.ping', '[]', '{{}}', 'celery', '', slot, 'succeeded', '', '', 1, 1, '', 0,
            slot, slot, slot, slot + interval '5 seconds', '', '', ''
        FROM (
            SELECT g, %s::timestamptz + (g::float8 / %s) * (%s::timestamptz - %s::timestamptz)
                AS slot
            FROM generate_series(0, %s - 1) AS g
        ) AS rows
        JOIN numbered ON numbered.n = rows.g %% {SCHEDULES}
        """,
        [first, rows, last, first, rows],
    )
    if attempts:
        slot, of_slot = (", scheduled_for", ", scheduled_for") if attempt_slots() else ("", "")
        execute(
            f"INSERT INTO scheduler_app_occurrenceattempt (occurrence_id{slot}, kind, number, "
            'worker, started_at, finished_at, outcome, error, "by", note) '
            f"SELECT id{of_slot}, 'run', 1, 'w', scheduled_for, finished_at, 'succeeded', '', "
            f"'', '' FROM {TABLE} WHERE scheduled_for < %s",
            [last],
        )
    execute("ANALYZE")


def attempt_slots() -> bool:
    """Whether the attempts have their occurrence's slot (migration 0016)."""
    return bool(
        execute(
            "SELECT 1 FROM pg_attribute WHERE attrelid = 'scheduler_app_occurrenceattempt'"
            "::regclass AND attname = 'scheduled_for' AND NOT attisdropped"
        )
    )


def start_over() -> None:
    execute("TRUNCATE scheduler_app_occurrenceattempt, scheduler_app_occurrence")


def measure_migration(rows: int, months: int, now: datetime) -> dict[str, float]:
    migrate(LATEST)
    seed_schedules(now)  # made by today's services, so at the latest schema
    migrate(BEFORE)
    this_month = floor(now, Interval.MONTH)
    first = this_month - timedelta(days=31 * (months - 1))
    add_rows(rows, first, now, attempts=True)
    seconds = migrate(AFTER)
    count = len(ddl.partitions())
    print(f"migration 0014: {seconds:.1f} s for {rows:,} rows ({count} partitions)")
    migrate(BEFORE_ATTEMPTS)
    [(attempts,)] = execute("SELECT count(*) FROM scheduler_app_occurrenceattempt")
    attempts_seconds = migrate(LATEST)
    print(f"migration 0016: {attempts_seconds:.1f} s for {attempts:,} attempts")
    return {
        "rows": rows,
        "seconds": seconds,
        "per_million": seconds * 1e6 / rows,
        "partitions": count,
        "attempts": attempts,
        "attempts_seconds": attempts_seconds,
    }


def measure_lookups(lookups: int) -> dict[str, float]:
    sample = execute(f"SELECT id, scheduled_for FROM {TABLE} ORDER BY random() LIMIT %s", [lookups])
    by_id, by_both = [], []
    with connection.cursor() as cursor:
        for pk, slot in sample:
            started = time.perf_counter()
            cursor.execute(f"SELECT state FROM {TABLE} WHERE id = %s", [pk])
            cursor.fetchall()
            by_id.append(time.perf_counter() - started)
            started = time.perf_counter()
            cursor.execute(
                f"SELECT state FROM {TABLE} WHERE id = %s AND scheduled_for = %s", [pk, slot]
            )
            cursor.fetchall()
            by_both.append(time.perf_counter() - started)
    result = {
        "partitions": len(ddl.partitions()),
        "by_id_ms": statistics.median(by_id) * 1000,
        "by_id_and_slot_ms": statistics.median(by_both) * 1000,
    }
    print(
        f"lookup at {result['partitions']} partitions: by id {result['by_id_ms']:.3f} ms, "
        f"by (id, scheduled_for) {result['by_id_and_slot_ms']:.3f} ms (median of {lookups})"
    )
    return result


def old_month(rows: int, now: datetime, other_attempts: int = 0) -> tuple[datetime, datetime]:
    """A month two years back filled with ``rows`` finished rows and attempts; each schedule
    also has a later row, so that retention may remove every row of that month. Then
    ``other_attempts`` attempts of later months (of occurrences not made: the attempts
    table has no foreign key), as the attempts table holds in a retention window."""
    start_over()
    month = floor(now - timedelta(days=730), Interval.MONTH)
    end = following(month, Interval.MONTH)
    create_ahead(month, count=1, interval=Interval.MONTH)
    add_rows(rows, month, end - timedelta(seconds=10), attempts=True)
    add_rows(SCHEDULES, end, end + timedelta(days=1))
    if other_attempts:
        execute(
            "INSERT INTO scheduler_app_occurrenceattempt (occurrence_id, scheduled_for, kind, "
            'number, worker, started_at, finished_at, outcome, error, "by", note) '
            "SELECT gen_random_uuid(), slot, 'run', 1, 'w', slot, slot, 'succeeded', '', '', '' "
            "FROM (SELECT %s::timestamptz + g * interval '1 second' AS slot "
            "FROM generate_series(1, %s) AS g) AS later",
            [end, other_attempts],
        )
        execute("ANALYZE scheduler_app_occurrenceattempt")
    return month, end


def measure_removal(
    rows: int, now: datetime, budget: float, other_attempts: int = 0
) -> dict[str, float]:
    migrate(LATEST)
    for name in retire.retired_tables():  # left by an interrupted run
        retire.finish_retired(name)
    seed_schedules(now)
    _, end = old_month(rows, now, other_attempts)
    # The steps apart: the trigger set (``watch``), the keepers found (the ledger not
    # locked), the ledger locked (changes looked up, keepers copied, the partition and its
    # attempts' partition detached, until the commit), then the tables dropped.
    [partition] = droppable(end)
    marks: dict[str, float] = {}
    find_keepers = retire.find_keepers

    def timed_find(
        cursor: Any, partition: ddl.Partition, final_states: Sequence[str], cutoff: datetime
    ) -> None:
        marks["found"] = time.perf_counter()
        find_keepers(cursor, partition, final_states, cutoff)
        marks["locking"] = time.perf_counter()

    retire.find_keepers = timed_find
    started = time.perf_counter()
    with transaction.atomic():
        retire.watch(partition)
    with transaction.atomic():
        kept = retire.retire(partition, list(FINAL_STATES), end)
    committed = time.perf_counter()
    retire.find_keepers = find_keepers
    gone, attempts = retire.finish_retired(retire.retired_name(partition))
    dropped = time.perf_counter() - started
    locked = committed - marks["locking"]
    finding = marks["locking"] - marks["found"]
    finishing = time.perf_counter() - committed
    print(f"partition drop: keepers found in {finding:.2f} s (ledger not locked), {kept} kept")
    print(f"partition drop: ledger locked {locked * 1000:.0f} ms")
    print(f"partition drop: {gone:,} rows and {attempts:,} attempts in {dropped:.2f} s")
    print(f"partition drop: retired tables dropped in {finishing:.2f} s")
    _, end = old_month(rows, now)
    deleted, started = 0, time.perf_counter()
    while time.perf_counter() - started < budget:
        report_batch = prune(
            timedelta(hours=1), end + timedelta(hours=1), max_rows=10_000, by_partition=False
        )
        deleted += report_batch.deleted
        if not report_batch.more:
            break
    batched = time.perf_counter() - started
    per_second = deleted / batched if batched else 0.0
    estimate = rows / per_second if per_second else float("inf")
    how = "" if deleted >= rows else ", extrapolated"
    print(
        f"batched delete: {deleted:,} rows in {batched:.1f} s ({per_second:,.0f} rows/s; "
        f"all {rows:,}: {estimate:.0f} s{how})"
    )
    return {
        "rows": rows,
        "drop_locked_seconds": locked,
        "drop_seconds": dropped,
        "drop_finding_seconds": finding,
        "drop_attempts_seconds": finishing,
        "other_attempts": other_attempts,
        "batched_rows": deleted,
        "batched_seconds": batched,
        "batched_rows_per_second": per_second,
        "batched_all_seconds": estimate,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--months", type=int, default=20)
    parser.add_argument("--lookups", type=int, default=2000)
    parser.add_argument("--delete-budget", type=float, default=120.0)
    parser.add_argument(
        "--other-attempts",
        type=int,
        default=0,
        help="attempts of later months in the attempts table besides the month's own",
    )
    parser.add_argument(
        "--only",
        default="migration,removal",
        help="migration (with the lookups) and/or removal; the other figures are kept",
    )
    options = parser.parse_args()
    if connection.vendor != "postgresql":
        raise SystemExit("PostgreSQL only: set DATABASE_URL to a scratch database")
    now = datetime.now(UTC)
    results = json.loads(RESULTS.read_text(encoding="utf-8")) if RESULTS.exists() else {}
    if "migration" in options.only:
        results["migration"] = measure_migration(options.rows, options.months, now)
        results["lookups"] = measure_lookups(options.lookups)
    if "removal" in options.only:
        results["removal"] = measure_removal(
            options.rows, now, options.delete_budget, options.other_attempts
        )
    RESULTS.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
