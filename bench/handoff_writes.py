"""What PostgreSQL writes to create and hand off 1,000 occurrences: today's ledger row, and the
narrow outbox the hot-path issue asks for, measured side by side (``make bench-handoff``).

    DJANGO_SETTINGS_MODULE=bench.settings DATABASE_URL=... \\
        python -m bench.handoff_writes [--size 1000] [--rounds 15]

Each design gets its own copy of the ledger table (``LIKE ... INCLUDING ALL``: every column,
index and check; its foreign keys to the schedule and its version added back), rows generated
in SQL so that only the database's work differs:

- ``today``: the row is inserted ``pending``; the hand-off sets ``state = dispatched`` (and
  ``dispatched_at``, ``emitted_at``, the publish count and lease), as ``mark_dispatched``
  does. ``state`` is in the partial indexes' predicates, so the update is never HOT.
- ``outbox``: the row is inserted ``pending`` with a narrow outbox row beside it (one
  statement); the hand-off deletes the outbox row and sets only columns no index holds
  (``dispatched_at``, ``emitted_at``, the publish count) in one statement, the
  ``dispatched_at`` index dropped (``pending`` then means "not started"; a published row is
  one with ``dispatched_at`` set). HOT is possible where the page has room.
- ``outbox, fillfactor 85`` and ``50``: the same with 15% or half of every ledger page left
  free, room for the hand-off's new row versions on their pages (a table that much larger).
- ``outbox, ledger untouched``: the hand-off only deletes the outbox rows (the ledger row is
  written once; when it was published would have to live elsewhere).

- ``until 0018: with the key's unique index``: today's, with the unique index on
  ``(idempotency_key, scheduled_for)`` that migration 0018 dropped (the id is derived from
  the key).

The beat's advance (``save_advanced``) on copies too: ``the schedule row`` (until migration 0019:
definition and runtime in one row) against ``a narrow runtime row`` (``ScheduleRuntime`` since
0019). ``next_run_at`` is indexed in both, so neither update can be HOT.

Per round, designs interleaved: the time of the insert and of the hand-off statements, the
write-ahead log they made (``pg_current_wal_insert_lsn``) and the updates that were HOT
(``pg_stat_xact_user_tables``, read in the round's transaction). Writes
``bench/results/handoff_writes.json`` and its section of docs/performance.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from bench import report

NAME = "handoff_writes"
HEADING = "Hand-off writes (`make bench-handoff`)"
LEDGER = "scheduler_app_occurrence"
DESIGNS: dict[str, dict[str, Any]] = {
    "today": {"table": "bench_hw_today", "handoff": "state", "fillfactor": 100},
    "until 0018: with the key's unique index": {
        "table": "bench_hw_key",
        "handoff": "state",
        "fillfactor": 100,
        "add": "CREATE UNIQUE INDEX ON {table} (idempotency_key, scheduled_for)",
    },
    "outbox": {"table": "bench_hw_outbox", "handoff": "columns", "fillfactor": 100},
    "outbox, fillfactor 85": {"table": "bench_hw_ff85", "handoff": "columns", "fillfactor": 85},
    "outbox, fillfactor 50": {"table": "bench_hw_ff50", "handoff": "columns", "fillfactor": 50},
    "outbox, ledger untouched": {"table": "bench_hw_once", "handoff": "delete", "fillfactor": 100},
}
"""How each design hands off: ``state`` (today's update), ``columns`` (the outbox row deleted
and the unindexed columns set), ``delete`` (the outbox row deleted, the ledger row untouched:
written once)."""
COLUMNS = (
    "id, trigger, scheduled_for, window_start, window_end, timezone, idempotency_key, task, "
    "kwargs, not_before, state, reason, last_error, attempts, publish_count, lease_owner, "
    "fencing_token, created_at, schedule_id, schedule_version_id, note, received_by, "
    "requested_by, args, handoff_id, target"
)
ROWS = """SELECT gen_random_uuid(), 'scheduled', s, s, s, 'Europe/Riga',
    %(schedule)s || ':' || to_char(s AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
    'bench.noop', '{"report": "daily", "format": "pdf", "n": 1}'::jsonb, s, 'pending', '', '',
    0, 0, '', 0, now(), %(schedule)s::uuid, %(version)s::uuid, '', '', '', '[]'::jsonb, '',
    'celery'
    FROM generate_series(%(first)s::timestamptz, %(first)s::timestamptz
        + (%(size)s - 1) * interval '1 second', interval '1 second') AS s"""


def prepare(cursor: Any, schedule: str, version: str) -> None:
    """Each design's table, empty, with the ledger's columns, indexes, checks and keys."""
    for design in DESIGNS.values():
        table = design["table"]
        cursor.execute(f"DROP TABLE IF EXISTS {table}, {table}_outbox")
        cursor.execute(
            f"CREATE TABLE {table} (LIKE {LEDGER} INCLUDING ALL) "
            f"WITH (fillfactor = {design['fillfactor']})"
        )
        cursor.execute(
            f"ALTER TABLE {table} ADD FOREIGN KEY (schedule_id) "
            f"REFERENCES scheduler_app_schedule (id), ADD FOREIGN KEY (schedule_version_id) "
            f"REFERENCES scheduler_app_scheduleversion (id)"
        )
        if "add" in design:
            cursor.execute(design["add"].format(table=table))
        if design["handoff"] != "state":
            dispatched = _index_named(cursor, table, "dispatched_at")
            cursor.execute(f'DROP INDEX "{dispatched}"')
            cursor.execute(
                f"CREATE TABLE {table}_outbox (id uuid PRIMARY KEY, scheduled_for timestamptz "
                "NOT NULL, target varchar(20) NOT NULL, created_at timestamptz NOT NULL, "
                "publish_lease_until timestamptz)"
            )
            cursor.execute(f"CREATE INDEX ON {table}_outbox (created_at)")


SCHEDULE_DESIGNS = {"the schedule row": "bench_hw_wide", "a narrow runtime row": "bench_hw_runtime"}
ADVANCE = (
    "UPDATE {table} t SET next_run_at = t.next_run_at + interval '1 day', last_scheduled_for = "
    "t.next_run_at, occurrence_count = t.occurrence_count + 1, updated_at = now() "
    "FROM unnest(%(ids)s::uuid[]) AS v(id) WHERE t.{key} = v.id"
)


def prepare_schedules(cursor: Any, template: str, size: int) -> list[str]:
    """``size`` copies of the template schedule in both designs' tables; their ids."""
    from scheduler_app.dispatch.bulk import ADVANCE_FIELDS  # what the advance writes

    wide, narrow = SCHEDULE_DESIGNS.values()
    cursor.execute(f"DROP TABLE IF EXISTS {wide}, {narrow}")
    # The wide row until 0019: the definition's and the runtime's columns (one id) and indexes.
    cursor.execute(
        "CREATE TEMP TABLE bench_hw_runtime_columns "
        "(LIKE scheduler_app_schedule_runtime INCLUDING ALL)"
    )
    cursor.execute("ALTER TABLE bench_hw_runtime_columns DROP COLUMN id")
    cursor.execute(
        f"CREATE TABLE {wide} (LIKE scheduler_app_schedule INCLUDING ALL, "
        "LIKE bench_hw_runtime_columns INCLUDING ALL)"
    )
    cursor.execute("DROP TABLE bench_hw_runtime_columns")
    cursor.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = %s "
        "ORDER BY ordinal_position",
        [wide],
    )
    names = [str(name) for (name,) in cursor.fetchall()]
    copied = {"id": "gen_random_uuid()", "key": "NULL", "name": "name || n"}
    values = ", ".join(copied.get(name, f'"{name}"') for name in names)
    cursor.execute(
        f"INSERT INTO {wide} ({', '.join(f'{chr(34)}{n}{chr(34)}' for n in names)}) "
        f"SELECT {values} FROM scheduler_app_schedule JOIN scheduler_app_schedule_runtime "
        "USING (id), generate_series(1, %s) AS n WHERE id = %s",
        [size, template],
    )
    cursor.execute(
        f"CREATE TABLE {narrow} AS SELECT id AS schedule_id, {', '.join(ADVANCE_FIELDS)} "
        f"FROM {wide}"
    )
    cursor.execute(f"ALTER TABLE {narrow} ADD PRIMARY KEY (schedule_id)")
    cursor.execute(f"CREATE INDEX ON {narrow} (next_run_at) WHERE status = 'active'")
    cursor.execute(f"CREATE INDEX ON {narrow} (next_run_at)")
    cursor.execute(f"ANALYZE {wide}; ANALYZE {narrow}")
    cursor.execute(f"SELECT id FROM {wide}")
    return [str(row_id) for (row_id,) in cursor.fetchall()]


