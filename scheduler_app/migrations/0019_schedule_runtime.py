"""A schedule's runtime in a narrow table of its own: ``scheduler_app_schedule_runtime`` holds
what the beat and the worker update (status, interval mode, next run, last slot, the counters,
the last error, ``updated_at``), the schedule table keeps the definition, and ``Schedule``
inherits from ``ScheduleRuntime`` (its ``id`` column becomes the parent link, so every foreign
key to the schedule table stays as it is).

The runtime table is created, each schedule's values copied into it, the columns dropped from
the schedule table, and the schedule's ``id`` made a foreign key to the runtime table. Django
has no operation that changes a model's bases: ``Reparent`` changes the state and turns the
column into the link. The reverse copies the values back before dropping the runtime table."""

import uuid

from django.db import migrations, models
from django.db.migrations.operations.base import Operation

STATUSES = [
    ("active", "active: produces occurrences"),
    ("paused", "paused: no new occurrences until resumed"),
    ("completed", "completed: the rule has no more slots"),
    ("cancelled", "cancelled: no future occurrences, history kept"),
    ("awaiting_approval", "awaiting approval: this version waits for a user with approve_schedule"),
]
INTERVAL_MODES = [
    ("fixed_rate", "fixed rate: slots on a grid, whatever the run length"),
    ("fixed_delay", "fixed delay: the next slot is the previous completion + N"),
]

SCHEDULE = "scheduler_app_schedule"
RUNTIME = "scheduler_app_schedule_runtime"
RUNTIME_FIELDS = [
    ("status", models.CharField(choices=STATUSES, default="active", max_length=20)),
    (
        "interval_mode",
        models.CharField(choices=INTERVAL_MODES, default="fixed_rate", max_length=12),
    ),
    ("next_run_at", models.DateTimeField(blank=True, null=True)),
    (
        "last_scheduled_for",
        models.DateTimeField(
            blank=True, help_text="The last slot handled (run or skipped).", null=True
        ),
    ),
    *(
        (counter, models.PositiveBigIntegerField(default=0))
        for counter in ("missed_count", "skipped_count", "caught_up_count", "occurrence_count")
    ),
    ("last_error", models.TextField(blank=True, default="")),
    ("updated_at", models.DateTimeField()),
]
MOVED = tuple(name for name, _ in RUNTIME_FIELDS)
"""The schedule's columns that move to the runtime table (its ``id`` is the runtime's too)."""


def copy_forward(apps, schema_editor):
    columns = ", ".join(("id", *MOVED))
    schema_editor.execute(f"INSERT INTO {RUNTIME} ({columns}) SELECT {columns} FROM {SCHEDULE}")


def copy_back(apps, schema_editor):
    values = ", ".join(
        f"{name} = (SELECT r.{name} FROM {RUNTIME} r WHERE r.id = {SCHEDULE}.id)" for name in MOVED
    )
    schema_editor.execute(f"UPDATE {SCHEDULE} SET {values}")


class Reparent(Operation):
    """``Schedule`` becomes a child of ``ScheduleRuntime``: its ``id`` field becomes the parent
    link ``runtime_ptr`` (the same column, now a foreign key to the runtime table)."""

    reversible = True

    def state_forwards(self, app_label, state):
        model = state.models[app_label, "schedule"]
        link = models.OneToOneField(
            on_delete=models.CASCADE,
            parent_link=True,
            primary_key=True,
            db_column="id",
            serialize=False,
            to="scheduler_app.scheduleruntime",
        )
        model.fields = {"runtime_ptr": link, **{k: v for k, v in model.fields.items() if k != "id"}}
        model.bases = ("scheduler_app.scheduleruntime",)
        state.reload_model(app_label, "schedule", delay=False)

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        old = from_state.apps.get_model(app_label, "schedule")
        new = to_state.apps.get_model(app_label, "schedule")
        schema_editor.alter_field(
            old, old._meta.get_field("id"), new._meta.get_field("runtime_ptr")
        )

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        old = from_state.apps.get_model(app_label, "schedule")
        new = to_state.apps.get_model(app_label, "schedule")
        # The table is remade (SQLite) from the model without a parent, which has ``id``.
        schema_editor.alter_field(
            new, old._meta.get_field("runtime_ptr"), new._meta.get_field("id")
        )

    def describe(self):
        return "Make the schedule a child of its runtime (the id becomes the parent link)"


class Migration(migrations.Migration):
    dependencies = [
        ("scheduler_app", "0018_drop_key_unique"),
    ]

    operations = [
        migrations.RemoveConstraint(model_name="schedule", name="sched_active_has_next_run"),
        migrations.RemoveIndex(model_name="schedule", name="sched_due_idx"),
        migrations.RemoveIndex(model_name="schedule", name="sched_next_run_idx"),
        migrations.CreateModel(
            name="ScheduleRuntime",
            fields=[
                (
                    "id",
                    models.UUIDField(
                        default=uuid.uuid4, editable=False, primary_key=True, serialize=False
                    ),
                ),
                *RUNTIME_FIELDS,
            ],
            options={
                "db_table": RUNTIME,
                "indexes": [
                    models.Index(
                        condition=models.Q(("status", "active")),
                        fields=["next_run_at"],
                        name="sched_due_idx",
                    ),
                    models.Index(fields=["next_run_at"], name="sched_next_run_idx"),
                ],
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(
                            models.Q(("status", "active"), _negated=True),
                            ("next_run_at__isnull", False),
                            ("interval_mode", "fixed_delay"),
                            _connector="OR",
                        ),
                        name="sched_active_has_next_run",
                    ),
                ],
            },
        ),
        # Nullable while the runtime is apart: the reverse adds the column back before it
        # copies the values into it.
        migrations.AlterField(
            model_name="schedule", name="updated_at", field=models.DateTimeField(null=True)
        ),
        migrations.RunPython(copy_forward, copy_back),
        *(migrations.RemoveField(model_name="schedule", name=name) for name in MOVED),
        Reparent(),
    ]
