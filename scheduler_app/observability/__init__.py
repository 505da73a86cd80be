"""Observability where teams already look: OpenTelemetry spans, Healthchecks-style pings and
Sentry Crons check-ins (docs/operations.md).

A handoff target's worker side calls the same three hooks, whatever runs the task:
``running(occurrence_id, carrier)`` around a delivery, ``run_started`` once the occurrence is
claimed, ``run_finished`` when its outcome is recorded. The beat's side lives in ``tracing``
(``materializing``, ``handing_off``) and ``beat``.
"""

from __future__ import annotations

from typing import Any

from scheduler_app.observability import pings, sentry, tracing
from scheduler_app.observability.tracing import running

__all__ = ["run_finished", "run_refused", "run_started", "running", "step"]

FINISHED = {
    "succeeded": ("", sentry.OK),
    "cancelled": ("", sentry.OK),  # stopped as asked: not a failure
    "failed": ("fail", sentry.ERROR),  # after the last retry
}
"""What an ended attempt pings (the suffix of ``<ping_url>``) and checks in, by its state;
``retrying`` only ends the span: the next attempt starts again."""


def step(name: str) -> Any:
    """A child span (``scheduler.<name>``) of the current run, or nothing without one."""
    return tracing.current_run().step(name)


def run_refused(reason: str) -> None:
    """The claim refused the delivery: nothing runs, nothing is pinged."""
    tracing.current_run().refused(reason)


def run_started(occurrence: Any, attempt: int) -> None:
    """An attempt of ``occurrence`` was claimed and is about to run."""
    tracing.current_run().claimed(occurrence, attempt)
    _report(occurrence, "start", sentry.IN_PROGRESS)


def run_finished(
    occurrence: Any, state: str, reason: str = "", error: BaseException | None = None
) -> None:
    """An attempt that ``run_started`` announced ended in ``state`` (recorded already)."""
    tracing.current_run().ended(state, reason, error)
    if state in FINISHED:
        _report(occurrence, *FINISHED[state])


def _report(occurrence: Any, suffix: str, status: str) -> None:
    """Ping the schedule's ``ping_url`` (if any) in its tenant's lane (``pings``: one per
    tenant), then check in with Sentry Crons."""
    schedule = occurrence.schedule
    tenant = str(getattr(schedule, "tenant", "") or "")
    pings.ping(getattr(schedule, "ping_url", ""), suffix, tenant=tenant)
    sentry.check_in(occurrence, status)
