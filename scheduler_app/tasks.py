"""The task base class that gives every scheduled task its occurrence lifecycle.

Set it once for the whole app (``Celery(..., task_cls="scheduler_app.tasks:OccurrenceTask")``)
or per task (``@app.task(base=OccurrenceTask)``). Tasks not started by the scheduler run
unchanged.

For a scheduled task it:
1. claims the occurrence (compare-and-set, lease, fencing token); a duplicate delivery,
   an expired deadline or a revoked permission ends here (``Ignore``: the message is
   acknowledged, the real run's stored result is kept);
2. runs the task with ``current_occurrence()`` / ``self.occurrence`` set, renewing the lease
   from a heartbeat thread;
3. records the outcome: ``succeeded``; ``retrying`` (exponential backoff with jitter, bounded
   by the deadline and ``max_attempts``; the beat publishes the next attempt); ``failed``
   (permanent error or retries used up: the dead-letter state); ``cancelled``.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any, TypeVar

from celery import Task
from celery.exceptions import Ignore
from django.db import connection

from scheduler_app import events, observability
from scheduler_app.clock import Clock, SystemClock
from scheduler_app.conf import get_settings
from scheduler_app.context import (
    OccurrenceContext,
    context_from_request,
    current_occurrence,
    header_slot,
    scheduler_header,
    use_occurrence,
)
from scheduler_app.db.connections import (
    CONNECTION_ERRORS,
    close_old,
    drop_broken,
    mark_used,
)
from scheduler_app.errors import OccurrenceCancelled
from scheduler_app.models import OccurrenceState
from scheduler_app.policies.retry import RetryPolicy, decide_retry
from scheduler_app.safety import killswitch
from scheduler_app.worker import claiming, lifecycle, outcomes, redelivery, results
from scheduler_app.worker.leases import LeaseKeeper
from scheduler_app.worker.outcomes import RECORD_ATTEMPTS as RECORD_ATTEMPTS

logger = logging.getLogger("scheduler_app.tasks")


DUPLICATE = frozenset(
    {"claimed_by_another", "retry_not_due"}
    | {f"already_{state}" for state in OccurrenceState.values}
)
"""Claim refusals that mean "another delivery of this occurrence ran or runs it"."""


T = TypeVar("T")


def worker_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}"


class OccurrenceTask(Task):
    """Claims the occurrence before running, records the outcome, refuses duplicates."""

    records_occurrences = True
    """The marker ``targets.is_occurrence_task`` reads (the allowlist sits below this module)."""
    clock: Clock = SystemClock()
    permanent_exceptions: tuple[type[BaseException], ...] = ()
    """Exceptions that fail the occurrence at once, besides validation and permission errors."""
    pause: Callable[[float], None] = staticmethod(time.sleep)
    """How the worker waits between tries to record an outcome (tests replace it)."""

    @property
    def occurrence(self) -> OccurrenceContext | None:
        """The running occurrence's context (with its attempt number), or None."""
        return current_occurrence() or context_from_request(self.request)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        header = scheduler_header(self.request)
        if header is None:
            return super().__call__(*args, **kwargs)
        # A scheduled delivery. The message is trusted for nothing but its task id: the
        # occurrence, its payload, schedule and owner are read from the database. A forged
        # header or body cannot pick another occurrence, payload or owner. Its slot only
        # helps find the row (the partition key); the claim checks it against the row.
        occurrence_id = str(self.request.id)
        with observability.running(occurrence_id, self.request):
            if self.request.is_eager:
                return self._run_scheduled(occurrence_id, header_slot(header), args, kwargs)
            # A worker between tasks: drop a connection that died or aged out. Never when
            # run eagerly, where the caller's transaction may be open on this connection.
            close_old()
            try:
                return self._run_scheduled(occurrence_id, header_slot(header), args, kwargs)
            finally:
                mark_used()

    def _run_scheduled(
        self, occurrence_id: str, slot: datetime | None, args: Any, kwargs: Any
    ) -> Any:
        """Claim, run and record one scheduled delivery (inside its ``scheduler.run`` span)."""
        lease = timedelta(seconds=get_settings().WORKER_LEASE)
        with observability.step("claim"):
            claim = self._claim(occurrence_id, slot, lease)
        if not claim.claimed or claim.occurrence is None:
            self._refused(occurrence_id, claim)
            raise Ignore()
        stopped = claim.stopped
        if stopped is None:
            stopped = killswitch.stops(claim.occurrence)
        if stopped:
            # Handed to the broker before the switch went on: recorded, never run.
            self._end(claim, OccurrenceState.SKIPPED, killswitch.REASON)
            raise Ignore()
        stored_args = list(claim.occurrence.args or [])
        if list(args) != stored_args or kwargs != claim.occurrence.kwargs:
            logger.warning(
                "the message's arguments differ from the stored payload; running the stored one",
                extra={"action": "occurrence.payload_mismatch", "occurrence_id": occurrence_id},
            )
        context = OccurrenceContext.from_occurrence(claim.occurrence, claim.attempt)
        observability.run_started(claim.occurrence, claim.attempt)
        with use_occurrence(context), Heartbeat(claim, lease, self.clock):
            try:
                with observability.step("execute"):
                    result = super().__call__(*stored_args, **claim.occurrence.kwargs)
            except OccurrenceCancelled:
                self._end(claim, OccurrenceState.CANCELLED, "cancel_requested")
                raise Ignore() from None
            except Exception as exc:
                self._failed(exc, context, claim)
                raise
        # With django-celery-results on PostgreSQL its row is written with the outcome, in
        # one statement and one commit (``worker.results``); Celery then does not write it.
        self._end(claim, OccurrenceState.SUCCEEDED, "", result=results.result_row(self, result))
        return result

    def _claim(self, occurrence_id: str, slot: datetime | None, lease: timedelta) -> claiming.Claim:
        """The compare-and-set claim; on a database connection error, the delivery goes
        back to the broker for a prompt retry (``worker.redelivery``), never to the body."""
        try:
            return claiming.claim(
                occurrence_id,
                owner=worker_owner(),
                now=self.clock.now(),
                lease=lease,
                task=self.name,
                scheduled_for=slot,
            )
        except CONNECTION_ERRORS as exc:
            if self.request.is_eager or connection.in_atomic_block:
                raise  # the caller's transaction: not ours to retry
            drop_broken()
            again = redelivery.publish_again(self, exc)
            logger.warning(
                "claim failed: database unavailable (%s); %s",
                exc,
                f"delivering it again in {again.when:g} s" if again else "left to the reconciler",
                extra={
                    "action": "occurrence.claim_deferred" if again else "occurrence.claim_failed",
                    "occurrence_id": occurrence_id,
                    "tries": redelivery.tries(self.request) + 1,
                },
            )
            if again is None:
                raise
            raise again from exc

    def _refused(self, occurrence_id: str, claim: claiming.Claim) -> None:
        duplicate = claim.reason in DUPLICATE
        # The reason goes in the message too: plain log formats do not show ``extra``.
        logger.info(
            "%s: %s %s",
            "duplicate delivery ignored" if duplicate else "delivery not run",
            occurrence_id,
            claim.reason,
            extra={
                "action": "occurrence.refused",
                "occurrence_id": occurrence_id,
                "reason": claim.reason,
            },
        )
        observability.run_refused(claim.reason)
        if duplicate:
            events.duplicate_prevented.send(
                sender=None,
                kind="delivery",
                schedule_id=str(claim.occurrence.schedule_id) if claim.occurrence else None,
                occurrence_id=occurrence_id,
            )

    def _end(
        self,
        claim: claiming.Claim,
        state: str,
        reason: str,
        error: str = "",
        exception: BaseException | None = None,
        result: Mapping[str, Any] | None = None,
    ) -> None:
        if claim.occurrence is None:
            return
        occurrence_id = claim.occurrence.pk
        ended = self._record(
            lambda: lifecycle.finish(
                occurrence_id,
                token=claim.token,
                state=state,
                reason=reason,
                now=self.clock.now(),
                error=error,
                claimed=claim.occurrence,
                result=result,
                on_result_written=lambda: results.written(self),
            )
        )
        if not ended:
            logger.warning(
                "outcome not recorded: the attempt lost its lease",
                extra={"action": "occurrence.fenced", "occurrence_id": str(claim.occurrence.pk)},
            )
            return
        observability.run_finished(claim.occurrence, state, reason, exception)

    def _record(self, write: Callable[[], T]) -> T:
        """Run an outcome write; a dropped connection or a locked database gets a few more
        tries on a fresh connection. Each write is a fenced compare-and-set, so a try that
        committed before its connection dropped makes the next one a no-op."""
        with observability.step("outcome"):
            return self._write(write)

    def _write(self, write: Callable[[], T]) -> T:
        return outcomes.write_retried(write, self.pause)

    def _failed(self, exc: Exception, context: OccurrenceContext, claim: claiming.Claim) -> None:
        """Retry later (then ``Ignore``) or record ``failed``; the caller re-raises."""
        if claim.occurrence is None:
            return
        schedule = claim.occurrence.schedule
        now = self.clock.now()
        decision = decide_retry(
            exc,
            attempt=claim.attempt,
            now=now,
            deadline_at=context.deadline_at,
            policy=RetryPolicy(max_attempts=schedule.max_attempts, base_delay=schedule.retry_delay),
            extra_permanent=self.permanent_exceptions,
        )
        error = f"{type(exc).__name__}: {exc}"
        if decision.retry and decision.at is not None:
            occurrence, at = claim.occurrence, decision.at
            self._record(
                lambda: lifecycle.retry_later(
                    occurrence.pk,
                    token=claim.token,
                    at=at,
                    now=now,
                    error=error,
                    scheduled_for=occurrence.scheduled_for,  # the row's, as the claim read it
                )
            )
            observability.run_finished(
                claim.occurrence, OccurrenceState.RETRYING, decision.reason, exc
            )
            logger.info(
                "attempt failed; retrying",
                extra={
                    "action": "occurrence.retrying",
                    "occurrence_id": context.occurrence_id,
                    "attempt": claim.attempt,
                },
            )
            raise Ignore() from exc
        self._end(claim, OccurrenceState.FAILED, decision.reason, error, exc)


