"""The choices of the schedule's fields and of an occurrence's trigger and target."""

from __future__ import annotations

from django.db import models


class ScheduleStatus(models.TextChoices):
    ACTIVE = "active", "active: produces occurrences"
    PAUSED = "paused", "paused: no new occurrences until resumed"
    COMPLETED = "completed", "completed: the rule has no more slots"
    CANCELLED = "cancelled", "cancelled: no future occurrences, history kept"
    AWAITING_APPROVAL = (
        "awaiting_approval",
        "awaiting approval: this version waits for a user with approve_schedule",
    )


class LatenessClass(models.TextChoices):
    """The specification's lateness classes; each sets documented policy defaults."""

    HUMAN_REMINDER = "human_reminder", "human reminder: seconds to a minute late at most"
    BUSINESS_BATCH = "business_batch", "business batch: minutes"
    MAINTENANCE = "maintenance", "maintenance: minutes to hours"
    WORKFLOW_DEADLINE = "workflow_deadline", "workflow deadline: a domain deadline, often minutes"


class ScheduleHealth(models.TextChoices):
    OK = "ok", "ok: runs as expected"
    UNHEALTHY = "unhealthy", "unhealthy: an expected run is missing or overdue"


class ScheduleMode(models.TextChoices):
    LIVE = "live", "live: occurrences are handed to Celery"
    SHADOW = "shadow", "shadow: occurrences are recorded as skipped, nothing runs"


class MisfirePolicy(models.TextChoices):
    SKIP = "skip", "skip: late slots are counted, not run"
    FIRE_ONCE = "fire_once", "fire once: run only the most recent late slot"
    CATCH_UP = "catch_up", "catch up: run late slots within the window and limit, oldest first"


class OverlapPolicy(models.TextChoices):
    ALLOW = "allow", "allow: run concurrently"
    SKIP = "skip", "skip: a new occurrence while one runs is skipped"
    BUFFER_ONE = "buffer_one", "buffer one: keep the first waiting occurrence"
    BUFFER_ALL = "buffer_all", "buffer all: queue every occurrence, run in slot order"
    CANCEL_PREVIOUS = "cancel_previous", "cancel previous: stop the running one"


class PauseBehaviour(models.TextChoices):
    KEEP = "keep", "keep: occurrences already created still run"
    CANCEL = "cancel", "cancel: pending occurrences are cancelled"


class IntervalMode(models.TextChoices):
    FIXED_RATE = "fixed_rate", "fixed rate: slots on a grid, whatever the run length"
    FIXED_DELAY = "fixed_delay", "fixed delay: the next slot is the previous completion + N"


class ScheduleOrigin(models.TextChoices):
    API = "api", "api: defined through the service layer, the admin or a command"
    CODE = "code", "code: declared with @scheduled and kept in step by sync_schedules"


class Trigger(models.TextChoices):
    SCHEDULED = "scheduled", "scheduled: the rule's slot, on time"
    CATCH_UP = "catch_up", "catch up: a slot run late by the misfire policy"
    BACKFILL = "backfill", "backfill: requested for past slots by an operator"
    MANUAL = "manual", "manual: run now, outside the rule"


class HandoffTarget(models.TextChoices):
    """Where an occurrence is handed off (docs/guarantees.md, the targets; docs/events.md)."""

    CELERY = "celery", "Celery"
    DJANGO_TASKS = "django_tasks", "django.tasks"
    EVENT = "event", "Event (signed webhook)"


RULE_TRIGGERS = (Trigger.SCHEDULED, Trigger.CATCH_UP)
