"""Retiring a partition of the ledger (PostgreSQL): its keepers found, it detached, then dropped.

Three steps, so that the ledger is locked ACCESS EXCLUSIVE for milliseconds, not for a scan:

1. ``watch`` (its own transaction, committed first): a trigger on the partition notes the id
   of every row inserted into it or updated from then on, in ``<partition>_changed``.
2. ``retire`` (one transaction): the keepers are found by reading the partition with the
   ledger *not* locked (``keepers_sql``: a scan and an index read or skip scan, under a second
   for a million rows);
   then the ledger is locked and only what can have changed since that read is added, through
   indexes: the rows the trigger noted and the open rows (``occ_open_idx``). The partition is
   detached and renamed ``*_retired_*``, the keepers go back into the ledger (into DEFAULT).
   The attempts' partition of the same range (migration 0016) is detached with it and
   renamed alike; the keepers' attempts go back into the attempts (into their DEFAULT).
3. ``finish_retired`` (the ledger not locked): both retired tables dropped. Without an
   attempts partition of that range (attempts not partitioned, a partition made by hand, a
   retirement begun before 0016), the attempts of the retired rows are first deleted in short
   transactions through their index on the occurrence.

Why the read before the lock loses nothing (``monitoring.retention``'s rules): whether a row
is open, or finished at or after the cut-off, depends on the row alone, so a row not written
since the read was judged on what it still is, and a row written since is noted by the
trigger (which every writer sees: creating it waited for the writers of the partition). Being
the latest occurrence of its schedule can only be gained if the schedule's newer rows are
deleted, and its newest row never is: retention keeps it, a schedule with occurrences is not
deleted (PROTECT), nothing else deletes occurrences. Rows kept because they were the latest
at the read and are no longer only wait in DEFAULT for the batched delete.

An attempt carries its occurrence's slot, so it lives in the attempts' partition of its
occurrence's range: the keepers' attempts are there when the attempts' partition is taken
out (the attempts table is locked then too, so none is added meanwhile).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import connection, transaction

from scheduler_app.models import OccurrenceAttempt, OccurrenceState, Schedule
from scheduler_app.partitions.ddl import (
    KEY,
    LOCK_TIMEOUT,
    Partition,
    attempts_table,
    columns,
    is_partitioned,
    partitions,
    table,
)

BLOCKS = 256
"""Pages of a retired table (2 MB, some 7,000 rows) whose attempts one transaction of
``finish_retired`` deletes."""
ATTEMPTS_LOCK_TIMEOUT = "500ms"
"""How long ``retire`` waits for the attempts table once it holds the ledger."""
TRIGGER = "scheduler_retiring"
NOTE_CHANGE = "scheduler_app_occurrence_note_change"


def changed_name(partition: Partition) -> str:
    return f"{partition.name}_changed"


def retired_name(partition: Partition) -> str:
    return partition.name.replace(f"{table()}_", f"{table()}_retired_", 1)


def attempts_name(ledger_name: str) -> str:
    """The attempts' table beside a ledger partition (or retired partition) of that name."""
    return ledger_name.replace(table(), attempts_table(), 1)


def attempts_partition(partition: Partition) -> str | None:
    """The attempts' partition of exactly ``partition``'s range, if there is one."""
    if not is_partitioned(attempts_table()):
        return None
    name = attempts_name(partition.name)
    found = {p.name: p.range for p in partitions(attempts_table())}
    return name if name in found and found[name] == partition.range else None


