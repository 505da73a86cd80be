"""Writing many occurrences and schedule updates at once: the batched SQL of a tick.

On PostgreSQL one ``INSERT ... SELECT ... FROM jsonb_array_elements(...) ON CONFLICT DO
NOTHING`` for new occurrences and one ``UPDATE ... FROM jsonb_array_elements(...)`` for the
advanced schedules, the rows sent as one JSON document (Django's ``bulk_create``/``bulk_update``
build statements as long as the batch); elsewhere the Django bulk methods. After commit, the
events of what was written (duplicates absorbed, rows born terminal) are sent.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any
from uuid import UUID

from django.db import connection, transaction
from django.db.models import Field, JSONField

from scheduler_app import events
from scheduler_app.models import Occurrence, OccurrenceState, Schedule, ScheduleRuntime
from scheduler_app.worker.lifecycle import announce_finished

logger = logging.getLogger("scheduler_app.materialize")

ADVANCE_FIELDS = [
    "next_run_at",
    "last_scheduled_for",
    "status",
    "missed_count",
    "skipped_count",
    "caught_up_count",
    "occurrence_count",
    "last_error",
    "updated_at",
]


def insert_occurrences(rows: Sequence[Occurrence]) -> set[UUID]:
    """Insert new occurrences; one that exists already (same id, hence the same idempotency
    key, or the same rule slot of the schedule) is left alone, as ``ON CONFLICT DO NOTHING``
    does.

    On PostgreSQL one ``INSERT ... SELECT ... FROM jsonb_array_elements(...) ON CONFLICT DO
    NOTHING RETURNING id`` per 1,000 rows (no conflict target: any unique constraint absorbs a
    duplicate, whatever the table's primary key; ``bulk_create`` prepares every value of every
    row in Python and sends a statement as long as the batch). Elsewhere one lookup of the ids
    that exist already, and ``bulk_create`` of the others. A row the database refuses for its
    values raises (``IntegrityError``, ``DataError``): never dropped in silence.
    Returns the ids really inserted.
    """
    if not rows:
        return set()
    if connection.vendor != "postgresql":
        # One lookup tells the rows that exist already (ids are derived from the slot, so a
        # slot's row has one id); the others are inserted without ``ignore_conflicts``:
        # SQLite's ``INSERT OR IGNORE`` also drops a row a NOT NULL or CHECK constraint
        # refuses, which would then be published without being stored.
        before = set(
            Occurrence.objects.filter(pk__in=[row.id for row in rows]).values_list("pk", flat=True)
        )
        Occurrence.objects.bulk_create(
            [row for row in rows if row.id not in before], batch_size=1000
        )
        fresh = {row.id for row in rows} - before
        announce_inserted(rows, fresh)
        return fresh
    inserted: set[UUID] = set()
    for start in range(0, len(rows), 1000):
        inserted.update(_insert_batch(rows[start : start + 1000]))
    existing = len(rows) - len(inserted)
    if existing:
        logger.info(
            "occurrences existed already",
            extra={"action": "materialize.conflict", "count": existing},
        )
    announce_inserted(rows, inserted)
    return inserted


def announce_inserted(rows: Sequence[Occurrence], inserted: set[UUID]) -> None:
    """After commit: ``duplicate_prevented(kind="insert_conflict")`` for each slot whose row
    existed already, ``occurrence_finished`` for each new row born terminal (skipped by the
    overlap policy or by shadow mode)."""
    conflicts = [(str(row.schedule_id), str(row.id)) for row in rows if row.id not in inserted]
    if conflicts:

        def send() -> None:
            for schedule_id, occurrence_pk in conflicts:
                events.duplicate_prevented.send(
                    sender=None,
                    kind="insert_conflict",
                    schedule_id=schedule_id,
                    occurrence_id=occurrence_pk,
                )

        transaction.on_commit(send)
    born_skipped = [
        row for row in rows if row.id in inserted and row.state == OccurrenceState.SKIPPED
    ]
    for reason in sorted({row.reason for row in born_skipped}):
        group = [row for row in born_skipped if row.reason == reason]
        announce_finished(group, OccurrenceState.SKIPPED, reason)


def _insert_batch(rows: Sequence[Occurrence]) -> list[UUID]:
    if not rows:
        return []
    columns = _unnest(_column_values(rows), key="id")
    names = ", ".join(f'"{field.column}"' for field, _ in _occurrence_columns())
    sql = (
        f'INSERT INTO "{Occurrence._meta.db_table}" ({names}) '
        f"SELECT {', '.join(columns.values)} FROM {columns.source} "
        "ON CONFLICT DO NOTHING RETURNING id"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, columns.params)
        return [row[0] for row in cursor.fetchall()]


@dataclass(frozen=True)
class _Unnested:
    values: list[str]
    """Per column, the SQL that gives a row's value: an element of the row, or a parameter."""
    source: str
    """``jsonb_array_elements(...) AS v(r)``: one JSON array per row."""
    params: list[Any]
    """The parameters in statement order: the single values first, then the document."""


Column = tuple[str, str, list[Any]]
"""(column, SQL type, the rows' values); the type ``jsonb`` for a JSON column, whose values
are Python's (a dict, a list...), sent as JSON inside the document."""
_NATIVE = frozenset({str, int, float, bool, type(None)})
"""What the document holds as itself; a value of any other type (a UUID, a datetime) as its
``str()``, text PostgreSQL reads back exactly."""


