"""Signal handlers: outcomes that never reach the task body, and owners that go away.

A message Celery drops itself (revoked by ``cancel_previous`` or an operator, or past its
``expires`` = the occurrence's deadline) never calls the task, so the base class cannot
record it; ``task_revoked`` does.

A user deleted or deactivated pauses the schedules they own, with a note: without it a
deleted owner (``on_delete=SET_NULL``) would turn the schedule into an owner-less one that
no permission check stops.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from celery import current_app
from celery.signals import task_received, task_revoked
from celery.worker import state as worker_state
from django.conf import settings
from django.db import DatabaseError
from django.db.models.signals import post_save, pre_delete
from kombu.transport import TRANSPORT_ALIASES

from scheduler_app.clock import SystemClock
from scheduler_app.context import context_from_request
from scheduler_app.db.connections import fresh
from scheduler_app.models import Occurrence, OccurrenceState
from scheduler_app.safety.permissions import pause_owned_schedules
from scheduler_app.worker import claiming, lifecycle
from scheduler_app.worker.receiving import ReceiveLeases, on_task_received

logger = logging.getLogger("scheduler_app.signals")
_clock = SystemClock()
REPLAYED = "replay"
"""The reason ``replay_occurrence`` gives an occurrence until its next attempt ends."""


@task_received.connect
def record_received(sender: Any = None, request: Any = None, **_: Any) -> None:
    """A worker's main process took a message: lease it (see ``receiving``)."""
    if request is not None:
        on_task_received(request)


# Workers of the app renew the receive leases of the messages they hold.
current_app.steps["consumer"].add(ReceiveLeases)

# Redis broker URLs use the transport that survives a Redis restart
# (``scheduler_app.publishing.transport``; a string: kombu imports it, and the Redis client,
# only when such a connection is made).
TRANSPORT_ALIASES["redis"] = TRANSPORT_ALIASES["rediss"] = (
    "scheduler_app.publishing.transport:Transport"
)


@task_revoked.connect
def record_revoked(
    sender: Any = None, request: Any = None, expired: bool = False, **_: Any
) -> None:
    context = context_from_request(request) if request is not None else None
    if context is None:
        return
    task_id = getattr(request, "id", None) or context.occurrence_id
    try:
        # The worker's main thread, between tasks: a connection a database restart killed
        # is replaced (``fresh``), not reused by every later revoke.
        fresh(
            lambda: _record_revoked(context.occurrence_id, task_id, expired, context.scheduled_for)
        )
    except DatabaseError as exc:  # a later delivery's claim, or the reconciler, ends it
        logger.warning(
            "could not record the revoke of %s: %s",
            task_id,
            exc,
            extra={"action": "occurrence.revoke_failed", "occurrence_id": context.occurrence_id},
        )


def _record_revoked(
    occurrence_id: str, task_id: str, expired: bool, slot: datetime | None = None
) -> None:
    """``slot``: the one the message names (the partition key), a hint: a row with this id
    and another slot is found by its id alone. From here on the row's own slot is used."""
    occurrence = lifecycle.by_id(occurrence_id, slot).first()
    if occurrence is None and slot is not None:
        occurrence = lifecycle.by_id(occurrence_id).first()
    if occurrence is None:
        return
    if not expired and _stale_revoke(occurrence):
        _forget_revoke(occurrence, task_id)
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
        # Never a running attempt: a revoked *copy* of a running occurrence (a republish,
        # a requeue) must not end it. Its own worker or the reconciler ends it.
        from_states=claiming.CLAIMABLE,
    )


def _stale_revoke(occurrence: Occurrence) -> bool:
    """A revoke from an earlier life of this task id (= occurrence id).

    Workers remember revoked ids for hours. An occurrence cancelled by ``cancel_previous``
    (revoked) and then replayed comes back with the same task id, no cancellation request
    and reason ``replay``: the old revoke must not drop it again.
    """
    return (
        occurrence.reason == REPLAYED
        and occurrence.cancel_requested_at is None
        and occurrence.state in (OccurrenceState.PENDING, OccurrenceState.DISPATCHED)
    )


def _forget_revoke(occurrence: Occurrence, task_id: str) -> None:
    """Drop the id from this worker's revoked set and give the occurrence back to the outbox:
    the beat publishes it again and this time it runs."""
    worker_state.revoked.discard(task_id)
    requeued = Occurrence.objects.filter(
        pk=occurrence.pk,
        scheduled_for=occurrence.scheduled_for,
        state__in=(OccurrenceState.PENDING, OccurrenceState.DISPATCHED),
        reason=REPLAYED,
        cancel_requested_at__isnull=True,
    ).update(state=OccurrenceState.PENDING, dispatched_at=None, publish_lease_until=None)
    logger.info(
        "stale revoke of a replayed occurrence forgotten; publishing it again",
        extra={
            "action": "occurrence.revoke_forgotten",
            "occurrence_id": str(occurrence.pk),
            "requeued": requeued,
        },
    )


def owner_deleted(sender: Any, instance: Any, **_: Any) -> None:
    """Runs before the delete (and before ``SET_NULL`` clears ``Schedule.owner``)."""
    name = instance.get_username()
    pause_owned_schedules(instance, f"paused: the owner {name!r} was deleted", _clock.now())


def owner_saved(sender: Any, instance: Any, created: bool = False, **_: Any) -> None:
    if created or instance.is_active:
        return
    name = instance.get_username()
    pause_owned_schedules(instance, f"paused: the owner {name!r} was deactivated", _clock.now())


pre_delete.connect(owner_deleted, sender=settings.AUTH_USER_MODEL, dispatch_uid="sched_owner_del")
post_save.connect(owner_saved, sender=settings.AUTH_USER_MODEL, dispatch_uid="sched_owner_save")
