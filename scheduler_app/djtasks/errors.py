"""Why the django.tasks adapter did not run a job's body (raised in ``task_started``: the
backend records the job ``FAILED`` without running it)."""

from __future__ import annotations

from scheduler_app.errors import SchedulerError


class HandoffRefused(SchedulerError):
    """The occurrence may not run from this job: a duplicate, a superseded handoff, expired,
    cancelled, not approved, forbidden, or stopped by a kill switch (the reason follows)."""


class HandoffSuperseded(HandoffRefused):
    """Written on a result row whose occurrence was handed off again (``results.supersede``)."""


class UnknownDjangoTask(SchedulerError):
    """An occurrence names a django.tasks task this process cannot find: parked ``failed:
    unpublishable`` by the outbox."""