leases = LeaseKeeper(lifecycle.heartbeat)
"""The worker process's lease keeper (one thread for every attempt running in the process)."""


class Heartbeat:
    """Renews a running attempt's lease every third of it while the block runs."""

    def __init__(self, claim: claiming.Claim, lease: timedelta, clock: Clock) -> None:
        self.claim = claim
        self.lease = lease
        self.clock = clock
        self._key = 0

    def __enter__(self) -> Heartbeat:
        occurrence = self.claim.occurrence
        if occurrence is not None:
            self._key = leases.hold(
                str(occurrence.pk),
                token=self.claim.token,
                lease=self.lease,
                clock=self.clock,
                scheduled_for=occurrence.scheduled_for,  # the row's slot, as the claim read it
            )
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        leases.release(self._key)


def check_cancelled() -> None:
    """Raise ``OccurrenceCancelled`` when the running occurrence was asked to stop.

    Call it between expensive steps; a task that never calls it runs to completion
    (``cancel_previous`` then starts the next run after the schedule's ``cancel_grace``).
    """
    context = current_occurrence()
    if context is not None and lifecycle.cancellation_requested(
        context.occurrence_id, context.scheduled_for
    ):
        raise OccurrenceCancelled(f"occurrence {context.occurrence_id} was asked to stop")
