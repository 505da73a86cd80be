"""The ledger: one occurrence per slot (or manual/backfill request), and its states."""

from __future__ import annotations

import uuid
from typing import Any

from django.apps import apps
from django.db import DatabaseError, models, transaction
from django.db.models import Q

from scheduler_app.models.choices import HandoffTarget, Trigger
from scheduler_app.models.core import Schedule, ScheduleVersion


class OccurrenceState(models.TextChoices):
    PENDING = "pending", "pending: in the outbox, not yet handed to Celery"
    DISPATCHED = "dispatched", "dispatched: published to the broker"
    RUNNING = "running", "running: a worker claimed it"
    RETRYING = "retrying", "retrying: waiting for another attempt"
    SUCCEEDED = "succeeded", "succeeded"
    FAILED = "failed", "failed: needs attention (dead letter), replayable"
    EXPIRED = "expired", "expired: its deadline passed before it started"
    SKIPPED = "skipped", "skipped: by a policy, with a reason"
    CANCELLED = "cancelled", "cancelled"
    BUFFERED = "buffered", "buffered: held by the overlap policy"


ACTIVE_STATES = (
    OccurrenceState.PENDING,
    OccurrenceState.DISPATCHED,
    OccurrenceState.RUNNING,
    OccurrenceState.RETRYING,
)
"""States in which an occurrence counts as running for the overlap policy."""
FINAL_STATES = (
    OccurrenceState.SUCCEEDED,
    OccurrenceState.FAILED,
    OccurrenceState.EXPIRED,
    OccurrenceState.SKIPPED,
    OccurrenceState.CANCELLED,
)
"""States an occurrence never leaves on its own (retention may delete such rows)."""
OPEN_STATES = (
    OccurrenceState.PENDING,
    OccurrenceState.DISPATCHED,
    OccurrenceState.RUNNING,
    OccurrenceState.RETRYING,
    OccurrenceState.BUFFERED,
)


