"""Each schedule's latest success on its own row (issue 22).

The expected-run monitor and the admin read ``Schedule.last_success_at`` instead of searching
the ledger (every partition of it) for each schedule's latest successful occurrence. The worker
writes it with the outcome, under the schedule's lock (``scheduler_app.worker.sql`` and
``lifecycle.end``).

Existing rows are filled from the ledger: on PostgreSQL in one pass over it (a sequential scan
and a hash aggregate: about 10 s per 10,000,000 occurrences on a 2-CPU machine; the schedule
table is locked for its writes meanwhile), elsewhere by a subquery per schedule.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations, models
from django.db.models import Max, OuterRef, Subquery


def fill(apps: Any, schema_editor: Any) -> None:
    schedule = apps.get_model("scheduler_app", "Schedule")
    occurrence = apps.get_model("scheduler_app", "Occurrence")
    db = schema_editor.connection.alias
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            f'UPDATE "{schedule._meta.db_table}" s SET last_success_at = m.latest '
            f"FROM (SELECT schedule_id, max(finished_at) AS latest "
            f'FROM "{occurrence._meta.db_table}" WHERE state = %s GROUP BY schedule_id) m '
            "WHERE s.id = m.schedule_id",
            ["succeeded"],
        )
        return
    latest = (
        occurrence.objects.using(db)
        .filter(schedule=OuterRef("pk"), state="succeeded")
        .order_by()
        .values("schedule")
        .annotate(latest=Max("finished_at"))
        .values("latest")[:1]
    )
    schedule.objects.using(db).update(last_success_at=Subquery(latest))


class Migration(migrations.Migration):
    dependencies = [("scheduler_app", "0014_partition_ledger")]

    operations = [
        migrations.AddField(
            model_name="schedule",
            name="last_success_at",
            field=models.DateTimeField(
                blank=True,
                editable=False,
                help_text=(
                    "When an occurrence of it last succeeded: written with the outcome, under "
                    "the schedule's lock, so the monitor and the admin never search the ledger "
                    "for it."
                ),
                null=True,
            ),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop, elidable=True),
    ]
