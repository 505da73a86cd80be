"""The task base class that gives every scheduled task its occurrence lifecycle.

Set it once for the whole app (``Celery(..., task_cls="scheduler_app.tasks:OccurrenceTask")``)
or per task (``@app.task(base=OccurrenceTask)``). Tasks not started by the scheduler run
unchanged.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from celery import Task
from django.db import close_old_connections

from scheduler_app.clock import Clock, SystemClock
from scheduler_app.context import OccurrenceContext, context_from_request
from scheduler_app.models import Occurrence, OccurrenceState

logger = logging.getLogger("scheduler_app.tasks")
CLAIMABLE = (OccurrenceState.PENDING, OccurrenceState.DISPATCHED)


class OccurrenceTask(Task):  # type: ignore[misc]
    """Claims the occurrence before running, records the outcome, refuses duplicates."""

    clock: Clock = SystemClock()

    @property
    def occurrence(self) -> OccurrenceContext | None:
        return context_from_request(self.request)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        context = self.occurrence
        if context is None:
            return super().__call__(*args, **kwargs)
        close_old_connections()
        if not claim(context, self.clock.now()):
            logger.info(
                "duplicate delivery ignored",
                extra={"action": "occurrence.duplicate", "occurrence_id": context.occurrence_id},
            )
            return None
        try:
            result = super().__call__(*args, **kwargs)
        except Exception:
            finish(context, OccurrenceState.FAILED, "error", self.clock.now())
            raise
        finish(context, OccurrenceState.SUCCEEDED, "", self.clock.now())
        return result


def claim(context: OccurrenceContext, now: datetime) -> bool:
    """pending/dispatched -> running (compare-and-set); False if someone else got there."""
    return bool(
        Occurrence.objects.filter(pk=context.occurrence_id, state__in=CLAIMABLE).update(
            state=OccurrenceState.RUNNING, started_at=now, attempts=context.attempt
        )
    )


def finish(context: OccurrenceContext, state: str, reason: str, now: datetime) -> bool:
    """running -> a final state (compare-and-set)."""
    return bool(
        Occurrence.objects.filter(pk=context.occurrence_id, state=OccurrenceState.RUNNING).update(
            state=state, reason=reason, finished_at=now
        )
    )