def watch(partition: Partition) -> None:
    """Note from now on every row written into ``partition`` (commit before ``retire``).
    Creating the trigger waits (at most ``LOCK_TIMEOUT``) for the transactions writing into
    the partition, so none of them can write without it once this commits."""
    changed = changed_name(partition)
    with connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
        cursor.execute(f"DROP TABLE IF EXISTS {changed}")
        cursor.execute(f"CREATE TABLE {changed} (id uuid NOT NULL)")
        cursor.execute(
            f"CREATE OR REPLACE FUNCTION {NOTE_CHANGE}() RETURNS trigger LANGUAGE plpgsql AS $$ "
            "BEGIN EXECUTE format('INSERT INTO %I (id) VALUES ($1)', TG_ARGV[0]) USING NEW.id; "
            "RETURN NULL; END $$"
        )
        cursor.execute(f"DROP TRIGGER IF EXISTS {TRIGGER} ON {partition.name}")
        cursor.execute(
            f"CREATE TRIGGER {TRIGGER} AFTER INSERT OR UPDATE ON {partition.name} "
            f"FOR EACH ROW EXECUTE FUNCTION {NOTE_CHANGE}('{changed}')"
        )


SKIP_SCAN_ROWS_PER_SCHEDULE = 40
"""With more rows per schedule than this in a partition, each schedule's latest row there is
found by two index probes per schedule (a skip scan of the ``(schedule, slot)`` index) instead
of a read of the whole index: a probe costs some tens of rows read in order."""


def keepers_sql(name: str, *, skip: bool = False) -> str:
    """The rows of partition ``name`` that retention keeps (parameters: the final states,
    the cut-off, the partition's end): not final, ended at or after the cut-off (a read of
    the whole partition; a row written final, skipped at creation, has no ``finished_at``
    and ended when it was created: ``monitoring.retention.ended_before``), or the latest of
    their schedule (``skip``: by a skip scan, else by a read of the partition's
    ``(schedule, slot)`` index). Run it before the ledger is locked.

    A newer row of the same schedule can only be at or after the partition's end (it is not
    in this partition, whose newest row of that schedule it is compared with, and DEFAULT holds
    no slot of this range), so only the later partitions are searched for it, by index."""
    return f"""
        SELECT id FROM {name}
        WHERE NOT (state = ANY(%s)) OR COALESCE(finished_at, created_at) >= %s
        UNION
        SELECT last.id FROM ({_latest_sql(name) if skip else _latest_by_index_sql(name)}) last
        WHERE NOT EXISTS (
            SELECT 1 FROM {table()} newer
            WHERE newer.schedule_id = last.schedule_id AND newer.{KEY} > last.{KEY}
                AND newer.{KEY} >= %s
        )
    """


def _latest_by_index_sql(name: str) -> str:
    return f"""
        SELECT DISTINCT ON (schedule_id) id, schedule_id, {KEY} FROM {name}
        ORDER BY schedule_id, {KEY} DESC
    """


def _latest_sql(name: str) -> str:
    """Each schedule's newest row in ``name``: the schedules found one after the other by
    index (a recursive skip scan), then each one's newest row by index."""
    return f"""
        WITH RECURSIVE schedules(schedule_id) AS (
            (SELECT schedule_id FROM {name} ORDER BY schedule_id LIMIT 1)
            UNION ALL
            SELECT (SELECT p.schedule_id FROM {name} p WHERE p.schedule_id > s.schedule_id
                    ORDER BY p.schedule_id LIMIT 1)
            FROM schedules s WHERE s.schedule_id IS NOT NULL
        )
        SELECT newest.id, s.schedule_id, newest.{KEY} FROM schedules s
        CROSS JOIN LATERAL (
            SELECT p.id, p.{KEY} FROM {name} p WHERE p.schedule_id = s.schedule_id
            ORDER BY p.{KEY} DESC LIMIT 1
        ) newest
        WHERE s.schedule_id IS NOT NULL
    """


def skip_scan_pays(cursor: Any, partition: Partition) -> bool:
    """Whether the partition holds many rows per schedule (planner estimates; the schedule
    table's count is an upper bound of the schedules in the partition)."""
    if partition.estimated_rows <= 0:
        return False
    schedules = Schedule._meta.db_table
    cursor.execute("SELECT reltuples::bigint FROM pg_class WHERE oid = %s::regclass", [schedules])
    row = cursor.fetchone()
    count = int(row[0]) if row else -1
    if count < 0:  # never analysed
        cursor.execute(f"SELECT count(*) FROM {schedules}")
        count = int(cursor.fetchone()[0])
    return partition.estimated_rows > SKIP_SCAN_ROWS_PER_SCHEDULE * max(count, 1)


