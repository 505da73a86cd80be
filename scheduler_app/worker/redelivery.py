"""A delivery whose claim met the database down goes back to the broker, soon.

Without this, a claim that raises a connection error (PostgreSQL restarting; behind
PgBouncer, ``server login has been failing`` for up to ``server_login_retry``) fails the
Celery task, Celery acknowledges the message, and the occurrence waits ``dispatched`` for
``SCHEDULER_DISPATCH_TIMEOUT`` (an hour by default) before the reconciler publishes it again.

Instead the worker publishes the same message again, ``FIRST_DELAY`` s later, doubling up to
``MAX_DELAY``, ``MAX_TRIES`` times (about four minutes in all), then gives up to the dispatch
timeout. The copy keeps the task id (= occurrence id), the arguments, ``expires`` (the
deadline) and the scheduler's headers; the try number travels in its own header
(``CLAIM_TRIES``). It runs nothing by itself: its delivery goes through the compare-and-set
claim like any other, so a claim that had in fact committed before its connection dropped
makes the copy a refused duplicate (the running attempt's lease then runs out and the
reconciler retries it, as for a worker that died).
"""

from __future__ import annotations

from typing import Any

from celery.exceptions import Retry
from kombu.exceptions import KombuError

from scheduler_app.context import scheduler_header
from scheduler_app.handoff.protocol import HEADER
from scheduler_app.observability.tracing import trace_headers

CLAIM_TRIES = "scheduler_claim_tries"
"""Message header: how many deliveries of this message met the database down before it."""
FIRST_DELAY = 1.0
MAX_DELAY = 30.0
MAX_TRIES = 12
"""Deliveries published again for one message: 1 + 2 + 4 + 8 + 16 + 7 x 30 = 241 s."""


def tries(request: Any) -> int:
    """The claim tries that went before this delivery (0 for the beat's own message)."""
    value = getattr(request, CLAIM_TRIES, None)
    if value is None and isinstance(getattr(request, "headers", None), dict):
        value = request.headers.get(CLAIM_TRIES)
    return max(value, 0) if isinstance(value, int) and not isinstance(value, bool) else 0


def delay(before: int) -> float | None:
    """Seconds until the next delivery after ``before`` failed tries, or None: give up."""
    if before >= MAX_TRIES:
        return None
    return min(FIRST_DELAY * 2**before, MAX_DELAY)


def publish_again(task: Any, exc: Exception) -> Retry | None:
    """Publish the delivery running in ``task`` again after ``delay``; the ``Retry`` to raise
    (Celery then acknowledges this message), or None when the tries are used up or the
    broker refused the copy (the dispatch timeout covers it)."""
    request = task.request
    header = scheduler_header(request)
    before = tries(request)
    wait = delay(before)
    if header is None or wait is None:
        return None
    headers = {HEADER: header, **trace_headers(request), CLAIM_TRIES: before + 1}
    copy = task.signature_from_request(request, countdown=wait, headers=headers)
    try:
        copy.apply_async()
    except (KombuError, OSError):
        return None
    when: Any = wait  # Celery annotates ``numbers.Real``, which mypy cannot match to a float
    return Retry(f"the database is unavailable ({exc})", exc=exc, when=when, sig=copy)
