"""The end of a django.tasks job's attempt: what it ended in (``outcome_of``, from the job's
status and its recorded error; ``worker.outcomes.write`` writes it)."""

from __future__ import annotations

import contextlib
import sys
from datetime import datetime
from typing import Any

from scheduler_app.errors import OccurrenceCancelled
from scheduler_app.handoff import djtasks_compat as compat
from scheduler_app.models import OccurrenceState
from scheduler_app.policies.retry import RetryPolicy, decide_retry
from scheduler_app.worker import claiming
from scheduler_app.worker.outcomes import Outcome


def outcome_of(claim: claiming.Claim, task_result: Any, now: datetime) -> Outcome:
    occurrence = claim.occurrence
    if task_result.status == compat.TaskResultStatus.SUCCESSFUL or occurrence is None:
        return Outcome(OccurrenceState.SUCCEEDED, "")
    path, error = _error_of(task_result)
    failure = _stand_in(path, error)
    if isinstance(failure, OccurrenceCancelled):
        return Outcome(OccurrenceState.CANCELLED, "cancel_requested", error, failure)
    schedule = occurrence.schedule
    decision = decide_retry(
        failure,
        attempt=claim.attempt,
        now=now,
        deadline_at=occurrence.deadline_at,
        policy=RetryPolicy(max_attempts=schedule.max_attempts, base_delay=schedule.retry_delay),
    )
    if decision.retry and decision.at is not None:
        return Outcome(OccurrenceState.RETRYING, decision.reason, error, failure, decision.at)
    return Outcome(OccurrenceState.FAILED, decision.reason, error, failure)


def _error_of(task_result: Any) -> tuple[str, str]:
    """The failure's class path and a one-line error (its traceback's last line)."""
    if not task_result.errors:
        return "", "the job failed without an error recorded"
    last = task_result.errors[-1]
    lines = [line for line in (last.traceback or "").strip().splitlines() if line.strip()]
    return last.exception_class_path, (lines[-1] if lines else last.exception_class_path)


def _stand_in(path: str, error: str = "") -> BaseException:
    """An instance of the failure's class carrying its error line, for ``isinstance``
    decisions and the spans (django.tasks keeps only its class path and traceback). The class
    is looked up among imported modules, never imported."""
    module_name, _, name = path.rpartition(".")
    module = sys.modules.get(module_name)
    cls = getattr(module, name, None) if module is not None else None
    if isinstance(cls, type) and issubclass(cls, BaseException):
        try:
            failure = cls.__new__(cls)
        except TypeError:
            return Exception(error or path)
        with contextlib.suppress(AttributeError, TypeError):
            failure.args = (error,) if error else ()
        try:
            str(failure)  # a class whose __str__ needs what __init__ sets: describe it plainly
        except Exception:
            return Exception(error or path)
        return failure
    return Exception(error or path)