def advance_round(cursor: Any, name: str, ids: list[str]) -> dict[str, float]:
    """Advance every copied schedule once, in one transaction: what it made."""
    table = SCHEDULE_DESIGNS[name]
    key = "id" if table.endswith("wide") else "schedule_id"
    cursor.execute("BEGIN")
    wal = _wal(cursor)
    began = time.perf_counter()
    cursor.execute(ADVANCE.format(table=table, key=key), {"ids": ids})
    figures = {"advance_ms": (time.perf_counter() - began) * 1000}
    figures["advance_wal_kb"] = (_wal(cursor) - wal) / 1024
    updated, hot = _hot(cursor, table)
    figures["hot_share"] = hot / updated if updated else 0.0
    cursor.execute("COMMIT")
    return figures


def _index_named(cursor: Any, table: str, column: str) -> str:
    cursor.execute(
        "SELECT indexname FROM pg_indexes WHERE tablename = %s AND indexdef LIKE %s",
        [table, f"%({column})%"],
    )
    return str(cursor.fetchone()[0])


def _wal(cursor: Any) -> int:
    cursor.execute("SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn")
    return int(cursor.fetchone()[0])


def _hot(cursor: Any, table: str) -> tuple[int, int]:
    cursor.execute(
        "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_xact_user_tables WHERE relname = %s",
        [table],
    )
    updated, hot = cursor.fetchone()
    return int(updated), int(hot)


