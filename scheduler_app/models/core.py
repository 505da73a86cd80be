"""Schedules, their immutable versions, occurrences (one per slot) and the SQLite beat lease."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any, ClassVar

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

from scheduler_app.models.bounds import bounded, range_constraints
from scheduler_app.models.choices import (
    HandoffTarget,
    LatenessClass,
    MisfirePolicy,
    OverlapPolicy,
    PauseBehaviour,
    ScheduleHealth,
    ScheduleMode,
    ScheduleOrigin,
    ScheduleStatus,
)
from scheduler_app.models.runtime import ScheduleQuerySet, ScheduleRuntime
from scheduler_app.timing import Ambiguous, Kind, Nonexistent

PARKED_BY = "scheduler"
"""``paused_by`` of a schedule the scheduler paused because it cannot evaluate it."""
_parking_log = logging.getLogger("scheduler_app.parking")


def parked_values(why: str) -> dict[str, Any]:
    """What parking writes on a schedule the scheduler cannot evaluate or run (the
    materializer's, the worker's and the reconciler's): paused by the scheduler, ``why`` kept
    in ``last_error`` and shown in the pause note."""
    return {
        "status": ScheduleStatus.PAUSED,
        "last_error": why,
        "paused_by": PARKED_BY,
        "pause_note": f"parked by the scheduler: {why}"[:2000],
    }


# The fields that define what a schedule does; changing any of them makes a new version.
SEMANTIC_FIELDS = (
    "task",
    "kwargs",
    "objective",
    "kind",
    "rule",
    "anchor",
    "timezone",
    "dst_nonexistent",
    "dst_ambiguous",
    "starts_at",
    "ends_at",
    "max_count",
    "misfire_policy",
    "max_lateness",
    "catch_up_window",
    "catch_up_limit",
    "overlap_policy",
    "on_pause",
    "interval_mode",
    "max_attempts",
    "retry_delay",
    "cancel_grace",
    "active_window",
    "window_policy",
    "deadline",
    "jitter",
    "mode",
    "expected_every",
    "lateness_class",
    "job_type",
    "payload_ref",
    "options",
    "pause_after_failures",
    "max_per_day",
    "archive_on_completion",
    "args",
    "exclude_holidays",
    "ping_url",
)


class Schedule(ScheduleRuntime):
    """A stored definition: timing rule + zone + target task + payload + policies + status.

    Its runtime (status, next run, last slot, counters, last error, ``updated_at``) is the
    parent ``ScheduleRuntime``'s narrow table (``models.runtime``); ``id`` is both tables'."""

    runtime_ptr = models.OneToOneField(
        ScheduleRuntime,
        on_delete=models.CASCADE,
        parent_link=True,
        primary_key=True,
        db_column="id",
    )
    objects: ClassVar[models.Manager[Schedule]] = ScheduleQuerySet.as_manager()
    """An ``update()`` setting a runtime field runs under row locks (``ScheduleQuerySet``)."""
    key = models.CharField(
        max_length=200, unique=True, null=True, blank=True, help_text="Stable name (code-declared)."
    )
    name = models.CharField(max_length=200, blank=True)
    tenant = models.CharField(max_length=100, blank=True, default="")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    task = models.CharField(max_length=200, help_text="Celery task name.")
    args = models.JSONField(
        default=list, blank=True, help_text="Positional arguments (a JSON list)."
    )
    kwargs = models.JSONField(default=dict, blank=True)
    target = models.CharField(
        max_length=20,
        choices=HandoffTarget.choices,
        default=HandoffTarget.CELERY,
        help_text="Where occurrences go: a Celery task, a django.tasks task or an event.",
    )
    exclude_holidays = models.CharField(
        max_length=40,
        blank=True,
        default="",
        help_text="Leave out slots on public holidays there (ISO 3166-1, e.g. LV or US-NY).",
    )
    ping_url = models.CharField(
        max_length=500,
        blank=True,
        default="",
        help_text="Healthchecks-style URL pinged on start, success (and /fail).",
    )
    objective = models.CharField(max_length=100, blank=True, default="")
    kind = models.CharField(max_length=10, choices=[(k.value, k.value) for k in Kind])
    rule = models.TextField(help_text="Cron expression, RRULE, interval seconds or ISO instant.")
    dialect = models.CharField(max_length=20, default="vixie")
    anchor = models.DateTimeField(null=True, blank=True, help_text="RRULE DTSTART / grid origin.")
    timezone = models.CharField(max_length=64, default="UTC")
    dst_nonexistent = models.CharField(
        max_length=12, choices=[(v.value, v.value) for v in Nonexistent], default="auto"
    )
    dst_ambiguous = models.CharField(
        max_length=12, choices=[(v.value, v.value) for v in Ambiguous], default="auto"
    )
    starts_at = models.DateTimeField(null=True, blank=True)
    ends_at = models.DateTimeField(null=True, blank=True)
    max_count = models.PositiveIntegerField(validators=bounded("max_count"), null=True, blank=True)
    misfire_policy = models.CharField(
        max_length=12, choices=MisfirePolicy.choices, default=MisfirePolicy.CATCH_UP
    )
    max_lateness = models.PositiveIntegerField(
        validators=bounded("max_lateness"), default=60, help_text="Grace, in seconds."
    )
    catch_up_window = models.PositiveIntegerField(
        validators=bounded("catch_up_window"), default=86400, help_text="Seconds."
    )
    catch_up_limit = models.PositiveIntegerField(validators=bounded("catch_up_limit"), default=12)
    overlap_policy = models.CharField(
        max_length=16, choices=OverlapPolicy.choices, default=OverlapPolicy.SKIP
    )
    on_pause = models.CharField(
        max_length=8, choices=PauseBehaviour.choices, default=PauseBehaviour.KEEP
    )
    active_window = models.CharField(
        max_length=500,
        blank=True,
        default="",
        help_text="Only within these hours, e.g. 'MON-FRI 09:00-18:00' (the schedule's zone).",
    )
    window_policy = models.CharField(
        max_length=8,
        choices=[("defer", "defer: to the window's next opening"), ("skip", "skip: drop the slot")],
        default="defer",
    )
    max_attempts = models.PositiveIntegerField(
        validators=bounded("max_attempts"),
        default=3,
        help_text="Attempts in all, retries included.",
    )
    retry_delay = models.PositiveIntegerField(
        validators=bounded("retry_delay"),
        default=10,
        help_text="Seconds before the first retry; doubles each time, with jitter.",
    )
    cancel_grace = models.PositiveIntegerField(
        validators=bounded("cancel_grace"),
        default=60,
        help_text="cancel_previous: seconds the old run gets to stop.",
    )
    deadline = models.PositiveIntegerField(
        validators=bounded("deadline"),
        null=True,
        blank=True,
        help_text="Freshness budget after scheduled_for, in seconds.",
    )
    jitter = models.PositiveIntegerField(
        validators=bounded("jitter"), default=0, help_text="Up to this many seconds of delay."
    )
    mode = models.CharField(max_length=8, choices=ScheduleMode.choices, default=ScheduleMode.LIVE)
    expected_every = models.PositiveIntegerField(
        validators=bounded("expected_every"),
        null=True,
        blank=True,
        help_text="Monitoring: a successful run is expected at least this often, in seconds.",
    )
    origin = models.CharField(
        max_length=4,
        choices=ScheduleOrigin.choices,
        default=ScheduleOrigin.API,
        help_text="code: declared with @scheduled; sync_schedules owns its definition.",
    )
    version = models.PositiveIntegerField(default=1)
    paused_at = models.DateTimeField(null=True, blank=True)
    # Operator notes and the people behind a state (admin, commands).
    pause_note = models.TextField(blank=True, default="", help_text="Why it was paused.")
    paused_by = models.CharField(max_length=150, blank=True, default="")
    code_location = models.CharField(
        max_length=300, blank=True, default="", help_text="Where @scheduled declares it."
    )
    cost_estimate = models.FloatField(
        null=True,
        blank=True,
        validators=[MinValueValidator(0.0), MaxValueValidator(1e12)],
        help_text="Estimated cost of one run (backfill estimates).",
    )
    # Targets: a job type (schedule.v1 JOB targets), a payload reference, routing options.
    job_type = models.CharField(max_length=200, blank=True, default="")
    payload_ref = models.CharField(
        max_length=500, blank=True, default="", help_text="A reference the task resolves."
    )
    options = models.JSONField(
        default=dict, blank=True, help_text="Routing: queue, routing_key, exchange, priority."
    )
    lateness_class = models.CharField(
        max_length=20, choices=LatenessClass.choices, blank=True, default=""
    )
    # Safety: approval, quotas, failure handling, archival, health.
    approved_version = models.PositiveIntegerField(null=True, blank=True)
    approved_by = models.CharField(max_length=150, blank=True, default="")
    approved_at = models.DateTimeField(null=True, blank=True)
    max_per_day = models.PositiveIntegerField(
        validators=bounded("max_per_day"),
        null=True,
        blank=True,
        help_text="Quota: occurrences per day at most.",
    )
    pause_after_failures = models.PositiveIntegerField(
        validators=bounded("pause_after_failures"),
        null=True,
        blank=True,
        help_text="Pause after this many consecutive terminal failures.",
    )
    consecutive_failures = models.PositiveIntegerField(default=0)
    last_success_at = models.DateTimeField(
        null=True,
        blank=True,
        editable=False,
        help_text="When an occurrence of it last succeeded: written with the outcome, under "
        "the schedule's lock, so the monitor and the admin never search the ledger for it.",
    )
    archive_on_completion = models.BooleanField(
        default=False, help_text="One-time schedules: archive once the run is finished."
    )
    archived_at = models.DateTimeField(null=True, blank=True)
    health = models.CharField(
        max_length=10, choices=ScheduleHealth.choices, default=ScheduleHealth.OK
    )
    health_reason = models.TextField(blank=True, default="")
    health_changed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        permissions = [
            ("run_schedule", "Can run schedules: own them, run now, backfill"),
            ("pause_schedule", "Can pause and resume schedules"),
            ("approve_schedule", "Can approve schedule versions that need approval"),
            ("assign_owner", "Can choose another user as a schedule's owner"),
        ]
        indexes = [
            # The expected-run monitor's other two kinds of candidate (monitoring/monitor.py).
            models.Index(
                fields=["expected_every"],
                name="sched_expected_idx",
                condition=Q(expected_every__isnull=False),
            ),
            models.Index(
                fields=["health"], name="sched_unhealthy_idx", condition=Q(health="unhealthy")
            ),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(version__gte=1), name="sched_version_positive"),
            models.CheckConstraint(
                condition=Q(starts_at__isnull=True)
                | Q(ends_at__isnull=True)
                | Q(ends_at__gte=models.F("starts_at")),
                name="sched_ends_after_starts",
            ),
            models.CheckConstraint(condition=Q(catch_up_limit__gte=1), name="sched_catch_up_limit"),
            models.CheckConstraint(condition=Q(max_attempts__gte=1), name="sched_max_attempts"),
            models.CheckConstraint(
                condition=Q(cost_estimate__isnull=True)
                | Q(cost_estimate__gte=0, cost_estimate__lte=1e12),
                name="sched_cost_estimate_range",
            ),
            models.CheckConstraint(
                condition=Q(target__in=HandoffTarget.values), name="sched_target_known"
            ),
            *range_constraints(),
        ]

    def stored_definition(self) -> dict[str, Any]:
        """The definition as this row holds it: every ``SEMANTIC_FIELDS`` field by name."""
        return {name: getattr(self, name) for name in SEMANTIC_FIELDS}

    def park(self, error: Exception, now: datetime) -> list[str]:
        """Pause this schedule because the scheduler cannot evaluate or run it (a row changed
        past the services): the error is kept and logged. Nothing is saved; returns the fields
        to save."""
        why = f"{type(error).__name__}: {error}"[:1000]
        _parking_log.error(
            "schedule cannot be evaluated; paused",
            extra={"action": "schedule.parked", "schedule_id": str(self.pk), "error": why},
        )
        values = {**parked_values(why), "updated_at": now}
        for name, value in values.items():
            setattr(self, name, value)
        return list(values)

    def note_success(self, at: datetime) -> bool:
        """Move ``last_success_at`` forward to ``at`` (never back); True when it moved. The
        worker's one-statement outcome writes the same rule in SQL (``GREATEST``)."""
        if self.last_success_at is not None and self.last_success_at >= at:
            return False
        self.last_success_at = at
        return True

    def __str__(self) -> str:
        """Its name or key; an unnamed one reads as its task and rule, never as a UUID."""
        if self.name or self.key:
            return str(self.name or self.key)
        rule = f"{self.kind} {self.rule}"
        return f"{self.task} ({rule[:60]}{'...' if len(rule) > 60 else ''})"


class ScheduleVersion(models.Model):
    """An immutable snapshot of a schedule's definition; occurrences point at one."""

    id = models.UUIDField(
        primary_key=True, editable=False, help_text="Derived from (schedule, version)."
    )
    schedule = models.ForeignKey(Schedule, on_delete=models.CASCADE, related_name="versions")
    version = models.PositiveIntegerField()
    definition = models.JSONField()
    created_at = models.DateTimeField()
    approved_at = models.DateTimeField(
        null=True, blank=True, help_text="When this version was approved (tasks that need it)."
    )
    approved_by = models.CharField(max_length=150, blank=True, default="")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["schedule", "version"], name="schedver_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.schedule_id} v{self.version}"


class SchedulerLease(models.Model):
    """Who may materialize and publish when the database has no SKIP LOCKED (SQLite)."""

    name = models.CharField(max_length=50, primary_key=True)
    owner = models.CharField(max_length=200)
    expires_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.name} held by {self.owner} until {self.expires_at}"
