"""The attempt history partitioned like the ledger (issue 22), on PostgreSQL only.

Each attempt gets its occurrence's slot, ``scheduled_for``, and on PostgreSQL the table becomes
``PARTITION BY RANGE (scheduled_for)`` with the same partitions as the ledger (migration 0014):
``scheduler_app_occurrenceattempt_p20261101`` beside ``scheduler_app_occurrence_p20261101``.
The beat creates both ahead together, and retention detaches and drops the month of attempts
with its month of occurrences instead of deleting the attempts row by row
(``scheduler_app.partitions``). The primary key becomes ``(id, scheduled_for)`` in the database;
Django still reads ``id``, a sequence.

Existing attempts take their occurrence's slot; an attempt whose occurrence is gone (there is
no database constraint since 0014) takes its own start. On PostgreSQL the slot is filled while
the rows are copied into the new table, in one transaction holding the table exclusively: stop
the workers while it runs. Backwards makes one plain table again and drops the column.

SQLite and other databases: the column, filled by a subquery.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations, models

from scheduler_app.partitions import convert
from scheduler_app.partitions.convert import UnlessPostgres

TABLE = "scheduler_app_occurrenceattempt"
LEDGER = "scheduler_app_occurrence"


def partition(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        fill(apps, schema_editor.connection.alias)
        return
    with schema_editor.connection.cursor() as cursor:
        if not convert.is_partitioned(cursor, LEDGER):
            raise RuntimeError(f"{LEDGER} is not partitioned: migration 0014 did not run")
        cursor.execute(
            "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 "
            "AND NOT attisdropped ORDER BY attnum",
            [TABLE],
        )
        names = [name for (name,) in cursor.fetchall()]
        picked = ", ".join(
            f"COALESCE(o.{convert.KEY}, a.started_at)" if name == convert.KEY else f'a."{name}"'
            for name in names
        )
        select = (
            f"SELECT {picked} FROM {TABLE}_unpartitioned a "
            f"LEFT JOIN {LEDGER} o ON o.id = a.occurrence_id"
        )
        convert.partition(cursor, TABLE, convert.bounds_of(cursor, LEDGER), select=select)


def fill(apps: Any, alias: str) -> None:
    attempt = apps.get_model("scheduler_app", "OccurrenceAttempt")
    occurrence = apps.get_model("scheduler_app", "Occurrence")
    slot = models.Subquery(
        occurrence.objects.using(alias)
        .filter(pk=models.OuterRef("occurrence_id"))
        .values("scheduled_for")[:1]
    )
    attempt.objects.using(alias).update(
        scheduled_for=models.functions.Coalesce(slot, "started_at")
    )


class Migration(migrations.Migration):
    dependencies = [("scheduler_app", "0015_schedule_last_success")]

    operations = [
        migrations.AddField(
            model_name="occurrenceattempt",
            name="scheduled_for",
            field=models.DateTimeField(
                null=True, help_text="The occurrence's slot (its scheduled_for)."
            ),
        ),
        migrations.RunPython(partition, convert.unpartition_step(TABLE)),
        # On PostgreSQL the partitioning made the column NOT NULL already, and it cannot be
        # dropped there while the primary key (id, scheduled_for) holds it; backwards, the
        # plain table is made again and the column removed with its NOT NULL.
        UnlessPostgres(
            [
                migrations.AlterField(
                    model_name="occurrenceattempt",
                    name="scheduled_for",
                    field=models.DateTimeField(help_text="The occurrence's slot (its scheduled_for)."),
                ),
            ]
        ),
    ]