def _unnest(columns: Iterable[Column], *, key: str) -> _Unnested:
    """Rows given column by column, sent as one JSON document of one array per row.

    A column with the same value in every row (a state, a counter, ``created_at``...) is sent
    as one parameter instead: what varies is what costs. The ``key`` column always varies, so
    there is always a document. One JSON string is what the client quotes, instead of one
    array per column whose every element psycopg adapts in Python; PostgreSQL casts each
    element's text to the column's type, as it would cast a parameter. A JSON column's values
    sit in the document as JSON (``v.r -> n``, no text parsed again); one is the same for
    every row only when it is the same object (a schedule's payload, shared by its rows), as
    ``1`` and ``1.0``, or ``True`` and ``1``, are equal in Python but not in JSON. The document
    is encoded strictly: a payload value JSON cannot hold raises ``TypeError`` (the row's
    schedule is parked), as encoding it alone did.
    """
    values: list[str] = []
    singles: list[Any] = []
    varying: list[list[Any]] = []
    for column, sql_type, column_values in columns:
        first = column_values[0]
        if sql_type == "jsonb":
            if column != key and all(value is first for value in column_values):
                values.append("%s::jsonb")
                singles.append(json.dumps(first))
                continue
            values.append(f"(v.r->{len(varying)})")
            varying.append(column_values)
            continue
        if column != key and all(value == first for value in column_values):
            values.append(f"%s::{sql_type}")
            singles.append(first)
            continue
        values.append(f"(v.r->>{len(varying)})::{sql_type}")
        varying.append(
            column_values
            if all(type(value) in _NATIVE for value in column_values)
            else [_scalar(value) for value in column_values]
        )
    document = json.dumps(list(zip(*varying, strict=True)))
    return _Unnested(values, "jsonb_array_elements(%s::jsonb) AS v(r)", [*singles, document])


def _scalar(value: Any) -> Any:
    """A non-JSON column's value as the document holds it: what JSON encodes as itself
    (``str``, ``int`` and ``float`` subclasses too: an enum is its value, as before), else its
    ``str()`` (a UUID, a datetime, a Decimal), as the former ``default=str`` did."""
    if type(value) in _NATIVE or isinstance(value, (str, int, float)):
        return value
    return str(value)


def _column_values(rows: Sequence[Occurrence]) -> Iterator[Column]:
    """(column, SQL type, the rows' values) for every column of the occurrence table."""
    for field, sql_type in _occurrence_columns():
        yield field.column, sql_type, [getattr(row, field.attname) for row in rows]


@cache
def _occurrence_columns() -> list[tuple[Field[Any, Any], str]]:
    """Each concrete field of ``Occurrence`` with the PostgreSQL type its values are cast to."""
    return [(field, _cast_type(field)) for field in Occurrence._meta.concrete_fields]


def _cast_type(field: Field[Any, Any]) -> str:
    if isinstance(field, JSONField):
        if field.encoder is not None:  # pragma: no cover - the ledger's JSON fields have none
            raise TypeError(f"{field.name}: a JSON field with its own encoder")
        return "jsonb"  # the values are sent as JSON
    db_type = str(field.db_type(connection))
    # An explicit cast to varchar(n) would cut a longer value silently; a cast to text leaves
    # the length check to the column, which refuses it as an INSERT of the row would.
    return "text" if db_type.startswith("varchar") else db_type


_SQL_TYPES = {
    "next_run_at": "timestamptz",
    "last_scheduled_for": "timestamptz",
    "status": "text",
    "missed_count": "bigint",
    "skipped_count": "bigint",
    "caught_up_count": "bigint",
    "occurrence_count": "bigint",
    "last_error": "text",
    "updated_at": "timestamptz",
}


def save_advanced(schedules: list[Schedule]) -> None:
    """Write the advanced fields of a claimed batch in one statement.

    On PostgreSQL one ``UPDATE ... FROM jsonb_array_elements(...)`` (Django's ``bulk_update``
    builds a CASE expression per field and row, the slowest part of a burst); elsewhere
    ``bulk_update``. Only the schedule's runtime table is written (``ScheduleRuntime``: every
    advanced field is there), never the wide definition table.
    """
    if connection.vendor != "postgresql":
        ScheduleRuntime.objects.bulk_update(schedules, ADVANCE_FIELDS, batch_size=1000)
        return
    columns = [("id", "uuid", [schedule.pk for schedule in schedules])] + [
        (_column(name), _SQL_TYPES[name], [getattr(schedule, name) for schedule in schedules])
        for name in ADVANCE_FIELDS
    ]
    unnested = _unnest(columns, key="id")
    assignments = ", ".join(
        f'"{column}" = {value}'
        for (column, _, _), value in zip(columns[1:], unnested.values[1:], strict=True)
    )
    sql = (
        f'UPDATE "{ScheduleRuntime._meta.db_table}" AS s SET {assignments} '
        f"FROM {unnested.source} WHERE s.id = {unnested.values[0]}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, unnested.params)


def _column(name: str) -> str:
    field = ScheduleRuntime._meta.get_field(name)
    if not isinstance(field, Field):  # pragma: no cover - ADVANCE_FIELDS are concrete
        raise TypeError(f"{name} is not a concrete field")
    return field.column
