"""The worker side of the django.tasks target: signal receivers around django-tasks-db's own
``db_worker`` (and any backend that sends django.tasks' signals), doing what ``OccurrenceTask``
does for Celery.

- ``task_enqueued`` (in the scheduler, inside the enqueue's transaction): notes the job's
  result id for the batch, which the publisher stores on the occurrence
  (``Occurrence.handoff_id``) in the same transaction.
- ``task_started`` (in the worker, just before the body): finds the occurrence from the id the
  job carries, checks that this job is its current handoff, and claims it with the Celery
  path's compare-and-set and checks (``claiming.claim``: state, deadline, approval, version,
  cancellation, owner permissions now, tenant and kill switches). A duplicate or a refusal
  raises ``HandoffRefused``: django.tasks then records the job ``FAILED`` without running the
  body, and the occurrence keeps (or records) its own outcome. On success the body gets the
  stored payload (never the job's), ``current_occurrence()`` is set and the lease is renewed.
- ``task_finished``: records ``succeeded``, ``retrying`` (a new job is enqueued by the
  scheduler at the retry time), ``failed`` or ``cancelled`` (decided and written by
  ``djtasks.outcome``). It never raises: a receiver that raises there would turn a recorded
  success into a failure.

A job without the scheduler's keyword (an ordinary ``enqueue`` of the same task) runs unchanged.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from contextvars import Token
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Never

from django.db import DatabaseError

from scheduler_app import events, observability
from scheduler_app.clock import Clock, SystemClock
from scheduler_app.conf import get_settings
from scheduler_app.context import (
    OccurrenceContext,
    enter_occurrence,
    leave_occurrence,
)
from scheduler_app.djtasks import giveback
from scheduler_app.djtasks.errors import HandoffRefused
from scheduler_app.djtasks.outcome import outcome_of
from scheduler_app.djtasks.publisher import SCHEDULER_KWARG, TRACE_KWARG, enqueued, enqueuing
from scheduler_app.handoff import djtasks_compat as compat
from scheduler_app.models import Occurrence, OccurrenceState
from scheduler_app.safety import killswitch
from scheduler_app.worker import claiming, lifecycle, outcomes
from scheduler_app.worker.leases import LeaseKeeper
from scheduler_app.worker.outcomes import Outcome, write

logger = logging.getLogger("scheduler_app.djtasks")

DUPLICATE = frozenset(
    {"claimed_by_another", "retry_not_due", "superseded_handoff"}
    | {f"already_{state}" for state in OccurrenceState.values}
)
"""Refusals that mean "another job of this occurrence ran or runs it"."""


class Settings:
    clock: Clock = SystemClock()
    """The worker side's clock (tests replace it)."""
    pause: Callable[[float], None] = staticmethod(time.sleep)
    """How the worker waits between tries of a database write (tests replace it)."""


leases = LeaseKeeper(lifecycle.heartbeat)


@dataclass
class Running:
    claim: claiming.Claim
    context: Token[OccurrenceContext | None]
    lease_key: int
    body: contextlib.ExitStack
    """The ``scheduler.execute`` span (the body), ended before the outcome is written."""
    spans: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)
    """The ``scheduler.run`` span (the delivery), ended last."""


_running: dict[str, Running] = {}
_lock = threading.Lock()


def worker_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}"


def on_enqueued(sender: Any, task_result: Any, **kwargs: Any) -> None:
    occurrence_id, batch = enqueuing.get(), enqueued.get()
    if occurrence_id is None or batch is None:
        return
    if task_result.kwargs.get(SCHEDULER_KWARG) == occurrence_id:
        batch[occurrence_id] = str(task_result.id)


def on_started(sender: Any, task_result: Any, **kwargs: Any) -> None:
    occurrence_id = task_result.kwargs.pop(SCHEDULER_KWARG, None)
    if occurrence_id is None:
        return  # not handed off by the scheduler: an ordinary job runs unchanged
    carrier = task_result.kwargs.pop(TRACE_KWARG, None)
    spans = contextlib.ExitStack()  # the ``scheduler.run`` span, closed by ``on_finished``
    spans.enter_context(
        observability.running(str(occurrence_id), carrier if isinstance(carrier, dict) else None)
    )
    try:
        running = _start(str(occurrence_id), task_result)
    except BaseException:
        spans.close()
        raise
    running.spans = spans
    with _lock:
        _running[str(task_result.id)] = running


