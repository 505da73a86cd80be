"""The ledger's index audit (issue 22): two indexes nothing reads are dropped.

- ``idempotency_key``'s ``unique=True`` becomes the constraint ``occ_key_unique``: the same
  unique index, without the ``varchar_pattern_ops`` (``_like``) twin PostgreSQL gets for LIKE;
- ``schedule_id``'s own index goes: ``occ_schedule_idx`` (schedule_id, scheduled_for) leads
  with the same column and serves the same lookups.

Both run in the migration's transaction on PostgreSQL: no moment without the unique index.
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("scheduler_app", "0012_raw_indexes_in_state"),
    ]

    operations = [
        migrations.AlterField(
            model_name="occurrence",
            name="idempotency_key",
            field=models.CharField(max_length=120),
        ),
        migrations.AlterField(
            model_name="occurrence",
            name="schedule",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="occurrences",
                to="scheduler_app.schedule",
            ),
        ),
        migrations.AddConstraint(
            model_name="occurrence",
            constraint=models.UniqueConstraint(fields=("idempotency_key",), name="occ_key_unique"),
        ),
    ]