class Occurrence(models.Model):
    """The durable record of one slot (or one manual/backfill request)."""

    # On PostgreSQL the table is partitioned by ``scheduled_for`` (migration 0014,
    # docs/partitions.md) and its primary key is (id, scheduled_for) in the database; ``id``
    # stays unique (a UUIDv5 of the idempotency key, which holds the slot) and Django reads it.
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # Its own index would repeat occ_schedule_idx's first column: that one serves the foreign
    # key's checks (PROTECT, PostgreSQL's referential action) and the per-schedule lists.
    schedule = models.ForeignKey(
        Schedule, on_delete=models.PROTECT, related_name="occurrences", db_index=False
    )
    # Kept indexed and constrained although nothing reads by it: deleting a version (with its
    # schedule, when it has no occurrences) makes Django's PROTECT check and PostgreSQL's
    # foreign-key check look rows up by it, which would scan the whole ledger without it.
    schedule_version = models.ForeignKey(ScheduleVersion, on_delete=models.PROTECT)
    trigger = models.CharField(max_length=10, choices=Trigger.choices)
    scheduled_for = models.DateTimeField()
    window_start = models.DateTimeField()
    window_end = models.DateTimeField()
    timezone = models.CharField(max_length=64)
    idempotency_key = models.CharField(max_length=120)  # unique through the id (Meta)
    task = models.CharField(max_length=200)
    args = models.JSONField(default=list)
    kwargs = models.JSONField(default=dict)
    target = models.CharField(
        max_length=20, choices=HandoffTarget.choices, default=HandoffTarget.CELERY
    )
    handoff_id = models.CharField(
        max_length=64,
        blank=True,
        default="",
        help_text="The target's own id for the handed-off job (a django.tasks result id).",
    )
    not_before = models.DateTimeField()
    deadline_at = models.DateTimeField(null=True, blank=True)
    state = models.CharField(
        max_length=10, choices=OccurrenceState.choices, default=OccurrenceState.PENDING
    )
    reason = models.CharField(max_length=40, blank=True, default="")
    last_error = models.TextField(blank=True, default="")
    cancel_requested_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    publish_count = models.PositiveIntegerField(
        default=0, help_text="How many times it was handed to the broker."
    )
    publish_lease_until = models.DateTimeField(null=True, blank=True)
    lease_owner = models.CharField(max_length=200, blank=True, default="")
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    fencing_token = models.PositiveBigIntegerField(default=0)
    created_at = models.DateTimeField()
    dispatched_at = models.DateTimeField(null=True, blank=True)
    emitted_at = models.DateTimeField(
        null=True, blank=True, help_text="The first successful handoff to the broker."
    )
    received_at = models.DateTimeField(
        null=True, blank=True, help_text="When a worker last received its message."
    )
    received_by = models.CharField(max_length=200, blank=True, default="")
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    requested_by = models.CharField(
        max_length=150, blank=True, default="", help_text="Who asked (manual, backfill)."
    )
    note = models.TextField(blank=True, default="", help_text="Why (manual, backfill).")

    class Meta:
        permissions = [("replay_occurrence", "Can replay failed occurrences")]
        # Every index names the query it serves; each one costs a write per inserted row (and
        # per update that changes one of its columns), so none is here without a reader.
        indexes = [
            # The outbox: ``outbox.publishable`` / ``claim_pending`` (oldest pending first) and
            # the idle tick's ``has_publishable``.
            models.Index(
                fields=["created_at"], name="occ_outbox_idx", condition=Q(state="pending")
            ),
            # A schedule's occurrences, newest first (admin's schedule page, ``operator``'s
            # backfill, the contract export), ``delete_schedule``'s "has occurrences", and the
            # schedule foreign key's own checks.
            models.Index(fields=["schedule", "-scheduled_for"], name="occ_schedule_idx"),
            # The admin's list by slot and the monitor's last-day figures
            # (``admin.monitoring``; made with raw SQL by migration 0005, in the model state
            # since 0012 so that a table rebuild on SQLite keeps them).
            models.Index(fields=["scheduled_for"], name="occ_slot_idx"),
            # "Skipped in the last day, by reason" (``admin.monitoring``).
            models.Index(
                fields=["scheduled_for", "reason"],
                name="occ_skipped_idx",
                condition=Q(state="skipped"),
            ),
            # The overlap check (``materialize._open_counts``, ``_request_stop``) and the
            # buffered hand-over at a run's end (``lifecycle``): open rows only, so it stays small.
            models.Index(
                fields=["schedule", "state"],
                name="occ_open_idx",
                condition=Q(state__in=["pending", "dispatched", "running", "retrying", "buffered"]),
            ),
            # Lost workers: ``reconcile`` (running, lease run out) and ``receiving``.
            models.Index(
                fields=["lease_expires_at"], name="occ_running_idx", condition=Q(state="running")
            ),
            # Expiry: ``reconcile`` (waiting rows whose deadline passed).
            models.Index(
                fields=["deadline_at"],
                name="occ_deadline_idx",
                condition=Q(
                    state__in=["pending", "dispatched", "retrying"], deadline_at__isnull=False
                ),
            ),
            # Retries due or stuck: ``reconcile`` (retrying, ``not_before`` passed).
            models.Index(
                fields=["not_before"], name="occ_retry_idx", condition=Q(state="retrying")
            ),
            # The failed count (``monitoring.metrics``, ``admin.monitoring``), by reason.
            models.Index(fields=["reason"], name="occ_failed_idx", condition=Q(state="failed")),
            # Dispatched but never received: ``reconcile`` (dispatched before the timeout).
            models.Index(
                fields=["dispatched_at"], name="occ_dispatched_idx", condition=Q(state="dispatched")
            ),
            # Cancel requests still to deliver: ``reconcile`` and ``lifecycle.stop_requested``.
            models.Index(
                fields=["cancel_requested_at"],
                name="occ_cancel_idx",
                condition=Q(cancel_requested_at__isnull=False),
            ),
        ]
        constraints = [
            # One row per rule slot: the beat's ``INSERT ... ON CONFLICT DO NOTHING``.
            models.UniqueConstraint(
                fields=["schedule", "scheduled_for"],
                condition=Q(trigger__in=["scheduled", "catch_up"]),
                name="occ_unique_rule_slot",
            ),
            # No unique index on the idempotency key: a row's id is derived from its key
            # (``occurrence_id``: uuid5 of the key, for every trigger), so the primary key
            # holds the key's uniqueness, and the admin finds a row by key through its id.
            # (Until 0018 a unique ``(idempotency_key, scheduled_for)``: a long text entry
            # written by every insert and every state change of the hot row.)
            models.CheckConstraint(
                condition=Q(window_start__lte=models.F("window_end")), name="occ_window_ordered"
            ),
            models.CheckConstraint(
                condition=Q(deadline_at__isnull=True)
                | Q(deadline_at__gte=models.F("scheduled_for")),
                name="occ_deadline_after_slot",
            ),
            models.CheckConstraint(
                condition=Q(target__in=HandoffTarget.values), name="occ_target_known"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.task} @ {self.scheduled_for.isoformat()}"

    @property
    def catch_up(self) -> bool:
        return self.trigger == Trigger.CATCH_UP

    @property
    def task_result(self) -> Any:
        """The django-celery-results row of this occurrence (task id = occurrence id), or None
        when django-celery-results is not installed (it is the optional ``[results]`` extra)."""
        if not apps.is_installed("django_celery_results"):
            return None
        task_result = apps.get_model("django_celery_results", "TaskResult")
        try:
            with transaction.atomic():  # a savepoint: a failed read must not spoil the page's
                return task_result.objects.filter(task_id=str(self.id)).first()
        except DatabaseError:  # installed but not migrated (`manage.py migrate` creates it)
            return None

    @property
    def dispatch_lateness(self) -> float | None:
        if self.dispatched_at is None:
            return None
        return (self.dispatched_at - self.scheduled_for).total_seconds()