def _start(occurrence_id: str, task_result: Any) -> Running:
    """Claim the occurrence for this job and set the body up to run (or refuse it)."""
    handoff_id = str(task_result.id)
    clock = Settings.clock
    lease = timedelta(seconds=get_settings().WORKER_LEASE)
    try:
        with observability.step("claim"):
            claim = _claim(occurrence_id, handoff_id, task_result, lease)
    except DatabaseError as exc:
        _claim_failed(occurrence_id, handoff_id, exc)
    if not claim.claimed or claim.occurrence is None:
        _refuse(occurrence_id, claim.reason, claim)
    occurrence = claim.occurrence
    stopped = claim.stopped if claim.stopped is not None else killswitch.stops(occurrence)
    if stopped or not _use_stored_payload(task_result, occurrence):
        reason = killswitch.REASON if stopped else "payload_mismatch"
        state = OccurrenceState.SKIPPED if stopped else OccurrenceState.FAILED
        ended = outcomes.write_retried(
            lambda: write(claim, Outcome(state, reason), clock.now()), Settings.pause
        )
        if ended:
            observability.run_finished(occurrence, state, reason)
        _refuse(occurrence_id, reason, None, recorded=ended)
    observability.run_started(occurrence, claim.attempt)
    context = OccurrenceContext.from_occurrence(occurrence, claim.attempt)
    token = enter_occurrence(context)
    body = contextlib.ExitStack()  # the ``scheduler.execute`` span, current in the body
    body.enter_context(observability.step("execute"))
    return Running(
        claim,
        token,
        leases.hold(
            str(occurrence.pk),
            token=claim.token,
            lease=lease,
            clock=clock,
            scheduled_for=occurrence.scheduled_for,
        ),
        body,
    )


def _claim(
    occurrence_id: str, handoff_id: str, task_result: Any, lease: timedelta
) -> claiming.Claim:
    """The Celery path's claim, for the occurrence's current handoff only."""
    current = Occurrence.objects.filter(pk=occurrence_id).values_list("handoff_id", flat=True)
    found = list(current[:1])
    if not found:
        return claiming.Claim(False, "unknown_occurrence")
    # The stored handoff, or the one this process is enqueuing right now (a backend that runs
    # the job inside ``enqueue``, before the batch's handoff ids are written).
    if handoff_id not in (found[0], (enqueued.get() or {}).get(occurrence_id)):
        # An earlier job of a run handed off again (its worker was lost, it never started):
        # the occurrence's current job runs it, this one never does.
        return claiming.Claim(False, "superseded_handoff")
    return claiming.claim(
        occurrence_id,
        owner=worker_owner(),
        now=Settings.clock.now(),
        lease=lease,
        task=str(task_result.task.module_path),
    )


def _claim_failed(occurrence_id: str, handoff_id: str, exc: DatabaseError) -> Never:
    """The claim hit a database error: this job will not run (django.tasks does not run a
    job twice), so the occurrence goes back to the outbox for a new one (``giveback``)."""
    error = f"{type(exc).__name__}: {exc}"
    try:
        moved = outcomes.write_retried(
            lambda: giveback.give_back(occurrence_id, handoff_id, Settings.clock.now(), error),
            Settings.pause,
        )
    except DatabaseError:
        logger.exception(
            "could not give %s back to the outbox; the reconciler republishes it after "
            "SCHEDULER_DISPATCH_TIMEOUT",
            occurrence_id,
            extra={"action": "occurrence.give_back_failed", "occurrence_id": occurrence_id},
        )
        moved = 0
    logger.warning(
        "claim of %s failed (%s); %s",
        occurrence_id,
        error,
        "handed off again shortly" if moved else "left to the lease and the reconciler",
        extra={"action": "occurrence.claim_failed", "occurrence_id": occurrence_id},
    )
    observability.run_refused(giveback.REASON)
    raise HandoffRefused(f"occurrence {occurrence_id} not run: its claim failed ({error})") from exc


