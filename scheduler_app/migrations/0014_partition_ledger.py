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

Every other index and constraint is read from the catalog and made again on the new table
(``scheduler_app.partitions.convert``), so nothing is forgotten. The whole migration runs in one
transaction and takes an exclusive lock on the ledger: run it while the beat and workers are
stopped (docs/partitions.md gives the time per million rows). It is reversible: backwards makes
one plain table again with the original keys.

SQLite and other databases: only the ``occ_key_unique`` change and the attempt's foreign key.
"""

from __future__ import annotations

from typing import Any

import django.db.models.deletion
from django.db import migrations, models

from scheduler_app.partitions import convert
from scheduler_app.partitions.convert import UnlessPostgres

TABLE = "scheduler_app_occurrence"
KEY = convert.KEY
AHEAD_MONTHS = 3
OLDEST_MONTHS = 120
"""Rows older than this many months before today go to the DEFAULT partition, not to one
partition per month (a stray slot in 1970 must not make 600 empty tables)."""


def month_partitions(cursor: Any) -> list[tuple[str, str]]:
    """(suffix, bound) of the monthly partitions for the ledger's rows, up to
    ``AHEAD_MONTHS`` after the current month, and DEFAULT."""
    cursor.execute(
        f"""
        WITH bounds AS (
            SELECT date_trunc('month', now() AT TIME ZONE 'UTC') AS this_month,
                   date_trunc('month', min({KEY}) AT TIME ZONE 'UTC') AS oldest
            FROM {TABLE}
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
    months = [
        (f"p{stamp}", f"FOR VALUES FROM ('{start}') TO ('{end}')")
        for stamp, start, end in cursor.fetchall()
    ]
    return [*months, ("default", "DEFAULT")]


def partition(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        convert.partition(cursor, TABLE, month_partitions(cursor))


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
        migrations.RunPython(partition, convert.unpartition_step(TABLE)),
    ]
