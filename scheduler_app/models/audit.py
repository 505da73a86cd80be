"""The audit trail of schedules: every operator action, with who, when and why."""

from __future__ import annotations

from django.db import models


class AuditAction(models.TextChoices):
    CREATED = "created", "created"
    EDITED = "edited", "edited: a new version"
    PAUSED = "paused", "paused"
    RESUMED = "resumed", "resumed"
    RUN_NOW = "run_now", "run now"
    BACKFILL = "backfill", "backfill"
    APPROVED = "approved", "approved a version"
    CANCELLED = "cancelled", "cancelled"
    RESTORED = "restored", "restored after a cancel"
    DELETED = "deleted", "deleted"
    REPLAYED = "replayed", "replayed an occurrence"
    KILL_SWITCH_ON = "kill_switch_on", "kill switch turned on (covers it)"
    KILL_SWITCH_OFF = "kill_switch_off", "kill switch turned off (covers it)"


class ScheduleAuditEvent(models.Model):
    """One operator action on one schedule, written by the service layer in the action's own
    transaction (so every entry point records it, and a refused action records nothing).

    ``schedule_id`` is a plain column, not a foreign key: the trail outlives a deleted schedule.
    """

    schedule_id = models.UUIDField(db_index=False)
    action = models.CharField(max_length=20, choices=AuditAction.choices)
    by = models.CharField(max_length=150, help_text="The user name, or the system actor.")
    at = models.DateTimeField()
    reason = models.TextField(blank=True, default="")
    version = models.PositiveIntegerField(
        null=True, blank=True, help_text="The schedule's version the action applied to."
    )
    details = models.JSONField(default=dict, blank=True)

    class Meta:
        indexes = [models.Index(fields=["schedule_id", "at"], name="audit_schedule_at_idx")]
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.by} {self.action} {self.schedule_id} at {self.at.isoformat()}"
