"""The occurrence ledger partitioned by ``scheduled_for`` (issue 22), on PostgreSQL only.

PostgreSQL: the table becomes ``PARTITION BY RANGE (scheduled_for)`` with one partition per
month holding existing rows (from the oldest slot, at most ten years back, to three months after
today) and a ``DEFAULT`` partition for the rest; the beat creates later partitions ahead and
moves rows out of ``DEFAULT`` (``scheduler_app.partitions``). A unique index of a partitioned
table must contain the partition key, so:

- the primary key becomes ``(id, scheduled_for)`` in the database (Django still reads ``id``:
  it stays unique because it is a UUIDv5 of the idempotency key, which contains the slot);
- ``occ_key_unique`` becomes ``(idempotency_key, scheduled_for)`` on every database (the key is
  derived from the schedule id and the slot, so the pair is as unique as the key alone);
- a foreign key can no longer point at ``id`` alone: the attempt history's ``occurrence`` keeps
  its column and index but loses the database constraint (Django still cascades deletes).

Every other index and constraint is read from the catalog (``pg_index``, ``pg_constraint``) and
made again on the new table, so nothing is forgotten. The whole migration runs in one
transaction and takes an exclusive lock on the ledger: run it while the beat and workers are
stopped (docs/partitions.md gives the time per million rows). It is reversible: backwards makes
one plain table again with the original keys.

SQLite and other databases: only the ``occ_key_unique`` change and the attempt's foreign key.
"""

from __future__ import annotations

import re
from typing import Any

import django.db.models.deletion
from django.db import migrations, models

TABLE = "scheduler_app_occurrence"
KEY = "scheduled_for"
AHEAD_MONTHS = 3
OLDEST_MONTHS = 120
"""Rows older than this many months before today go to the DEFAULT partition, not to one
partition per month (a stray slot in 1970 must not make 600 empty tables)."""
KEYED = re.compile(r"^(PRIMARY KEY|UNIQUE) \((?P<columns>[^)]*)\)(?P<rest>.*)$")


class UnlessPostgres(migrations.SeparateDatabaseAndState):
    """Operations whose database side runs everywhere but on PostgreSQL, where the
    partitioning step below makes the same change in the new table."""

    def __init__(self, operations: list[Any]) -> None:
        super().__init__(database_operations=operations, state_operations=operations)

    def deconstruct(self) -> tuple[str, list[Any], dict[str, Any]]:
        return type(self).__qualname__, [self.database_operations], {}

    def database_forwards(self, app_label: str, schema_editor: Any, *args: Any) -> None:
        if schema_editor.connection.vendor != "postgresql":
            super().database_forwards(app_label, schema_editor, *args)

    def database_backwards(self, app_label: str, schema_editor: Any, *args: Any) -> None:
        if schema_editor.connection.vendor != "postgresql":
            super().database_backwards(app_label, schema_editor, *args)


def with_key(definition: str) -> str:
    """``PRIMARY KEY (id)`` -> ``PRIMARY KEY (id, scheduled_for)``; other definitions as they are."""
    match = KEYED.match(definition)
    if match is None:
        return definition
    columns = [column.strip() for column in match["columns"].split(",")]
    if KEY in columns:
        return definition
    return f"{match[1]} ({', '.join([*columns, KEY])}){match['rest']}"


def without_key(definition: str) -> str:
    """The reverse of ``with_key``: the partition key leaves a primary key or unique
    constraint that has other columns."""
    match = KEYED.match(definition)
    if match is None:
        return definition
    columns = [column.strip() for column in match["columns"].split(",")]
    if KEY not in columns or len(columns) == 1:
        return definition
    columns.remove(KEY)
    return f"{match[1]} ({', '.join(columns)}){match['rest']}"


def catalog(cursor: Any) -> tuple[list[str], list[tuple[str, str]]]:
    """The ledger's indexes that back no constraint (their CREATE statements) and its
    constraints (name, definition), primary key first, foreign keys last."""
    cursor.execute(
        """
        SELECT pg_get_indexdef(x.indexrelid) FROM pg_index x
        JOIN pg_class i ON i.oid = x.indexrelid
        WHERE x.indrelid = %s::regclass
          AND NOT EXISTS (SELECT 1 FROM pg_constraint c
                          WHERE c.conindid = x.indexrelid AND c.conrelid = x.indrelid)
        ORDER BY i.relname
        """,
        [TABLE],
    )
    indexes = [row[0] for row in cursor.fetchall()]
    cursor.execute(
        """
        SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint
        WHERE conrelid = %s::regclass AND contype IN ('p', 'u', 'c', 'f', 'x')
        ORDER BY position(contype::text in 'puxcf'), conname
        """,
        [TABLE],
    )
    return indexes, list(cursor.fetchall())


