# Owned by one workstream; hand-written operations only (see docs/reference.md for the schema).
import uuid

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("scheduler_app", "0002_shared_fields")]

    operations = [
        migrations.CreateModel(
            name="BeatHeartbeat",
            fields=[
                ("id", models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ("host", models.CharField(max_length=200)),
                ("pid", models.PositiveIntegerField()),
                ("version", models.CharField(help_text="The package version it runs.", max_length=50)),
                ("started_at", models.DateTimeField()),
                ("last_tick_at", models.DateTimeField()),
                ("last_batch_size", models.PositiveIntegerField(default=0, help_text="Occurrences created + published by its last busy tick.")),
                ("last_error", models.TextField(blank=True, default="")),
                ("last_error_at", models.DateTimeField(blank=True, null=True)),
                ("clock_skew", models.FloatField(blank=True, help_text="Database clock minus host clock, seconds (PostgreSQL).", null=True)),
                ("stopped_at", models.DateTimeField(blank=True, null=True)),
            ],
            options={
                "indexes": [models.Index(fields=["last_tick_at"], name="beat_last_tick_idx")],
            },
        ),
        migrations.CreateModel(
            name="KillSwitch",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("scope", models.CharField(choices=[("global", "global: every schedule"), ("tenant", "tenant: every schedule of one tenant"), ("task", "task: every schedule targeting one task name")], max_length=10)),
                ("target", models.CharField(blank=True, default="", help_text="Tenant or task name; empty for global.", max_length=200)),
                ("enabled", models.BooleanField(default=True)),
                ("reason", models.TextField(blank=True, default="")),
                ("changed_by", models.CharField(blank=True, default="", max_length=150)),
                ("changed_at", models.DateTimeField()),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(fields=("scope", "target"), name="killswitch_unique"),
                    models.CheckConstraint(
                        condition=models.Q(("scope", "global"), ("target", ""))
                        | models.Q(models.Q(("scope", "global"), _negated=True), models.Q(("target", ""), _negated=True)),
                        name="killswitch_target",
                    ),
                ],
            },
        ),
        migrations.CreateModel(
            name="KillSwitchEvent",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("scope", models.CharField(choices=[("global", "global: every schedule"), ("tenant", "tenant: every schedule of one tenant"), ("task", "task: every schedule targeting one task name")], max_length=10)),
                ("target", models.CharField(blank=True, default="", max_length=200)),
                ("enabled", models.BooleanField()),
                ("by", models.CharField(max_length=150)),
                ("at", models.DateTimeField()),
                ("reason", models.TextField()),
            ],
            options={
                "indexes": [models.Index(fields=["-at"], name="killswitch_event_at_idx")],
            },
        ),
        migrations.CreateModel(
            name="TenantQuota",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("tenant", models.CharField(max_length=100, unique=True)),
                ("max_active_schedules", models.PositiveIntegerField(blank=True, null=True)),
                ("max_occurrences_per_hour", models.PositiveIntegerField(blank=True, null=True)),
            ],
        ),
    ]