def one_round(cursor: Any, name: str, params: dict[str, Any]) -> dict[str, float]:
    """Insert ``size`` rows, then hand them off, in one transaction each; what each made."""
    design = DESIGNS[name]
    table = design["table"]
    insert = f"INSERT INTO {table} ({COLUMNS}) {ROWS}"
    if design["handoff"] != "state":
        insert = (
            f"WITH made AS ({insert} RETURNING id, scheduled_for, target, created_at) "
            f"INSERT INTO {table}_outbox (id, scheduled_for, target, created_at) "
            "SELECT * FROM made"
        )
        handoff = (
            f"WITH gone AS (DELETE FROM {table}_outbox RETURNING id, scheduled_for) "
            f"UPDATE {table} o SET dispatched_at = now(), emitted_at = coalesce(emitted_at, "
            "now()), publish_count = publish_count + 1 FROM gone "
            "WHERE o.id = gone.id AND o.scheduled_for = gone.scheduled_for"
        )
        if design["handoff"] == "delete":
            handoff = f"DELETE FROM {table}_outbox"
    else:
        handoff = (
            f"UPDATE {table} SET state = 'dispatched', dispatched_at = now(), emitted_at = "
            "coalesce(emitted_at, now()), publish_lease_until = NULL, publish_count = "
            "publish_count + 1 WHERE state = 'pending'"
        )
    figures: dict[str, float] = {}
    for phase, statement in (("insert", insert), ("handoff", handoff)):
        cursor.execute("BEGIN")
        wal = _wal(cursor)
        began = time.perf_counter()
        cursor.execute(statement, params)
        figures[f"{phase}_ms"] = (time.perf_counter() - began) * 1000
        figures[f"{phase}_wal_kb"] = (_wal(cursor) - wal) / 1024
        if phase == "handoff":
            updated, hot = _hot(cursor, table)
            figures["hot_share"] = hot / updated if updated else 0.0
        cursor.execute("COMMIT")
    return figures


def measure(size: int, rounds: int) -> dict[str, dict[str, Any]]:
    from django.db import connection

    schedule, version = _a_schedule()
    samples: dict[str, list[dict[str, float]]] = {name: [] for name in DESIGNS}
    advances: dict[str, list[dict[str, float]]] = {name: [] for name in SCHEDULE_DESIGNS}
    with connection.cursor() as cursor:
        prepare(cursor, schedule, version)
        ids = prepare_schedules(cursor, schedule, size)
        for number in range(rounds):
            first = "2026-06-01T00:00:00Z"
            params = {"schedule": schedule, "version": version, "size": size}
            order = list(DESIGNS) if number % 2 == 0 else list(reversed(DESIGNS))
            for name in order:
                params["first"] = _first(first, number, size)
                samples[name].append(one_round(cursor, name, params))
            for name in SCHEDULE_DESIGNS if number % 2 == 0 else reversed(SCHEDULE_DESIGNS):
                advances[name].append(advance_round(cursor, name, ids))
        for design in DESIGNS.values():
            cursor.execute(f"DROP TABLE IF EXISTS {design['table']}, {design['table']}_outbox")
        cursor.execute(f"DROP TABLE IF EXISTS {', '.join(SCHEDULE_DESIGNS.values())}")
    return {
        "ledger": {name: _medians(found, size) for name, found in samples.items()},
        "schedules": {name: _advance_medians(found, size) for name, found in advances.items()},
    }


