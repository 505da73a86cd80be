"""What an attempt ended in (``Outcome``), its fenced write (``write``), and outcome writes
that survive a dropped connection or a locked database (``write_retried``), for every worker
path (Celery's ``OccurrenceTask``, the django.tasks receivers, the event deliveries).

Each write is a fenced compare-and-set, so a try that committed before its connection dropped
makes the next one a no-op: retrying is always safe.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from django.db import InterfaceError, OperationalError, connection

from scheduler_app.worker import claiming, lifecycle

logger = logging.getLogger("scheduler_app.tasks")

T = TypeVar("T")

RECORD_ATTEMPTS = 4
"""Tries to record an outcome through a dropped connection or a locked database (0.5, 1, 2 s
apart) before giving up: then the lease runs out and the reconciler retries the run."""


@dataclass(frozen=True)
class Outcome:
    """What an attempt ended in, decided before it is written."""

    state: str
    reason: str = ""
    error: str = ""
    failure: BaseException | None = None
    retry_at: datetime | None = None


def write(claim: claiming.Claim, outcome: Outcome, now: datetime) -> bool:
    """One fenced compare-and-set of the outcome (a no-op once it committed): ``retrying``
    until ``retry_at`` when it is set, else the end state; False when the lease was lost."""
    if claim.occurrence is None:
        return False
    if outcome.retry_at is not None:
        return lifecycle.retry_later(
            claim.occurrence.pk,
            token=claim.token,
            at=outcome.retry_at,
            now=now,
            error=outcome.error,
            scheduled_for=claim.occurrence.scheduled_for,
        )
    return lifecycle.finish(
        claim.occurrence.pk,
        token=claim.token,
        state=outcome.state,
        reason=outcome.reason,
        now=now,
        error=outcome.error,
        claimed=claim.occurrence,
    )


def delays(attempts: int = RECORD_ATTEMPTS) -> list[float]:
    """The pauses between tries: 0.5, 1, 2 ... seconds."""
    return [0.5 * 2**n for n in range(attempts - 1)]


def write_retried(write: Callable[[], T], pause: Callable[[float], None]) -> T:
    """Run ``write``; a dropped connection or a locked database gets a few more tries on a
    fresh connection (``pause`` waits between them). Inside a transaction it is not ours to
    reopen: the first error surfaces."""
    for attempt, delay in enumerate([*delays(), None], start=1):
        try:
            return write()
        except (OperationalError, InterfaceError) as exc:
            if delay is None or connection.in_atomic_block:
                raise
            logger.warning(
                "recording the outcome failed (%s); retrying in %.1f s",
                exc,
                delay,
                extra={"action": "occurrence.record_retry", "attempt": attempt},
            )
            connection.close()
            pause(delay)
    raise AssertionError("unreachable")
