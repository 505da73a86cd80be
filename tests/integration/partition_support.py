"""Rows of the ledger made directly (no beat): for the partition and migration tests."""

from __future__ import annotations

from datetime import datetime

from django.db import connection

from scheduler_app.definition.schedule import idempotency_key, occurrence_id, version_id
from scheduler_app.models import Occurrence, OccurrenceState, Schedule, Trigger
from tests.integration.support import TASK

TABLE = "scheduler_app_occurrence"
ATTEMPTS = "scheduler_app_occurrenceattempt"


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
