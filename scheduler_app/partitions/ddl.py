"""The partitions of the ledger in PostgreSQL: read them, create one, drop one.

Every function here runs inside the caller's transaction. Locks are taken in one order
(the partitioned table, then the DEFAULT partition, then the partition concerned) and wait
at most ``LOCK_TIMEOUT``: partition maintenance queues behind no long query (a queued
ACCESS EXCLUSIVE request would stall every reader behind it); it fails and is tried again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db import connection

from scheduler_app.models import Occurrence, OccurrenceAttempt
from scheduler_app.partitions.ranges import Range

LOCK_TIMEOUT = "5s"
KEY = "scheduled_for"
EARLIEST = datetime(1, 1, 1, tzinfo=UTC)
LATEST = datetime(9999, 12, 31, tzinfo=UTC)
BOUNDS = re.compile(r"FOR VALUES FROM \((?P<start>[^)]*)\) TO \((?P<end>[^)]*)\)")


@dataclass(frozen=True, kw_only=True)
class Partition:
    """One partition: its table name, its range (None: the DEFAULT partition), its rows as
    the planner estimates them (-1: never analysed)."""

    name: str
    range: Range | None
    estimated_rows: int


def table() -> str:
    return Occurrence._meta.db_table


def default_name() -> str:
    return f"{table()}_default"


def is_partitioned() -> bool:
    """Whether the ledger is a partitioned table (PostgreSQL after migration 0014)."""
    if connection.vendor != "postgresql":
        return False
    with connection.cursor() as cursor:
        cursor.execute("SELECT relkind FROM pg_class WHERE oid = %s::regclass", [table()])
        row = cursor.fetchone()
    return row is not None and row[0] == "p"


def partitions() -> list[Partition]:
    """The ledger's partitions, DEFAULT first, then by range."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, pg_get_expr(c.relpartbound, c.oid), c.reltuples::bigint "
            "FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = %s::regclass",
            [table()],
        )
        rows = cursor.fetchall()
    found = [Partition(name=name, range=_bounds(text), estimated_rows=n) for name, text, n in rows]
    return sorted(found, key=lambda p: (p.range is not None, p.range and p.range.start))


def _bounds(text: str) -> Range | None:
    """``FOR VALUES FROM ('2026-12-01 00:00:00+00') TO (...)``; None for DEFAULT. MINVALUE
    and MAXVALUE (a partition made by hand) read as the ends of time."""
    match = BOUNDS.search(text)
    if match is None:
        return None
    return Range(start=_instant(match["start"], EARLIEST), end=_instant(match["end"], LATEST))


def _instant(text: str, unbounded: datetime) -> datetime:
    text = text.strip().strip("'")
    if text.upper() in {"MINVALUE", "MAXVALUE"}:
        return unbounded
    return datetime.fromisoformat(text).astimezone(UTC)


def columns(cursor: Any) -> str:
    """The ledger's columns, quoted, in the table's order (for moving rows between tables)."""
    cursor.execute(
        "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 "
        "AND NOT attisdropped ORDER BY attnum",
        [table()],
    )
    return ", ".join(connection.ops.quote_name(name) for (name,) in cursor.fetchall())


def lock(cursor: Any) -> None:
    """The partitioned table (against concurrent partition changes; reads and writes go on),
    then DEFAULT (nothing lands there while rows move in or out of it)."""
    cursor.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
    cursor.execute(f"LOCK TABLE ONLY {table()} IN SHARE UPDATE EXCLUSIVE MODE")
    cursor.execute(f"LOCK TABLE {default_name()} IN ACCESS EXCLUSIVE MODE")