def open_states(final_states: Sequence[str]) -> list[str]:
    """The states not final: those ``occ_open_idx`` holds (a lookup by index, not a scan)."""
    return [state for state in OccurrenceState.values if state not in final_states]


def retire(partition: Partition, final_states: Sequence[str], cutoff: datetime) -> int:
    """Take ``partition`` (``watch``-ed in a committed transaction) out of the ledger, keeping
    the rows retention must keep (inserted again, into DEFAULT): it becomes the standalone
    table ``retired_name``, which ``finish_retired`` drops with the attempts of its rows after
    this transaction. Returns the rows kept.

    The ledger is locked ACCESS EXCLUSIVE after the keepers are found, for the index lookups of
    what changed meanwhile, the keepers' copy and the detach."""
    name, changed = partition.name, changed_name(partition)
    attempts = attempts_partition(partition)
    with connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
        find_keepers(cursor, partition, final_states, cutoff)
        cursor.execute(f"LOCK TABLE ONLY {table()} IN ACCESS EXCLUSIVE MODE")
        if attempts is not None:
            # Every writer of attempts writes the ledger first, so with the ledger locked
            # this waits only for a transaction that writes attempts alone: briefly, as the
            # ledger is locked meanwhile (a refusal is tried again later).
            cursor.execute(f"SET LOCAL lock_timeout = '{ATTEMPTS_LOCK_TIMEOUT}'")
            cursor.execute(f"LOCK TABLE ONLY {attempts_table()} IN ACCESS EXCLUSIVE MODE")
            cursor.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
        kept = _copy_keepers(cursor, name, changed, open_states(final_states))
        # Foreign-key checks still deferred on rows written earlier in this transaction would
        # stop the table from being dropped: run them now (Django's own constraint check).
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("SET CONSTRAINTS ALL DEFERRED")
        cursor.execute(f"ALTER TABLE {table()} DETACH PARTITION {name}")
        retired = retired_name(partition)
        cursor.execute(f"ALTER TABLE {name} RENAME TO {retired}")
        cursor.execute(f"DROP TRIGGER {TRIGGER} ON {retired}")
        names = columns(cursor)
        cursor.execute(f"INSERT INTO {table()} ({names}) SELECT {names} FROM partition_keepers")
        cursor.execute(f"DELETE FROM {retired} WHERE id IN (SELECT id FROM partition_keepers)")
        if attempts is not None:
            _retire_attempts(cursor, attempts)
        cursor.execute(f"DROP TABLE {changed}, partition_found, partition_keepers")
    return kept


def _retire_attempts(cursor: Any, name: str) -> None:
    """Detach the attempts' partition ``name`` (the attempts table locked), rename it beside
    the retired ledger partition, and put the keepers' attempts back (into DEFAULT): looked up
    by the partition's index on the occurrence."""
    parent = attempts_table()
    cursor.execute(f"ALTER TABLE {parent} DETACH PARTITION {name}")
    retired = name.replace(f"{parent}_", f"{parent}_retired_", 1)
    cursor.execute(f"ALTER TABLE {name} RENAME TO {retired}")
    # Its id's default names the attempts' sequence: without it, the table depends on nothing
    # (migrating 0016 back drops that sequence, retired tables left or not).
    cursor.execute(f"ALTER TABLE {retired} ALTER COLUMN id DROP DEFAULT")
    names = columns(cursor, parent)
    cursor.execute(
        f"WITH back AS (DELETE FROM {retired} WHERE occurrence_id IN "
        f"(SELECT id FROM partition_keepers) RETURNING {names}) "
        f"INSERT INTO {parent} ({names}) SELECT {names} FROM back"
    )


