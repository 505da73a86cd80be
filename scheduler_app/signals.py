"""Celery signal handlers: outcomes that never reach the task body.

A message Celery drops itself (revoked by ``cancel_previous`` or an operator, or past its
``expires`` = the occurrence's deadline) never calls the task, so the base class cannot
record it; ``task_revoked`` does.
"""

from __future__ import annotations

from typing import Any

from celery.signals import task_revoked

from scheduler_app import lifecycle
from scheduler_app.clock import SystemClock
from scheduler_app.context import context_from_request
from scheduler_app.models import Occurrence, OccurrenceState

_clock = SystemClock()


@task_revoked.connect
def record_revoked(
    sender: Any = None, request: Any = None, expired: bool = False, **_: Any
) -> None:
    context = context_from_request(request) if request is not None else None
    if context is None:
        return
    occurrence = Occurrence.objects.filter(pk=context.occurrence_id).first()
    if occurrence is None:
        return
    state, reason = (
        (OccurrenceState.EXPIRED, "deadline_passed")
        if expired
        else (OccurrenceState.CANCELLED, "revoked")
    )
    lifecycle.end(
        occurrence,
        state,
        reason,
        _clock.now(),
        from_states=(*lifecycle.CLAIMABLE, OccurrenceState.RUNNING),
    )
