"""A plain table made partitioned by range of ``scheduled_for`` and back (PostgreSQL).

Used by the migrations that partition the ledger (0014) and its attempt history (0016). They
run inside the migration's transaction, holding the table exclusively. Every index and
constraint is read from the catalog (``pg_index``, ``pg_constraint``) and made again on the
new table, so nothing is forgotten; a unique key gains the partition key (a unique index of a
partitioned table must contain it), and loses it again on the way back.

Nothing here imports the models: a migration's code must not change when the models do.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from django.db import migrations

KEY = "scheduled_for"
KEYED = re.compile(r"^(PRIMARY KEY|UNIQUE) \((?P<columns>[^)]*)\)(?P<rest>.*)$")


def with_key(definition: str) -> str:
    """``PRIMARY KEY (id)`` -> ``PRIMARY KEY (id, scheduled_for)``; others as they are."""
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


def catalog(cursor: Any, table: str) -> tuple[list[str], list[tuple[str, str]]]:
    """``table``'s indexes that back no constraint (their CREATE statements) and its
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
        [table],
    )
    indexes = [row[0] for row in cursor.fetchall()]
    cursor.execute(
        """
        SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint
        WHERE conrelid = %s::regclass AND contype IN ('p', 'u', 'c', 'f', 'x')
        ORDER BY position(contype::text in 'puxcf'), conname
        """,
        [table],
    )
    return indexes, list(cursor.fetchall())


def refuse_foreign_keys_to(cursor: Any, table: str) -> None:
    cursor.execute(
        "SELECT conname, conrelid::regclass::text FROM pg_constraint "
        "WHERE confrelid = %s::regclass AND contype = 'f'",
        [table],
    )
    rows = cursor.fetchall()
    if rows:
        named = ", ".join(f"{name} on {other}" for name, other in rows)
        raise RuntimeError(
            f"foreign keys point at {table} ({named}): a partitioned table's id is not unique "
            "on its own, so they cannot stay. Make them db_constraint=False in their models "
            "(or drop them) and migrate again."
        )


def rebuild(
    cursor: Any, table: str, indexes: list[str], constraints: list[tuple[str, str]]
) -> None:
    for name, definition in constraints:
        cursor.execute(f'ALTER TABLE {table} ADD CONSTRAINT "{name}" {definition}')
    for statement in indexes:
        cursor.execute(statement)


def partition(
    cursor: Any, table: str, partitions: list[tuple[str, str]], *, select: str = ""
) -> None:
    """Make ``table`` partitioned by range of ``scheduled_for``, with ``partitions`` (suffix,
    bound: ``FOR VALUES FROM (...) TO (...)`` or ``DEFAULT``) named ``<table>_<suffix>``.
    The rows are copied by ``select`` (a query of the old table, renamed
    ``<table>_unpartitioned``, in the new table's column order; default: every row as it is)."""
    refuse_foreign_keys_to(cursor, table)
    indexes, constraints = catalog(cursor, table)
    for statement in indexes:
        if statement.startswith("CREATE UNIQUE") and KEY not in statement:
            raise RuntimeError(f"a unique index without {KEY} cannot be partitioned: {statement}")
    counters = _counters(cursor, table)
    old = f"{table}_unpartitioned"
    cursor.execute(f"ALTER TABLE {table} RENAME TO {old}")
    cursor.execute(
        f"CREATE TABLE {table} (LIKE {old} INCLUDING DEFAULTS INCLUDING STORAGE "
        f"INCLUDING COMMENTS) PARTITION BY RANGE ({KEY})"
    )
    cursor.execute(f"ALTER TABLE {table} ALTER COLUMN {KEY} SET NOT NULL")
    for suffix, bound in partitions:
        cursor.execute(f"CREATE TABLE {table}_{suffix} PARTITION OF {table} {bound}")
    # Rows first, then the indexes and checks: one build per index instead of a row at a time.
    cursor.execute(f"INSERT INTO {table} {select or f'SELECT * FROM {old}'}")
    cursor.execute(f"DROP TABLE {old}")
    # An identity column cannot be part of a partitioned table (before PostgreSQL 17): it
    # becomes a sequence of its own, owned by the column, going on where the identity was.
    for column, last, called in counters:
        sequence = f"{table}_{column}_seq"
        cursor.execute(f"CREATE SEQUENCE {sequence} AS bigint OWNED BY {table}.{column}")
        cursor.execute(
            f"ALTER TABLE {table} ALTER COLUMN {column} SET DEFAULT nextval('{sequence}'::regclass)"
        )
        cursor.execute("SELECT setval(%s, %s, %s)", [sequence, last, called])
    rebuild(cursor, table, indexes, [(name, with_key(text)) for name, text in constraints])


