"""The worker side of the django.tasks target: signal receivers around django-tasks-db's own
``db_worker`` (and any backend that sends django.tasks' signals), doing what ``OccurrenceTask``
does for Celery.

- ``task_enqueued`` (in the scheduler, inside the enqueue's transaction): notes the job's
  result id for the batch, which the publisher stores on the occurrence
  (``Occurrence.handoff_id``) in the same transaction.
- ``task_started`` (in the worker, just before the body): finds the occurrence from the id the
  job carries, checks that this job is its current handoff, and claims it with the Celery
  path's compare-and-set and checks (``lifecycle.claim``: state, deadline, approval, version,
  cancellation, owner permissions now, tenant and kill switches). A duplicate or a refusal
  raises ``HandoffRefused``: django.tasks then records the job ``FAILED`` without running the
  body, and the occurrence keeps (or records) its own outcome. On success the body gets the
  stored payload (never the job's), ``current_occurrence()`` is set and the lease is renewed.
- ``task_finished``: records ``succeeded``, ``retrying`` (a new job is enqueued by the
  scheduler at the retry time), ``failed`` or ``cancelled``. It never raises: a receiver that
  raises there would turn a recorded success into a failure.

A job without the scheduler's keyword (an ordinary ``enqueue`` of the same task) runs unchanged.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import sys
import threading
from contextvars import Token
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Never

from scheduler_app import events, lifecycle
from scheduler_app.clock import Clock, SystemClock
from scheduler_app.conf import get_settings
from scheduler_app.context import (
    OccurrenceContext,
    enter_occurrence,
    leave_occurrence,
)
from scheduler_app.djtasks import compat
from scheduler_app.djtasks.errors import HandoffRefused
from scheduler_app.djtasks.publisher import SCHEDULER_KWARG, enqueued, enqueuing
from scheduler_app.errors import OccurrenceCancelled
from scheduler_app.models import Occurrence, OccurrenceState
from scheduler_app.retrying import RetryPolicy, decide_retry
from scheduler_app.safety import killswitch
from scheduler_app.worker.leases import LeaseKeeper

logger = logging.getLogger("scheduler_app.djtasks")

DUPLICATE = frozenset(
    {"claimed_by_another", "retry_not_due", "superseded_handoff"}
    | {f"already_{state}" for state in OccurrenceState.values}
)
"""Refusals that mean "another job of this occurrence ran or runs it"."""


class Settings:
    clock: Clock = SystemClock()
    """The worker side's clock (tests replace it)."""


def _renew(occurrence_id: str, token: int, now: datetime, lease: timedelta) -> bool:
    return lifecycle.heartbeat(occurrence_id, token=token, now=now, lease=lease)


leases = LeaseKeeper(_renew)


@dataclass
class Running:
    claim: lifecycle.Claim
    context: Token[OccurrenceContext | None]
    lease_key: int


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
    handoff_id = str(task_result.id)
    current = Occurrence.objects.filter(pk=occurrence_id).values_list("handoff_id", flat=True)
    found = list(current[:1])
    if not found:
        _refuse(str(occurrence_id), "unknown_occurrence", None)
    # The stored handoff, or the one this process is enqueuing right now (a backend that runs
    # the job inside ``enqueue``, before the batch's handoff ids are written).
    if handoff_id not in (found[0], (enqueued.get() or {}).get(str(occurrence_id))):
        # An earlier job of a run handed off again (its worker was lost, it never started):
        # the occurrence's current job runs it, this one never does.
        _refuse(str(occurrence_id), "superseded_handoff", None)
    clock = Settings.clock
    lease = timedelta(seconds=get_settings().WORKER_LEASE)
    claim = lifecycle.claim(
        occurrence_id,
        owner=worker_owner(),
        now=clock.now(),
        lease=lease,
        task=str(task_result.task.module_path),
    )
    if not claim.claimed or claim.occurrence is None:
        _refuse(str(occurrence_id), claim.reason, claim)
    occurrence = claim.occurrence
    stopped = claim.stopped if claim.stopped is not None else killswitch.stops(occurrence)
    if stopped or not _use_stored_payload(task_result, occurrence):
        reason = killswitch.REASON if stopped else "payload_mismatch"
        state = OccurrenceState.SKIPPED if stopped else OccurrenceState.FAILED
        lifecycle.finish(
            occurrence.pk, token=claim.token, state=state, reason=reason, now=clock.now()
        )
        _refuse(str(occurrence_id), reason, None)
    context = OccurrenceContext.from_occurrence(occurrence, claim.attempt)
    running = Running(
        claim,
        enter_occurrence(context),
        leases.hold(str(occurrence.pk), token=claim.token, lease=lease, clock=clock),
    )
    with _lock:
        _running[handoff_id] = running


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