def _use_stored_payload(task_result: Any, occurrence: Occurrence) -> bool:
    """Make the body run with the stored payload, whatever the job row says (a forged or edited
    row picks no other payload). False when the job's arguments cannot be replaced."""
    stored_args = list(getattr(occurrence, "args", None) or [])
    if isinstance(task_result.args, list):
        task_result.args[:] = stored_args
    elif list(task_result.args) != stored_args:
        return False
    task_result.kwargs.clear()
    task_result.kwargs.update(occurrence.kwargs)
    return True


def _refuse(
    occurrence_id: str, reason: str, claim: claiming.Claim | None, *, recorded: bool = False
) -> Never:
    """Stop the job before its body; ``recorded``: its outcome was recorded and announced
    already (its span keeps that outcome)."""
    duplicate = reason in DUPLICATE
    logger.info(
        "%s: %s %s",
        "duplicate job not run" if duplicate else "job not run",
        occurrence_id,
        reason,
        extra={"action": "occurrence.refused", "occurrence_id": occurrence_id, "reason": reason},
    )
    if not recorded:
        observability.run_refused(reason)
    if duplicate:
        schedule_id = claim.occurrence.schedule_id if claim and claim.occurrence else None
        events.duplicate_prevented.send(
            sender=None,
            kind="delivery",
            schedule_id=str(schedule_id) if schedule_id else None,
            occurrence_id=occurrence_id,
        )
    raise HandoffRefused(f"occurrence {occurrence_id} not run: {reason}")


def on_finished(sender: Any, task_result: Any, **kwargs: Any) -> None:
    with _lock:
        running = _running.pop(str(task_result.id), None)
    if running is None:
        return  # an ordinary job, or one refused before its body
    leases.release(running.lease_key)
    try:
        _finished(running, task_result)
    except Exception:  # never raise here: django.tasks would overwrite the job's outcome
        logger.exception(
            "could not record the outcome; the lease runs out and the reconciler retries it",
            extra={"action": "occurrence.record_failed", "occurrence_id": str(task_result.id)},
        )
    finally:
        _close(running.spans)


def _finished(running: Running, task_result: Any) -> None:
    """End the body's span, record the outcome (retried through a dropped connection or a
    locked database), then announce it (span, pings, check-in)."""
    claim = running.claim
    now = Settings.clock.now()
    outcome = outcome_of(claim, task_result, now)
    failure = outcome.failure
    _close(running.body, failure)  # the body's span ends with its error, as on the Celery path
    with contextlib.suppress(ValueError):  # set in another context (an async backend)
        leave_occurrence(running.context)
    if claim.occurrence is None:
        return
    with observability.step("outcome"):
        ended = outcomes.write_retried(lambda: write(claim, outcome, now), Settings.pause)
    if not ended:
        logger.warning(
            "outcome not recorded: the attempt lost its lease",
            extra={"action": "occurrence.fenced", "occurrence_id": str(claim.occurrence.pk)},
        )
        return
    observability.run_finished(claim.occurrence, outcome.state, outcome.reason, failure)


def _close(spans: contextlib.ExitStack, failure: BaseException | None = None) -> None:
    """End spans opened in ``task_started``; never let them keep the outcome from being
    written (spans opened in another context by an async backend, an exception that cannot
    be described)."""
    try:
        if failure is None:
            spans.close()
        else:
            spans.__exit__(type(failure), failure, None)
    except Exception:
        logger.warning(
            "could not end the job's spans",
            exc_info=True,
            extra={"action": "occurrence.spans_not_ended"},
        )


def connect() -> None:
    """Connect the receivers (``AppConfig.ready``), when django.tasks is installed."""
    if not compat.AVAILABLE:
        return
    compat.task_enqueued.connect(on_enqueued, dispatch_uid="scheduler_app.djtasks.enqueued")
    compat.task_started.connect(on_started, dispatch_uid="scheduler_app.djtasks.started")
    compat.task_finished.connect(on_finished, dispatch_uid="scheduler_app.djtasks.finished")
