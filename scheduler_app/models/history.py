"""The attempt history of an occurrence: one row per execution try and per operator event."""

from __future__ import annotations

from django.db import models

from scheduler_app.models.ledger import Occurrence


class AttemptKind(models.TextChoices):
    RUN = "run", "run: a worker executed the task"
    REPLAY = "replay", "replay: an operator sent a failed occurrence again"
    CANCEL = "cancel", "cancel: an operator cancelled it"
    RESTORE = "restore", "restore: an operator undid a cancellation"


class OccurrenceAttempt(models.Model):
    """One attempt (worker, start, finish, outcome, error) or one operator event (who, why)."""

    # No database constraint: on PostgreSQL the ledger is partitioned and its ``id`` alone is
    # not a unique key a foreign key can point at (migration 0014). Django still cascades the
    # deletes; retention's partition drop deletes the attempts of the rows it drops.
    occurrence = models.ForeignKey(
        Occurrence, on_delete=models.CASCADE, related_name="attempt_history", db_constraint=False
    )
    # The occurrence's slot, copied: on PostgreSQL the partition key of this table, whose
    # partitions mirror the ledger's (migration 0016), so that retention drops a month of
    # attempts with the month of occurrences, and a lookup by occurrence reads one partition.
    scheduled_for = models.DateTimeField(help_text="The occurrence's slot (its scheduled_for).")
    kind = models.CharField(max_length=10, choices=AttemptKind.choices, default=AttemptKind.RUN)
    number = models.PositiveIntegerField(help_text="The occurrence's attempt number.")
    worker = models.CharField(max_length=200, blank=True, default="")
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    outcome = models.CharField(max_length=20, blank=True, default="")
    error = models.TextField(blank=True, default="")
    by = models.CharField(max_length=150, blank=True, default="", help_text="Operator events.")
    note = models.TextField(blank=True, default="")

    class Meta:
        indexes = [models.Index(fields=["occurrence", "started_at"], name="attempt_occ_idx")]

    def __str__(self) -> str:
        if self.kind == AttemptKind.RUN:
            return f"attempt {self.number}: {self.outcome or 'running'}"
        who = self.by or "the system"
        was = f" (it was {self.outcome})" if self.outcome else ""
        return f"{self.get_kind_display().split(':')[0]} requested by {who}{was}"
