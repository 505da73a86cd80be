"""Rows of the ledger made directly (no beat): for the partition and migration tests."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime

from django.db import connection, transaction

from scheduler_app.definition.schedule import idempotency_key, occurrence_id, version_id
from scheduler_app.models import Occurrence, OccurrenceState, Schedule, Trigger
from scheduler_app.partitions import ddl
from scheduler_app.partitions.ranges import Range
from tests.integration.support import TASK

TABLE = "scheduler_app_occurrence"
ATTEMPTS = "scheduler_app_occurrenceattempt"
JAN = Range(start=datetime(2024, 1, 1, tzinfo=UTC), end=datetime(2024, 2, 1, tzinfo=UTC))
"""A month the tests make a partition for while a beat or a worker writes."""


def occurrence(target: Schedule, slot: datetime, **fields: object) -> Occurrence:
    """A finished (succeeded) rule occurrence of ``target`` at ``slot``, unsaved."""
    key = idempotency_key(target.pk, slot)
    values: dict[str, object] = {
        "id": occurrence_id(key),
        "schedule_id": target.pk,
        "schedule_version_id": version_id(target.pk, target.version),
        "trigger": Trigger.SCHEDULED,
        "scheduled_for": slot,
        "window_start": slot,
        "window_end": slot,
        "timezone": "UTC",
        "idempotency_key": key,
        "task": TASK,
        "not_before": slot,
        "created_at": slot,
        "state": OccurrenceState.SUCCEEDED,
        "finished_at": slot,
    }
    values.update(fields)
    return Occurrence(**values)


def fetch(sql: str, params: list[object] | None = None) -> list[tuple[object, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params or [])
        return list(cursor.fetchall())


def partition_counts(table: str = TABLE) -> dict[str, int]:
    """Each partition's name (without the table's) and row count."""
    names = fetch(
        "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
        "WHERE i.inhparent = %s::regclass ORDER BY c.relname",
        [table],
    )
    counts: dict[str, int] = {}
    for (name,) in names:
        [(count,)] = fetch(f"SELECT count(*) FROM {name}")
        counts[str(name).removeprefix(f"{table}_")] = int(count)  # type: ignore[call-overload]
    return counts


def key_columns(constraint: str) -> list[object]:
    """The columns of a primary key or unique constraint, in order."""
    rows = fetch(
        "SELECT a.attname FROM pg_constraint c, unnest(c.conkey) WITH ORDINALITY k(num, pos) "
        "JOIN pg_attribute a ON a.attnum = k.num "
        "WHERE c.conname = %s AND a.attrelid = c.conrelid ORDER BY k.pos",
        [constraint],
    )
    return [name for (name,) in rows]


def someone_waits_for_a_lock() -> bool:
    """Whether any statement waits for a lock (a test's cue, instead of a wall-clock sleep)."""
    [(waiting,)] = fetch("SELECT count(*) FROM pg_locks WHERE NOT granted")
    return bool(waiting)


def drop_partitions(span: Range) -> None:
    """Drop the partitions a test made for ``span`` (DDL outlives the test's flush)."""
    with connection.cursor() as cursor:
        for parent in ddl.tables():
            cursor.execute(f"DROP TABLE IF EXISTS {parent}_{span.suffix}")


def write_while_made(span: Range, write: Callable[[], object]) -> tuple[int, object]:
    """Make ``span``'s partition in one thread and, while its transaction is still open, run
    ``write`` in another until it waits for the partition's locks; then commit both. Returns
    the rows the partition moved and what ``write`` returned; raises what either raised."""
    made, may_commit = threading.Event(), threading.Event()
    results: dict[str, object] = {}

    def run(name: str, work: Callable[[], object], done: threading.Event | None) -> None:
        try:
            if done is None:
                results[name] = work()
                return
            with transaction.atomic():
                results[name] = work()
                done.set()
                may_commit.wait(30)
        except BaseException as exc:  # raised again by the caller's thread
            results[f"{name} error"] = exc
        finally:
            if done is not None:
                done.set()
            connection.close()

    maker = threading.Thread(target=run, args=("made", lambda: ddl.create(span), made))
    maker.start()
    made.wait(30)
    writer = threading.Thread(target=run, args=("written", write, None))
    if "made error" not in results:
        writer.start()
        for _ in range(3000):  # until the writer waits for the maker's locks (no sleep)
            if someone_waits_for_a_lock():
                break
        else:
            results["written error"] = AssertionError("the write never waited for the partition")
    may_commit.set()
    maker.join(30)
    if writer.ident is not None:  # started
        writer.join(30)
    for name in ("made error", "written error"):
        if name in results:
            raise results[name]  # type: ignore[misc]
    return results["made"], results["written"]  # type: ignore[return-value]
