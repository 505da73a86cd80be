"""The receive-before-claim window: a worker that took a message and died before it claimed the
occurrence.

Such an occurrence stays ``dispatched`` with nobody running it, and the broker keeps the unacked
message hidden (Redis: its visibility timeout, an hour by default). Waiting for
``SCHEDULER_DISPATCH_TIMEOUT`` would make the run about an hour late; republishing every
``dispatched`` occurrence sooner would flood a queue that is merely backlogged.

So a worker says "I have it": when its main process receives a scheduled message it writes a
*receive lease* on the occurrence (``received_at``, ``received_by`` = host:pid,
``lease_expires_at``), and renews the leases of every message it still holds every third of
the lease (a consumer bootstep with a timer). The reconciler republishes only an occurrence
whose receiver stopped renewing: "a worker took it and died". An occurrence no worker has
received yet is "still in the queue" and left alone.

A ``--pool solo`` worker runs a delivery in the thread that received it, right after the
signal: there is no window to cover, so it writes no receipt for a delivery it runs at once
(one without an ETA or a rate limit); the claim that follows is its "I have it".
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from celery import bootsteps
from celery.concurrency.solo import TaskPool as SoloPool
from django.db import DatabaseError, connection

from scheduler_app.clock import Clock, SystemClock
from scheduler_app.conf import SchedulerSettings, get_settings
from scheduler_app.context import header_slot
from scheduler_app.db.connections import fresh
from scheduler_app.handoff.protocol import HEADER
from scheduler_app.models import Occurrence, OccurrenceState
from scheduler_app.worker.lifecycle import by_id

logger = logging.getLogger("scheduler_app.receiving")
DEFAULT_RECEIVE_LEASE = SchedulerSettings.RECEIVE_LEASE
clock: Clock = SystemClock()
"""The worker's clock for receive leases. It must read like the beat's clock, as
``OccurrenceTask.clock`` must: the reconciler compares a lease with its own "now" (a harness
that injects a clock sets both)."""
_runs_at_once = [False]
"""Set by ``ReceiveLeases`` on a solo-pool worker: deliveries run in the receiving thread."""


def receive_lease() -> timedelta:
    """``SCHEDULER_RECEIVE_LEASE`` (seconds, default 30): how long a received, not yet
    claimed occurrence belongs to its worker without a renewal."""
    return timedelta(seconds=get_settings().RECEIVE_LEASE)


def node_name() -> str:
    """This worker process (the main process: it receives and renews)."""
    return f"{socket.gethostname()}:{os.getpid()}"[:200]


def mark_received(
    occurrence_id: UUID | str,
    *,
    node: str,
    now: datetime,
    lease: timedelta,
    scheduled_for: datetime | None = None,
) -> int:
    """Record that ``node`` holds the message of a published occurrence (pending included:
    a worker can receive it before the beat has marked it dispatched).

    ``scheduled_for``: the slot the message names (the partition key), a hint: when no row
    with that id and slot is waiting, the id alone decides (one more statement)."""

    def receipt(slot: datetime | None) -> int:
        return (
            by_id(occurrence_id, slot)
            .filter(state__in=(OccurrenceState.PENDING, OccurrenceState.DISPATCHED))
            .update(received_at=now, received_by=node, lease_expires_at=now + lease)
        )

    marked = receipt(scheduled_for)
    if not marked and scheduled_for is not None:
        marked = receipt(None)
    return marked


def renew(node: str, now: datetime, lease: timedelta) -> int:
    """Extend the receive leases of the occurrences ``node`` holds and has not started."""
    return Occurrence.objects.filter(
        state=OccurrenceState.DISPATCHED, received_by=node, lease_expires_at__isnull=False
    ).update(lease_expires_at=now + lease)


def republish_lost_receipts(now: datetime, limit: int) -> int:
    """Reconciler: ``dispatched`` occurrences whose receiving worker stopped renewing go back
    to the outbox (same id, same key): a live worker runs them, and the message the dead one
    left unacked, when the broker restores it, is refused as a duplicate."""
    lost = list(
        Occurrence.objects.filter(
            state=OccurrenceState.DISPATCHED,
            lease_expires_at__lt=now,
        )
        .exclude(received_by="")
        .values_list("pk", flat=True)[:limit]
    )
    if not lost:
        return 0
    moved = Occurrence.objects.filter(
        pk__in=lost, state=OccurrenceState.DISPATCHED, lease_expires_at__lt=now
    ).update(
        state=OccurrenceState.PENDING,
        reason="receiver_lost",
        received_by="",
        lease_expires_at=None,
        publish_lease_until=None,
    )
    if moved:
        logger.warning(
            "%d received occurrence(s) lost with their worker; publishing them again",
            moved,
            extra={"action": "reconcile.receiver_lost", "count": moved},
        )
    return moved


def on_task_received(request: Any) -> None:
    """``task_received`` handler (the worker's main process): lease scheduled deliveries."""
    headers = getattr(request, "request_dict", None) or {}
    if HEADER not in headers or runs_at_once(request):
        return
    node, now, lease = node_name(), clock.now(), receive_lease()
    header = headers[HEADER]
    slot = header_slot(header) if isinstance(header, dict) else None
    try:
        # ``fresh``: a connection a database restart killed is replaced, not reused forever.
        fresh(
            lambda: mark_received(request.id, node=node, now=now, lease=lease, scheduled_for=slot)
        )
    except DatabaseError as exc:  # the claim still protects the run; only the lease is lost
        logger.warning(
            "could not record the receipt of %s: %s",
            request.id,
            exc,
            extra={"action": "occurrence.receipt_failed", "occurrence_id": str(request.id)},
        )
    finally:
        _release_connection()


def runs_at_once(request: Any) -> bool:
    """True on a solo-pool worker for a delivery it runs now (no ETA, no rate limit)."""
    if not _runs_at_once[0] or getattr(request, "eta", None):
        return False
    return not getattr(getattr(request, "task", None), "rate_limit", None)


def _renew_now() -> None:
    node, now, lease = node_name(), clock.now(), receive_lease()
    try:
        fresh(lambda: renew(node, now, lease))
    except DatabaseError as exc:
        logger.warning(
            "could not renew receive leases: %s", exc, extra={"action": "occurrence.renew_failed"}
        )
    finally:
        _release_connection()


def _release_connection() -> None:
    """Timer threads (threads and solo pools) must not keep a connection each; the main
    thread of a prefork worker keeps its own (Celery closes it safely in forked children)."""
    if threading.current_thread() is not threading.main_thread():
        connection.close()


class ReceiveLeases(bootsteps.StartStopStep):
    """Consumer bootstep: renews this worker's receive leases every third of the lease."""

    requires = ("celery.worker.consumer.tasks:Tasks",)

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)
        self.timer_ref: Any = None

    def start(self, parent: Any) -> None:
        _runs_at_once[0] = isinstance(getattr(parent, "pool", None), SoloPool)
        every = max(receive_lease().total_seconds() / 3, 1.0)
        self.timer_ref = parent.timer.call_repeatedly(every, _renew_now, priority=10)

    def stop(self, parent: Any) -> None:
        if self.timer_ref is not None:
            self.timer_ref.cancel()
            self.timer_ref = None