def refuse_foreign_keys_to_ledger(cursor: Any) -> None:
    cursor.execute(
        "SELECT conname, conrelid::regclass::text FROM pg_constraint "
        "WHERE confrelid = %s::regclass AND contype = 'f'",
        [TABLE],
    )
    rows = cursor.fetchall()
    if rows:
        named = ", ".join(f"{name} on {table}" for name, table in rows)
        raise RuntimeError(
            f"foreign keys point at {TABLE} ({named}): a partitioned table's id is not unique "
            "on its own, so they cannot stay. Make them db_constraint=False in their models "
            "(or drop them) and migrate again."
        )


def month_partitions(cursor: Any, source: str) -> list[tuple[str, str, str]]:
    """(name, from, to) of the monthly partitions for the rows in ``source``, up to
    ``AHEAD_MONTHS`` after the current month."""
    cursor.execute(
        f"""
        WITH bounds AS (
            SELECT date_trunc('month', now() AT TIME ZONE 'UTC') AS this_month,
                   date_trunc('month', min({KEY}) AT TIME ZONE 'UTC') AS oldest
            FROM {source}
        )
        SELECT to_char(m, 'YYYYMMDD'), m::text || '+00', (m + interval '1 month')::text || '+00'
        FROM bounds, generate_series(
            GREATEST(LEAST(COALESCE(oldest, this_month), this_month),
                     this_month - %s * interval '1 month'),
            this_month + %s * interval '1 month',
            interval '1 month'
        ) AS m
        """,
        [OLDEST_MONTHS, AHEAD_MONTHS],
    )
    return [(f"{TABLE}_p{stamp}", start, end) for stamp, start, end in cursor.fetchall()]


def rebuild(cursor: Any, indexes: list[str], constraints: list[tuple[str, str]]) -> None:
    for name, definition in constraints:
        cursor.execute(f'ALTER TABLE {TABLE} ADD CONSTRAINT "{name}" {definition}')
    for statement in indexes:
        cursor.execute(statement)


def partition(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        refuse_foreign_keys_to_ledger(cursor)
        indexes, constraints = catalog(cursor)
        for statement in indexes:
            if statement.startswith("CREATE UNIQUE") and KEY not in statement:
                raise RuntimeError(f"a unique index without {KEY} cannot be partitioned: {statement}")
        old = f"{TABLE}_unpartitioned"
        cursor.execute(f"ALTER TABLE {TABLE} RENAME TO {old}")
        cursor.execute(
            f"CREATE TABLE {TABLE} (LIKE {old} INCLUDING DEFAULTS INCLUDING STORAGE "
            f"INCLUDING COMMENTS) PARTITION BY RANGE ({KEY})"
        )
        for name, start, end in month_partitions(cursor, old):
            cursor.execute(
                f"CREATE TABLE {name} PARTITION OF {TABLE} FOR VALUES FROM (%s) TO (%s)",
                [start, end],
            )
        cursor.execute(f"CREATE TABLE {TABLE}_default PARTITION OF {TABLE} DEFAULT")
        # Rows first, then the indexes and checks: one build per index instead of a row at a time.
        cursor.execute(f"INSERT INTO {TABLE} SELECT * FROM {old}")
        cursor.execute(f"DROP TABLE {old}")
        rebuild(cursor, indexes, [(name, with_key(text)) for name, text in constraints])


def unpartition(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        indexes, constraints = catalog(cursor)
        old = f"{TABLE}_partitioned"
        cursor.execute(f"ALTER TABLE {TABLE} RENAME TO {old}")
        cursor.execute(
            f"CREATE TABLE {TABLE} (LIKE {old} INCLUDING DEFAULTS INCLUDING STORAGE "
            "INCLUDING COMMENTS)"
        )
        cursor.execute(f"INSERT INTO {TABLE} SELECT * FROM {old}")
        cursor.execute(f"DROP TABLE {old}")  # and its partitions
        plain = [statement.replace(" ON ONLY ", " ON ", 1) for statement in indexes]
        rebuild(cursor, plain, [(name, without_key(text)) for name, text in constraints])


class Migration(migrations.Migration):
    dependencies = [
        ("scheduler_app", "0013_ledger_indexes"),
    ]

    operations = [
        migrations.AlterField(
            model_name="occurrenceattempt",
            name="occurrence",
            field=models.ForeignKey(
                db_constraint=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="attempt_history",
                to="scheduler_app.occurrence",
            ),
        ),
        UnlessPostgres(
            [
                migrations.RemoveConstraint(model_name="occurrence", name="occ_key_unique"),
                migrations.AddConstraint(
                    model_name="occurrence",
                    constraint=models.UniqueConstraint(
                        fields=("idempotency_key", "scheduled_for"), name="occ_key_unique"
                    ),
                ),
            ]
        ),
        migrations.RunPython(partition, unpartition),
    ]
