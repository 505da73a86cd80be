# The admin's monitoring page: an index on the slot instant, so its time-window queries
# ("occurrences of the last hour / day") read only that window, with ten million rows as with
# ten thousand. Raw SQL (not Meta.indexes): the model state stays the shared one.
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("scheduler_app", "0004_reliability")]

    operations = [
        migrations.RunSQL(
            "CREATE INDEX IF NOT EXISTS occ_slot_idx ON scheduler_app_occurrence (scheduled_for)",
            reverse_sql="DROP INDEX IF EXISTS occ_slot_idx",
        ),
        # "Skipped in the last day, by reason": only the skipped rows of the window (1.6 s ->
        # 0.15 s with ten million occurrences).
        migrations.RunSQL(
            "CREATE INDEX IF NOT EXISTS occ_skipped_idx ON scheduler_app_occurrence "
            "(scheduled_for, reason) WHERE state = 'skipped'",
            reverse_sql="DROP INDEX IF EXISTS occ_skipped_idx",
        ),
        # The schedule list is ordered by next run: page 1 of 100,000 without a sort.
        migrations.RunSQL(
            "CREATE INDEX IF NOT EXISTS sched_next_run_idx ON scheduler_app_schedule (next_run_at)",
            reverse_sql="DROP INDEX IF EXISTS sched_next_run_idx",
        ),
    ]