def create(span: Range) -> int:
    """Create the partition of ``span`` and move into it the rows DEFAULT holds for it;
    return how many moved. Made apart and attached (``ATTACH`` leaves reads and writes of
    the other partitions alone, where ``CREATE TABLE ... PARTITION OF`` would stop them)."""
    name = f"{table()}_{span.suffix}"
    with connection.cursor() as cursor:
        lock(cursor)
        cursor.execute(
            f"CREATE TABLE {name} (LIKE {table()} INCLUDING DEFAULTS INCLUDING CONSTRAINTS "
            "INCLUDING STORAGE)"
        )
        names = columns(cursor)
        cursor.execute(
            f"WITH moved AS (DELETE FROM {default_name()} WHERE {KEY} >= %s AND {KEY} < %s "
            f"RETURNING {names}) INSERT INTO {name} ({names}) SELECT {names} FROM moved",
            [span.start, span.end],
        )
        moved = cursor.rowcount
        cursor.execute(
            f"ALTER TABLE {table()} ATTACH PARTITION {name} FOR VALUES FROM (%s) TO (%s)",
            [span.start, span.end],
        )
    return moved


def keepers_sql(name: str) -> str:
    """The rows of partition ``name`` that retention keeps (parameters: the final states,
    the cut-off): not final, finished at or after the cut-off, or the latest of their
    schedule (``monitoring.retention``'s rules)."""
    return f"""
        SELECT id FROM {name}
        WHERE NOT (state = ANY(%s)) OR finished_at IS NULL OR finished_at >= %s
        UNION
        SELECT last.id FROM (
            SELECT DISTINCT ON (schedule_id) id, schedule_id, {KEY} FROM {name}
            ORDER BY schedule_id, {KEY} DESC
        ) last
        WHERE NOT EXISTS (
            SELECT 1 FROM {table()} newer
            WHERE newer.schedule_id = last.schedule_id AND newer.{KEY} > last.{KEY}
        )
    """


def retire(partition: Partition, final_states: list[str], cutoff: datetime) -> tuple[int, int]:
    """Take ``partition`` out of the ledger, keeping the rows retention must keep (copied out
    first and inserted again, into DEFAULT): it becomes the standalone table ``retired_name``,
    which ``finish_retired`` drops with the attempts of its rows after this transaction. Returns
    (rows retired, rows kept).

    The ledger is locked ACCESS EXCLUSIVE (taken first: a weaker lock upgraded later could
    deadlock with a writer) only for the keepers' copy and the detach, not for the deletes."""
    name = partition.name
    with connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
        cursor.execute(f"LOCK TABLE ONLY {table()} IN ACCESS EXCLUSIVE MODE")
        names = columns(cursor)
        cursor.execute(
            f"CREATE TEMPORARY TABLE partition_keepers AS "
            f"SELECT {names} FROM {name} WHERE id IN ({keepers_sql(name)})",
            [final_states, cutoff],
        )
        kept = cursor.rowcount
        # Foreign-key checks still deferred on rows written earlier in this transaction would
        # stop the table from being dropped: run them now (Django's own constraint check).
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("SET CONSTRAINTS ALL DEFERRED")
        cursor.execute(f"ALTER TABLE {table()} DETACH PARTITION {name}")
        retired = retired_name(partition)
        cursor.execute(f"ALTER TABLE {name} RENAME TO {retired}")
        cursor.execute(f"INSERT INTO {table()} ({names}) SELECT {names} FROM partition_keepers")
        cursor.execute(f"DELETE FROM {retired} WHERE id IN (SELECT id FROM partition_keepers)")
        cursor.execute("DROP TABLE partition_keepers")
        cursor.execute(f"SELECT count(*) FROM {retired}")
        row = cursor.fetchone()
    return (int(row[0]) if row else 0), kept


def retired_name(partition: Partition) -> str:
    return partition.name.replace(f"{table()}_", f"{table()}_retired_", 1)


def retired_tables() -> list[str]:
    """Partitions retired but not yet dropped (a beat stopped between the two steps)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname FROM pg_class WHERE relkind = 'r' AND relname LIKE %s "
            "AND relnamespace = to_regnamespace(current_schema()) ORDER BY relname",
            [f"{table()}_retired_%"],
        )
        return [name for (name,) in cursor.fetchall()]


def finish_retired(name: str) -> int:
    """Delete the attempts of a retired partition's rows, then drop it (the ledger is not
    locked: these rows left it already). Returns the attempts deleted."""
    attempts = OccurrenceAttempt._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {attempts} WHERE occurrence_id IN (SELECT id FROM {name})")
        deleted = cursor.rowcount
        cursor.execute(f"DROP TABLE {name}")
    return deleted
