# Owned by the reliability workstream; hand-written operations only (see docs/reference.md).
# Sane maxima for every numeric field of a schedule: validators (field errors in forms) and
# check constraints (the database refuses out-of-range values written any other way).
import django.core.validators
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("scheduler_app", "0003_operations")]

    operations = [
        migrations.AlterField(
            model_name="schedule",
            name="cancel_grace",
            field=models.PositiveIntegerField(
                default=60,
                help_text="cancel_previous: seconds the old run gets to stop.",
                validators=[
                    django.core.validators.MinValueValidator(0),
                    django.core.validators.MaxValueValidator(86400),
                ],
            ),
        ),
        migrations.AlterField(
            model_name="schedule",
            name="catch_up_limit",
            field=models.PositiveIntegerField(
                default=12,
                validators=[
                    django.core.validators.MinValueValidator(1),
                    django.core.validators.MaxValueValidator(1000),
                ],
            ),
        ),
        migrations.AlterField(
            model_name="schedule",
            name="catch_up_window",
            field=models.PositiveIntegerField(
                default=86400,
                help_text="Seconds.",
                validators=[
                    django.core.validators.MinValueValidator(0),
                    django.core.validators.MaxValueValidator(604800),
                ],
            ),
        ),
        migrations.AlterField(
            model_name="schedule",
            name="cost_estimate",
            field=models.FloatField(
                blank=True,
                help_text="Estimated cost of one run (backfill estimates).",
                null=True,
                validators=[
                    django.core.validators.MinValueValidator(0.0),
                    django.core.validators.MaxValueValidator(1000000000000.0),
                ],
            ),
        ),
        migrations.AlterField(
            model_name="schedule",
            name="deadline",
            field=models.PositiveIntegerField(
                blank=True,
                help_text="Freshness budget after scheduled_for, in seconds.",
                null=True,
                validators=[
                    django.core.validators.MinValueValidator(0),
                    django.core.validators.MaxValueValidator(31622400),
                ],
            ),
        ),
        migrations.AlterField(
            model_name="schedule",
            name="expected_every",
            field=models.PositiveIntegerField(
                blank=True,
                help_text="Monitoring: a successful run is expected at least this often, in seconds.",
                null=True,
                validators=[
                    django.core.validators.MinValueValidator(1),
                    django.core.validators.MaxValueValidator(31622400),
                ],
            ),
        ),
        migrations.AlterField(
            model_name="schedule",
            name="jitter",
            field=models.PositiveIntegerField(
                default=0,
                help_text="Up to this many seconds of delay.",
                validators=[
                    django.core.validators.MinValueValidator(0),
                    django.core.validators.MaxValueValidator(86400),
                ],
            ),
        ),
        migrations.AlterField(
            model_name="schedule",
            name="max_attempts",
            field=models.PositiveIntegerField(
                default=3,
                help_text="Attempts in all, retries included.",
                validators=[
                    django.core.validators.MinValueValidator(1),
                    django.core.validators.MaxValueValidator(100),
                ],
            ),
        ),
        migrations.AlterField(
            model_name="schedule",
            name="max_count",
            field=models.PositiveIntegerField(
                blank=True,
                null=True,
                validators=[
                    django.core.validators.MinValueValidator(1),
                    django.core.validators.MaxValueValidator(1000000),
                ],
            ),
        ),
        migrations.AlterField(
            model_name="schedule",
            name="max_lateness",
            field=models.PositiveIntegerField(
                default=60,
                help_text="Grace, in seconds.",
                validators=[
                    django.core.validators.MinValueValidator(0),
                    django.core.validators.MaxValueValidator(604800),
                ],
            ),
        ),
        migrations.AlterField(
            model_name="schedule",
            name="max_per_day",
            field=models.PositiveIntegerField(
                blank=True,
                help_text="Quota: occurrences per day at most.",
                null=True,
                validators=[
                    django.core.validators.MinValueValidator(1),
                    django.core.validators.MaxValueValidator(100000),
                ],
            ),
        ),
        migrations.AlterField(
            model_name="schedule",
            name="pause_after_failures",
            field=models.PositiveIntegerField(
                blank=True,
                help_text="Pause after this many consecutive terminal failures.",
                null=True,
                validators=[
                    django.core.validators.MinValueValidator(1),
                    django.core.validators.MaxValueValidator(10000),
                ],
            ),
        ),
        migrations.AlterField(
            model_name="schedule",
            name="retry_delay",
            field=models.PositiveIntegerField(
                default=10,
                help_text="Seconds before the first retry; doubles each time, with jitter.",
                validators=[
                    django.core.validators.MinValueValidator(0),
                    django.core.validators.MaxValueValidator(86400),
                ],
            ),
        ),
        migrations.AddConstraint(
            model_name="schedule",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("cost_estimate__isnull", True),
                    models.Q(("cost_estimate__gte", 0), ("cost_estimate__lte", 1000000000000.0)),
                    _connector="OR",
                ),
                name="sched_cost_estimate_range",
            ),
        ),
        migrations.AddConstraint(
            model_name="schedule",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("max_lateness__gte", 0), ("max_lateness__lte", 604800)),
                    ("max_lateness__isnull", True),
                    _connector="OR",
                ),
                name="sched_max_lateness_range",
            ),
        ),
        migrations.AddConstraint(
            model_name="schedule",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("catch_up_window__gte", 0), ("catch_up_window__lte", 604800)),
                    ("catch_up_window__isnull", True),
                    _connector="OR",
                ),
                name="sched_catch_up_window_range",
            ),
        ),
        migrations.AddConstraint(
            model_name="schedule",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("catch_up_limit__gte", 1), ("catch_up_limit__lte", 1000)),
                    ("catch_up_limit__isnull", True),
                    _connector="OR",
                ),
                name="sched_catch_up_limit_range",
            ),
        ),
        migrations.AddConstraint(
            model_name="schedule",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("max_attempts__gte", 1), ("max_attempts__lte", 100)),
                    ("max_attempts__isnull", True),
                    _connector="OR",
                ),
                name="sched_max_attempts_range",
            ),
        ),
        migrations.AddConstraint(
            model_name="schedule",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("retry_delay__gte", 0), ("retry_delay__lte", 86400)),
                    ("retry_delay__isnull", True),
                    _connector="OR",
                ),
                name="sched_retry_delay_range",
            ),
        ),
        migrations.AddConstraint(
            model_name="schedule",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("cancel_grace__gte", 0), ("cancel_grace__lte", 86400)),
                    ("cancel_grace__isnull", True),
                    _connector="OR",
                ),
                name="sched_cancel_grace_range",
            ),
        ),
        migrations.AddConstraint(
            model_name="schedule",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("deadline__gte", 0), ("deadline__lte", 31622400)),
                    ("deadline__isnull", True),
                    _connector="OR",
                ),
                name="sched_deadline_range",
            ),
        ),
        migrations.AddConstraint(
            model_name="schedule",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("jitter__gte", 0), ("jitter__lte", 86400)),
                    ("jitter__isnull", True),
                    _connector="OR",
                ),
                name="sched_jitter_range",
            ),
        ),
        migrations.AddConstraint(
            model_name="schedule",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("expected_every__gte", 1), ("expected_every__lte", 31622400)),
                    ("expected_every__isnull", True),
                    _connector="OR",
                ),
                name="sched_expected_every_range",
            ),
        ),
        migrations.AddConstraint(
            model_name="schedule",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("max_count__gte", 1), ("max_count__lte", 1000000)),
                    ("max_count__isnull", True),
                    _connector="OR",
                ),
                name="sched_max_count_range",
            ),
        ),
        migrations.AddConstraint(
            model_name="schedule",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("max_per_day__gte", 1), ("max_per_day__lte", 100000)),
                    ("max_per_day__isnull", True),
                    _connector="OR",
                ),
                name="sched_max_per_day_range",
            ),
        ),
        migrations.AddConstraint(
            model_name="schedule",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(
                        ("pause_after_failures__gte", 1), ("pause_after_failures__lte", 10000)
                    ),
                    ("pause_after_failures__isnull", True),
                    _connector="OR",
                ),
                name="sched_pause_after_failures_range",
            ),
        ),
    ]