def _median_of(found: list[dict[str, float]]) -> Callable[[str], float]:
    """The median of one figure over the rounds ``found``."""
    return lambda key: statistics.median(sample[key] for sample in found)


def _advance_medians(found: list[dict[str, float]], size: int) -> dict[str, float]:
    median = _median_of(found)
    return {
        "advance_ms": round(median("advance_ms"), 2),
        "advance_wal_kb": round(median("advance_wal_kb"), 1),
        "per_slot_us": round(median("advance_ms") * 1000 / size, 1),
        "hot_share": round(median("hot_share"), 3),
    }


def _a_schedule() -> tuple[str, str]:
    """One schedule (and its version) the rows belong to, made through the services once."""
    from bench.scale.env import TASK, celery_app
    from scheduler_app.definition.schedule import version_id
    from scheduler_app.models import Schedule
    from scheduler_app.services import create_schedule

    celery_app()
    row = Schedule.objects.filter(key="bench-handoff-writes").first() or create_schedule(
        task=TASK, kind="interval", rule="1h", key="bench-handoff-writes"
    )
    return str(row.pk), str(version_id(row.pk, row.version))


def _first(base: str, number: int, size: int) -> str:
    from datetime import datetime, timedelta

    start = datetime.fromisoformat(base.replace("Z", "+00:00"))
    return (start + timedelta(seconds=number * size)).isoformat()


def _medians(found: list[dict[str, float]], size: int) -> dict[str, Any]:
    median = _median_of(found)
    return {
        "insert_ms": round(median("insert_ms"), 2),
        "handoff_ms": round(median("handoff_ms"), 2),
        "insert_wal_kb": round(median("insert_wal_kb"), 1),
        "handoff_wal_kb": round(median("handoff_wal_kb"), 1),
        "per_slot_us": round((median("insert_ms") + median("handoff_ms")) * 1000 / size, 1),
        "hot_share": round(median("hot_share"), 3),
    }


def render(results: dict[str, Any], facts: dict[str, Any], command: str) -> str:
    size = results["size"]
    table = report.markdown_table(
        [
            "design",
            f"insert {size:,}, ms",
            "its WAL, kB",
            f"hand-off {size:,}, ms",
            "its WAL, kB",
            "hand-off updates HOT",
            "both, µs a slot",
        ],
        [
            [
                name,
                f"{row['insert_ms']:.1f}",
                f"{row['insert_wal_kb']:.0f}",
                f"{row['handoff_ms']:.1f}",
                f"{row['handoff_wal_kb']:.0f}",
                f"{row['hot_share']:.0%}",
                f"{row['per_slot_us']:.0f}",
            ]
            for name, row in results["figures"]["ledger"].items()
        ],
    )
    advance = report.markdown_table(
        ["the schedules' advance", f"{size:,}, ms", "its WAL, kB", "HOT", "µs a slot"],
        [
            [
                name,
                f"{row['advance_ms']:.1f}",
                f"{row['advance_wal_kb']:.0f}",
                f"{row['hot_share']:.0%}",
                f"{row['per_slot_us']:.0f}",
            ]
            for name, row in results["figures"]["schedules"].items()
        ],
    )
    load = report.describe_load(results["load_before"], results["load_after"])
    return f"""Run: {report.describe_run(facts, command)}

{_described()}

{table}

{advance}

Medians of {results["rounds"]} rounds, the designs interleaved (the order alternates round by
round); each round adds {size:,} rows to every table, so the later rounds write into a table of
up to {size * results["rounds"]:,} rows. {load}"""


def _described() -> str:
    """The module's docstring for the page: the command lines out, Markdown's backticks."""
    lines = [line for line in (__doc__ or "").splitlines() if not line.startswith("    ")]
    text = "\n".join(lines).replace("``", "`").strip()
    return text.replace("\n\n\n", "\n\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.handoff_writes", description=__doc__)
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--no-write", action="store_true", help="print only; write no files")
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    command = (
        " ".join(["python -m bench.handoff_writes", *argv]) if argv else ("make bench-handoff")
    )

    from bench.scale.env import setup_django

    setup_django(migrate=True)
    return report.measured_and_written(
        NAME,
        HEADING,
        command,
        lambda: measure(args.size, args.rounds),
        render,
        write=not args.no_write,
        size=args.size,
        rounds=args.rounds,
    )


if __name__ == "__main__":
    raise SystemExit(main())
