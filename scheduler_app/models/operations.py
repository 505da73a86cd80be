"""Operations models: beat heartbeats, kill switches and their audit, tenant quotas."""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q


class BeatHeartbeat(models.Model):
    """One row per beat process: proves it is alive and says what it last did."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    host = models.CharField(max_length=200)
    pid = models.PositiveIntegerField()
    version = models.CharField(max_length=50, help_text="The package version it runs.")
    started_at = models.DateTimeField()
    last_tick_at = models.DateTimeField()
    last_batch_size = models.PositiveIntegerField(
        default=0, help_text="Occurrences created + published by its last busy tick."
    )
    last_error = models.TextField(blank=True, default="")
    last_error_at = models.DateTimeField(null=True, blank=True)
    clock_skew = models.FloatField(
        null=True, blank=True, help_text="Database clock minus host clock, seconds (PostgreSQL)."
    )
    stopped_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["last_tick_at"], name="beat_last_tick_idx")]

    def __str__(self) -> str:
        return f"beat {self.host}:{self.pid}"


class KillSwitchScope(models.TextChoices):
    GLOBAL = "global", "global: every schedule"
    TENANT = "tenant", "tenant: every schedule of one tenant"
    TASK = "task", "task: every schedule targeting one task name"


class KillSwitch(models.Model):
    """While ``enabled``, due occurrences in its scope end ``skipped: kill_switch``."""

    scope = models.CharField(max_length=10, choices=KillSwitchScope.choices)
    target = models.CharField(
        max_length=200, blank=True, default="", help_text="Tenant or task name; empty for global."
    )
    enabled = models.BooleanField(default=True)
    reason = models.TextField(blank=True, default="")
    changed_by = models.CharField(max_length=150, blank=True, default="")
    changed_at = models.DateTimeField()

    class Meta:
        verbose_name_plural = "kill switches"
        constraints = [
            models.UniqueConstraint(fields=["scope", "target"], name="killswitch_unique"),
            models.CheckConstraint(
                condition=Q(scope="global", target="") | (~Q(scope="global") & ~Q(target="")),
                name="killswitch_target",
            ),
        ]

    def __str__(self) -> str:
        where = (
            self.scope if self.scope == KillSwitchScope.GLOBAL else f"{self.scope} {self.target}"
        )
        return f"kill switch ({where}) {'on' if self.enabled else 'off'}"


class KillSwitchEvent(models.Model):
    """The audit trail: who turned which kill switch on or off, when, and why."""

    scope = models.CharField(max_length=10, choices=KillSwitchScope.choices)
    target = models.CharField(max_length=200, blank=True, default="")
    enabled = models.BooleanField()
    by = models.CharField(max_length=150)
    at = models.DateTimeField()
    reason = models.TextField()

    class Meta:
        indexes = [models.Index(fields=["-at"], name="killswitch_event_at_idx")]

    def __str__(self) -> str:
        return f"{self.by} turned {self.scope} {self.target} {'on' if self.enabled else 'off'}"


class TenantQuota(models.Model):
    """Per-tenant limits: active schedules, and occurrences handed off per hour."""

    tenant = models.CharField(max_length=100, unique=True)
    max_active_schedules = models.PositiveIntegerField(null=True, blank=True)
    max_occurrences_per_hour = models.PositiveIntegerField(null=True, blank=True)

    def __str__(self) -> str:
        return f"quota of tenant {self.tenant or '(none)'}"


__all__ = [
    "BeatHeartbeat",
    "KillSwitch",
    "KillSwitchEvent",
    "KillSwitchScope",
    "TenantQuota",
]