def _refuse(occurrence_id: str, reason: str, claim: lifecycle.Claim | None) -> Never:
    duplicate = reason in DUPLICATE
    logger.info(
        "%s: %s %s",
        "duplicate job not run" if duplicate else "job not run",
        occurrence_id,
        reason,
        extra={"action": "occurrence.refused", "occurrence_id": occurrence_id, "reason": reason},
    )
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
    with contextlib.suppress(ValueError):  # set in another context (an async backend)
        leave_occurrence(running.context)
    try:
        _record(running.claim, task_result)
    except Exception:  # never raise here: django.tasks would overwrite the job's outcome
        logger.exception(
            "could not record the outcome; the lease runs out and the reconciler retries it",
            extra={"action": "occurrence.record_failed", "occurrence_id": str(task_result.id)},
        )


def _record(claim: lifecycle.Claim, task_result: Any) -> None:
    occurrence = claim.occurrence
    if occurrence is None:
        return
    now = Settings.clock.now()
    if task_result.status == compat.TaskResultStatus.SUCCESSFUL:
        _finish(claim, OccurrenceState.SUCCEEDED, "", now)
        return
    path, error = _error_of(task_result)
    failure = _stand_in(path)
    if isinstance(failure, OccurrenceCancelled):
        _finish(claim, OccurrenceState.CANCELLED, "cancel_requested", now, error)
        return
    schedule = occurrence.schedule
    decision = decide_retry(
        failure,
        attempt=claim.attempt,
        now=now,
        deadline_at=occurrence.deadline_at,
        policy=RetryPolicy(max_attempts=schedule.max_attempts, base_delay=schedule.retry_delay),
    )
    if decision.retry and decision.at is not None:
        lifecycle.retry_later(
            occurrence.pk, token=claim.token, at=decision.at, now=now, error=error
        )
        return
    _finish(claim, OccurrenceState.FAILED, decision.reason, now, error)


def _finish(
    claim: lifecycle.Claim, state: str, reason: str, now: datetime, error: str = ""
) -> None:
    if claim.occurrence is None:
        return
    ended = lifecycle.finish(
        claim.occurrence.pk,
        token=claim.token,
        state=state,
        reason=reason,
        now=now,
        error=error,
        claimed=claim.occurrence,
    )
    if not ended:
        logger.warning(
            "outcome not recorded: the attempt lost its lease",
            extra={"action": "occurrence.fenced", "occurrence_id": str(claim.occurrence.pk)},
        )


def _error_of(task_result: Any) -> tuple[str, str]:
    """The failure's class path and a one-line error (its traceback's last line)."""
    if not task_result.errors:
        return "", "the job failed without an error recorded"
    last = task_result.errors[-1]
    lines = [line for line in (last.traceback or "").strip().splitlines() if line.strip()]
    return last.exception_class_path, (lines[-1] if lines else last.exception_class_path)


def _stand_in(path: str) -> BaseException:
    """An instance of the failure's class, for ``isinstance`` decisions (django.tasks keeps
    only its class path). The class is looked up among imported modules, never imported."""
    module_name, _, name = path.rpartition(".")
    module = sys.modules.get(module_name)
    cls = getattr(module, name, None) if module is not None else None
    if isinstance(cls, type) and issubclass(cls, BaseException):
        try:
            return cls.__new__(cls)
        except TypeError:
            pass
    return Exception(path)


def connect() -> None:
    """Connect the receivers (``AppConfig.ready``), when django.tasks is installed."""
    if not compat.AVAILABLE:
        return
    compat.task_enqueued.connect(on_enqueued, dispatch_uid="scheduler_app.djtasks.enqueued")
    compat.task_started.connect(on_started, dispatch_uid="scheduler_app.djtasks.started")
    compat.task_finished.connect(on_finished, dispatch_uid="scheduler_app.djtasks.finished")
