"""Outcome writes that survive a dropped connection or a locked database, for every worker
path (Celery's ``OccurrenceTask``, the django.tasks receivers).

Each write is a fenced compare-and-set, so a try that committed before its connection dropped
makes the next one a no-op: retrying is always safe.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from django.db import InterfaceError, OperationalError, connection

logger = logging.getLogger("scheduler_app.tasks")

T = TypeVar("T")

RECORD_ATTEMPTS = 4
"""Tries to record an outcome through a dropped connection or a locked database (0.5, 1, 2 s
apart) before giving up: then the lease runs out and the reconciler retries the run."""


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
