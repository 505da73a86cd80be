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

SUCCEEDED = "succeeded"
FAILED = "failed"
CANCELLED = "cancelled"
RETRYING = "retrying"


def step(name: str) -> Any:
    """A child span (``scheduler.<name>``) of the current run, or nothing without one."""
    return tracing.current_run().step(name)


def run_refused(reason: str) -> None:
    """The claim refused the delivery: nothing runs, nothing is pinged."""
    tracing.current_run().refused(reason)


def run_started(occurrence: Any, attempt: int) -> None:
    """An attempt of ``occurrence`` was claimed and is about to run."""
    tracing.current_run().claimed(occurrence, attempt)
    url = getattr(occurrence.schedule, "ping_url", "")
    if url:
        pings.ping(url, "start", tenant=_tenant(occurrence))
    sentry.check_in(occurrence, sentry.IN_PROGRESS)


def run_finished(
    occurrence: Any, state: str, reason: str = "", error: BaseException | None = None
) -> None:
    """An attempt that ``run_started`` announced ended in ``state`` (recorded already).

    ``succeeded`` and ``cancelled`` (stopped as asked) ping ``<ping_url>`` and check in
    ``ok``; ``failed`` (after the last retry) pings ``<ping_url>/fail`` and checks in
    ``error``; ``retrying`` only ends the span: the next attempt starts again."""
    tracing.current_run().ended(state, reason, error)
    if state == RETRYING:
        return
    url = getattr(occurrence.schedule, "ping_url", "")
    if state in (SUCCEEDED, CANCELLED):
        if url:
            pings.ping(url, tenant=_tenant(occurrence))
        sentry.check_in(occurrence, sentry.OK)
    elif state == FAILED:
        if url:
            pings.ping(url, "fail", tenant=_tenant(occurrence))
        sentry.check_in(occurrence, sentry.ERROR)


def _tenant(occurrence: Any) -> str:
    """The lane of the occurrence's pings (``pings``: one per tenant)."""
    return str(getattr(occurrence.schedule, "tenant", "") or "")
