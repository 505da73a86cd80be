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
from celery.exceptions import Ignore, Retry
from django.db import close_old_connections
from django.db.models import Q

from scheduler_app.clock import Clock, SystemClock
from scheduler_app.context import OccurrenceContext, context_from_request
from scheduler_app.models import Occurrence, OccurrenceState

logger = logging.getLogger("scheduler_app.tasks")
CLAIMABLE = (OccurrenceState.PENDING, OccurrenceState.DISPATCHED)


class OccurrenceTask(Task):
    """Claims the occurrence before running, records the outcome, refuses duplicates.

    A duplicate delivery (same task id, occurrence already claimed or finished) raises
    ``Ignore``: the message is acknowledged and the stored result of the real run is kept.
    """

    clock: Clock = SystemClock()

    @property
    def occurrence(self) -> OccurrenceContext | None:
        return context_from_request(self.request)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        context = self.occurrence
        if context is None:
            return super().__call__(*args, **kwargs)
        if not self.request.is_eager:
            # A worker between tasks: drop a connection that died or aged out. Never when
            # run eagerly, where the caller's transaction may be open on this connection.
            close_old_connections()
        now = self.clock.now()
        if context.deadline_at is not None and now > context.deadline_at:
            expire(context, now)
            raise Ignore()
        if not claim(context, now):
            logger.info(
                "duplicate delivery ignored",
                extra={"action": "occurrence.duplicate", "occurrence_id": context.occurrence_id},
            )
            raise Ignore()
        try:
            result = super().__call__(*args, **kwargs)
        except Retry:
            finish(context, OccurrenceState.RETRYING, "retry", None)
            raise
        except Exception:
            finish(context, OccurrenceState.FAILED, "error", self.clock.now())
            raise
        finish(context, OccurrenceState.SUCCEEDED, "", self.clock.now())
        return result


def claim(context: OccurrenceContext, now: datetime) -> bool:
    """pending/dispatched (or retrying, by a later attempt) -> running, compare-and-set.

    False if someone else got there: a duplicate delivery of a claimed or finished occurrence.
    """
    claimable = Q(state__in=CLAIMABLE) | Q(
        state=OccurrenceState.RETRYING, attempts__lt=context.attempt
    )
    return bool(
        Occurrence.objects.filter(claimable, pk=context.occurrence_id).update(
            state=OccurrenceState.RUNNING, started_at=now, attempts=context.attempt
        )
    )


def expire(context: OccurrenceContext, now: datetime) -> bool:
    """Not started before its deadline: pending/dispatched/retrying -> expired."""
    return bool(
        Occurrence.objects.filter(
            pk=context.occurrence_id, state__in=(*CLAIMABLE, OccurrenceState.RETRYING)
        ).update(state=OccurrenceState.EXPIRED, reason="deadline_passed", finished_at=now)
    )


def finish(context: OccurrenceContext, state: str, reason: str, now: datetime | None) -> bool:
    """running -> ``state`` (compare-and-set); ``now`` is the finish time, None if not final."""
    return bool(
        Occurrence.objects.filter(pk=context.occurrence_id, state=OccurrenceState.RUNNING).update(
            state=state, reason=reason, finished_at=now
        )
    )