def find_keepers(
    cursor: Any, partition: Partition, final_states: Sequence[str], cutoff: datetime
) -> None:
    """The keepers as the partition holds them now, into the temporary ``partition_found``
    (the ledger not locked: only what this read cannot see is looked up under the lock)."""
    assert partition.range is not None, "DEFAULT is never retired"
    cursor.execute(
        "CREATE TEMPORARY TABLE partition_found AS "
        + keepers_sql(partition.name, skip=skip_scan_pays(cursor, partition)),
        [list(final_states), cutoff, partition.range.end],
    )
    # Statistics, so that the lookups under the lock go by index, not by a scan.
    cursor.execute("ANALYZE partition_found")
    cursor.execute(f"ANALYZE {changed_name(partition)}")


def _copy_keepers(cursor: Any, name: str, changed: str, still_open: list[str]) -> int:
    """The keepers found before the lock, the rows written since, the open rows: copied into
    the temporary ``partition_keepers``, each looked up by index."""
    names = columns(cursor)
    cursor.execute(
        f"CREATE TEMPORARY TABLE partition_keepers AS "
        f"SELECT {names} FROM {name} WHERE id IN ("
        f"SELECT id FROM partition_found UNION SELECT id FROM {changed} "
        f"UNION SELECT id FROM {name} WHERE state = ANY(%s))",
        [still_open],
    )
    return int(cursor.rowcount)


def retired_tables() -> list[str]:
    """Partitions retired but not yet dropped (a beat stopped between the two steps)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname FROM pg_class WHERE relkind = 'r' AND relname LIKE %s "
            "AND relnamespace = to_regnamespace(current_schema()) ORDER BY relname",
            [f"{table()}\\_retired\\_%"],
        )
        return [name for (name,) in cursor.fetchall()]


def finish_retired(name: str, *, blocks: int = BLOCKS) -> tuple[int, int]:
    """Drop a retired partition and its attempts. Returns (rows dropped, attempts removed).

    When the attempts' partition of its range was retired with it, both tables are dropped
    together. Otherwise the attempts of its rows are deleted first, a few thousand rows per
    transaction (the ledger is not locked: these rows left it already; only their attempts are
    touched).

    The rows are read in the table's physical order, ``blocks`` pages per batch (a TID range
    scan: no index, no sort), which is about the order their attempts were written in, so a
    batch deletes from neighbouring pages of the attempts table. Each batch goes through the
    attempts' index on the occurrence (the ids stay in the database: sent as a list of
    thousands of values, the planner scans the whole attempts table per batch instead), so
    its cost follows the rows deleted, not the size of the attempts table."""
    attempts = attempts_name(name)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [attempts])
        if cursor.fetchone()[0]:
            cursor.execute(
                f"SELECT (SELECT count(*) FROM {name}), (SELECT count(*) FROM {attempts})"
            )
            rows, removed = cursor.fetchone()
            cursor.execute(f"DROP TABLE {name}, {attempts}")
            return int(rows), int(removed)
        cursor.execute("SELECT pg_relation_size(%s) / current_setting('block_size')::int", [name])
        row = cursor.fetchone()
    size = int(row[0]) if row else 0
    rows = deleted = 0
    for first in range(0, size, blocks):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(_batch_sql(name), [f"({first},0)", f"({first + blocks},0)"])
            found = cursor.fetchone()
        if found is not None:
            rows, deleted = rows + found[0], deleted + found[1]
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE {name}")
    return rows, deleted


def _batch_sql(name: str) -> str:
    """Delete the attempts of the rows of ``name`` in a range of pages (two TIDs); returns
    the rows and the attempts deleted."""
    attempts = OccurrenceAttempt._meta.db_table
    return f"""
        WITH batch AS MATERIALIZED (
            SELECT id FROM {name} WHERE ctid >= %s::tid AND ctid < %s::tid
        ), gone AS (
            DELETE FROM {attempts} WHERE occurrence_id IN (SELECT id FROM batch) RETURNING 1
        )
        SELECT (SELECT count(*) FROM batch), (SELECT count(*) FROM gone)
    """
