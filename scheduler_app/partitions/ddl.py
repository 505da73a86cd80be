"""The partitions of the ledger in PostgreSQL: read them, create one (``retire`` takes one out).

The attempt history is partitioned the same way (migration 0016): each ledger partition has
an attempts partition of the same range and suffix, created with it (``create``) and retired
with it, so that an attempt lives where its occurrence's range is.

Every function here runs inside the caller's transaction. ``create`` takes its locks in one
order (the ledger, its DEFAULT partition, then the attempts and theirs; ``retire`` locks the
ledger, then the attempts, both under the maintenance advisory lock) and they wait
at most ``LOCK_TIMEOUT``: partition maintenance queues behind no long query (a queued
ACCESS EXCLUSIVE request would stall every reader behind it); it fails and is tried again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db import DatabaseError, IntegrityError, connection

from scheduler_app.models import Occurrence, OccurrenceAttempt
from scheduler_app.partitions.ranges import Range, gaps

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


def attempts_table() -> str:
    return OccurrenceAttempt._meta.db_table


def default_name(parent: str | None = None) -> str:
    return f"{parent or table()}_default"


def is_partitioned(parent: str | None = None) -> bool:
    """Whether the ledger (or ``parent``) is a partitioned table (PostgreSQL after migration
    0014; the attempts after 0016)."""
    if connection.vendor != "postgresql":
        return False
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relkind FROM pg_class WHERE oid = to_regclass(%s)", [parent or table()]
        )
        row = cursor.fetchone()
    return row is not None and row[0] == "p"


def tables() -> list[str]:
    """The partitioned tables whose partitions go together: the ledger, then the attempts
    (when migration 0016 partitioned them)."""
    return [table(), *([attempts_table()] if is_partitioned(attempts_table()) else [])]


def partitions(parent: str | None = None) -> list[Partition]:
    """The ledger's (or ``parent``'s) partitions, DEFAULT first, then by range."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, pg_get_expr(c.relpartbound, c.oid), c.reltuples::bigint "
            "FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = %s::regclass",
            [parent or table()],
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


def columns(cursor: Any, parent: str | None = None) -> str:
    """The ledger's (or ``parent``'s) columns, quoted, in the table's order (for moving rows
    between tables)."""
    cursor.execute(
        "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 "
        "AND NOT attisdropped ORDER BY attnum",
        [parent or table()],
    )
    return ", ".join(connection.ops.quote_name(name) for (name,) in cursor.fetchall())


def lock(cursor: Any, parents: list[str], *, whole: bool = False) -> None:
    """Each partitioned table (against concurrent partition changes; reads and writes go on),
    then its DEFAULT (nothing lands there while rows move in or out of it).

    With ``whole``, each partitioned table is held ACCESS EXCLUSIVE as well, for a move of
    rows out of DEFAULT: a statement that had read the partitions before the new one was
    attached, and then waited for DEFAULT's lock, would look for a moved row only where it
    was and write nothing (a worker's outcome, a handoff id: lost). Held whole, the ledger
    makes such a statement wait before it reads the partitions, and it finds the new one.
    Call it once per transaction (``create`` does), after ``SET LOCAL lock_timeout``."""
    mode = "ACCESS EXCLUSIVE" if whole else "SHARE UPDATE EXCLUSIVE"
    for parent in parents:
        cursor.execute(f"LOCK TABLE ONLY {parent} IN {mode} MODE")
        cursor.execute(f"LOCK TABLE {default_name(parent)} IN ACCESS EXCLUSIVE MODE")


class RowsLanded(DatabaseError):
    """Rows of a new partition's range landed in DEFAULT between the look that found none and
    the locks: the partition is made on the next try, with the whole ledger held."""


def holds_rows(cursor: Any, parents: list[str], spans: tuple[Range, ...]) -> bool:
    """Whether any DEFAULT partition holds rows of ``spans`` (one indexed look each)."""
    for parent in parents:
        for span in spans:
            cursor.execute(
                f"SELECT EXISTS (SELECT 1 FROM {default_name(parent)} "
                f"WHERE {KEY} >= %s AND {KEY} < %s)",
                [span.start, span.end],
            )
            if cursor.fetchone()[0]:
                return True
    return False


def create(*spans: Range) -> int:
    """Create the partitions of ``spans`` of the ledger (and of the attempts) and move into
    them the rows DEFAULT holds for them; return how many occurrences moved. Made apart and
    attached (``ATTACH`` leaves reads and writes of the other partitions alone, where ``CREATE
    TABLE ... PARTITION OF`` would stop them). The locks are taken once, for all of them, in
    the mode the move needs (``lock``): a stronger lock asked for later in the same
    transaction would wait for statements that wait for the DEFAULT it holds (a deadlock).
    Holding the whole ledger is rare: partitions are made ahead of their rows."""
    parents = tables()
    with connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
        whole = holds_rows(cursor, parents, spans)  # before any lock: a look, checked below
        lock(cursor, parents, whole=whole)
        if not whole and holds_rows(cursor, parents, spans):
            raise RowsLanded("rows of a new partition landed in DEFAULT; made on the next try")
        moved = 0
        for span in spans:
            moved += _create(cursor, table(), span)
            for parent in parents[1:]:
                # The attempts' partitions follow the ledger's; one made by hand is left alone.
                existing = [p.range for p in partitions(parent) if p.range is not None]
                for part in gaps(span, existing):
                    _create(cursor, parent, part)
    return moved


def _create(cursor: Any, parent: str, span: Range) -> int:
    name = f"{parent}_{span.suffix}"
    default = default_name(parent)
    cursor.execute(
        f"CREATE TABLE {name} (LIKE {parent} INCLUDING DEFAULTS INCLUDING CONSTRAINTS "
        "INCLUDING STORAGE)"
    )
    names = columns(cursor, parent)
    cursor.execute(
        f"WITH moved AS (DELETE FROM {default} WHERE {KEY} >= %s AND {KEY} < %s "
        f"RETURNING {names}) INSERT INTO {name} ({names}) SELECT {names} FROM moved",
        [span.start, span.end],
    )
    moved = cursor.rowcount
    cursor.execute(
        f"ALTER TABLE {parent} ATTACH PARTITION {name} FOR VALUES FROM (%s) TO (%s)",
        [span.start, span.end],
    )
    return int(moved)


def moved_partition(error: Exception) -> bool:
    """Whether the database refused a row for a partition's bound, not for its values: a row
    routed to the ledger's DEFAULT just before the partition of its slot was attached
    (PostgreSQL's ``violates partition constraint`` on DEFAULT: a check violation that names
    no constraint). That is the moment's, not the row's: the beat leaves its schedule due
    (``dispatch.materialize``) instead of parking it. Any other check violation (a
    constraint, a trigger, no partition at all) is the row's. psycopg 3 names the error's
    code ``sqlstate``, psycopg2 ``pgcode``: either driver is read."""
    cause = getattr(error, "__cause__", None)
    diag = getattr(cause, "diag", None)
    code = getattr(cause, "sqlstate", None) or getattr(cause, "pgcode", None)
    return (
        isinstance(error, IntegrityError)
        and code == "23514"
        and diag is not None
        and diag.constraint_name is None
        and diag.table_name == default_name()
    )
