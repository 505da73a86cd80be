# The three indexes that 0005 made with raw SQL, now in the model state: SQLite adds a column or
# a constraint by rebuilding the table, and a rebuild keeps only the indexes the state knows
# (0010 and 0011 each dropped them there). The database side creates them only where missing.

from django.conf import settings
from django.db import migrations, models

SQL = [
    "CREATE INDEX IF NOT EXISTS occ_slot_idx ON scheduler_app_occurrence (scheduled_for)",
    "CREATE INDEX IF NOT EXISTS occ_skipped_idx ON scheduler_app_occurrence "
    "(scheduled_for, reason) WHERE state = 'skipped'",
    "CREATE INDEX IF NOT EXISTS sched_next_run_idx ON scheduler_app_schedule (next_run_at)",
]


class Migration(migrations.Migration):

    dependencies = [
        ('scheduler_app', '0011_target_check'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(sql, reverse_sql=migrations.RunSQL.noop) for sql in SQL
            ],
            state_operations=[
                migrations.AddIndex(
                    model_name='occurrence',
                    index=models.Index(fields=['scheduled_for'], name='occ_slot_idx'),
                ),
                migrations.AddIndex(
                    model_name='occurrence',
                    index=models.Index(condition=models.Q(('state', 'skipped')), fields=['scheduled_for', 'reason'], name='occ_skipped_idx'),
                ),
                migrations.AddIndex(
                    model_name='schedule',
                    index=models.Index(fields=['next_run_at'], name='sched_next_run_idx'),
                ),
            ],
        ),
    ]