def _counters(cursor: Any, table: str) -> list[tuple[str, int, bool]]:
    """The columns of ``table`` numbered by a sequence (an identity, or one the column owns),
    with the sequence's last value and whether it was used."""
    cursor.execute(
        "SELECT attname, pg_get_serial_sequence(%s, attname) FROM pg_attribute "
        "WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped",
        [table, table],
    )
    found = []
    for column, sequence in cursor.fetchall():
        if sequence is not None:
            cursor.execute(f"SELECT last_value, is_called FROM {sequence}")
            last, called = cursor.fetchone()
            found.append((column, int(last), bool(called)))
    return found


def unpartition(cursor: Any, table: str) -> None:
    """The reverse of ``partition``: one plain table with every row, the original keys."""
    indexes, constraints = catalog(cursor, table)
    counters = _counters(cursor, table)
    old = f"{table}_partitioned"
    cursor.execute(f"ALTER TABLE {table} RENAME TO {old}")
    cursor.execute(
        f"CREATE TABLE {table} (LIKE {old} INCLUDING DEFAULTS INCLUDING STORAGE INCLUDING COMMENTS)"
    )
    cursor.execute(f"INSERT INTO {table} SELECT * FROM {old}")
    for column, _, _ in counters:  # the default names the old table's sequence
        cursor.execute(f"ALTER TABLE {table} ALTER COLUMN {column} DROP DEFAULT")
    cursor.execute(f"DROP TABLE {old}")  # and its partitions, and its sequences
    for column, last, called in counters:  # an identity again, as Django made it
        cursor.execute(
            f"ALTER TABLE {table} ALTER COLUMN {column} ADD GENERATED BY DEFAULT AS IDENTITY"
        )
        cursor.execute(
            "SELECT setval(pg_get_serial_sequence(%s, %s), %s, %s)", [table, column, last, called]
        )
    plain = [statement.replace(" ON ONLY ", " ON ", 1) for statement in indexes]
    rebuild(cursor, table, plain, [(name, without_key(text)) for name, text in constraints])


def unpartition_step(table: str) -> Callable[[Any, Any], None]:
    """A migration's ``RunPython`` step that makes ``table`` plain again on PostgreSQL."""

    def step(apps: Any, schema_editor: Any) -> None:
        if schema_editor.connection.vendor != "postgresql":
            return
        with schema_editor.connection.cursor() as cursor:
            unpartition(cursor, table)

    return step


def bounds_of(cursor: Any, table: str) -> list[tuple[str, str]]:
    """The partitions of ``table`` as (suffix, bound), to give another table the same."""
    cursor.execute(
        "SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i "
        "JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = %s::regclass "
        "ORDER BY c.relname",
        [table],
    )
    return [(name.removeprefix(f"{table}_"), bound) for name, bound in cursor.fetchall()]


def is_partitioned(cursor: Any, table: str) -> bool:
    cursor.execute("SELECT relkind FROM pg_class WHERE oid = to_regclass(%s)", [table])
    row = cursor.fetchone()
    return row is not None and row[0] == "p"


class UnlessPostgres(migrations.SeparateDatabaseAndState):
    """Operations whose database side runs everywhere but on PostgreSQL, where a
    partitioning step of the same migration makes the same change in the new table."""

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
