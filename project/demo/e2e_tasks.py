"""Tasks for the end-to-end worker tests (``tests/acceptance/test_worker_*.py``).

Not autodiscovered: the tests start their workers with ``--include=project.demo.e2e_tasks``
and import this module themselves. Every task reports to Redis under a namespace the test
passes (``ns``), so the test sees what happened inside the worker:

- ``{ns}:executions``  raw executions (a counter: every time the task body started);
- ``{ns}:runs``        one JSON line per execution (occurrence, key, attempt, start/end times,
  outcome);
- ``{ns}:sink``        the business effect, a hash keyed by the idempotency key and written
  with HSETNX: applied once per key however often the task runs.
"""

from __future__ import annotations

import json
import time
from typing import Any

import redis
from celery import shared_task

from scheduler_app.context import OccurrenceContext, current_occurrence
from scheduler_app.errors import OccurrenceCancelled, PermanentTaskError
from scheduler_app.tasks import check_cancelled


class TooManyRequests(Exception):
    """A simulated HTTP 429 from a rate-limited API: transient, so the scheduler retries."""

    status_code = 429


def _redis(url: str) -> redis.Redis:
    return redis.Redis.from_url(url)


def _context() -> OccurrenceContext:
    occurrence = current_occurrence()
    if occurrence is None:
        raise RuntimeError("the e2e tasks only run as scheduled occurrences")
    return occurrence


def _start(client: redis.Redis, ns: str) -> dict[str, Any]:
    occurrence = _context()
    client.incr(f"{ns}:executions")
    return {
        "occurrence_id": occurrence.occurrence_id,
        "idempotency_key": occurrence.idempotency_key,
        "scheduled_for": occurrence.scheduled_for.isoformat(),
        "attempt": occurrence.attempt,
        "start": time.time(),
    }


def _finish(client: redis.Redis, ns: str, run: dict[str, Any], outcome: str) -> None:
    run.update(end=time.time(), outcome=outcome)
    client.rpush(f"{ns}:runs", json.dumps(run))


def _apply_effect(client: redis.Redis, ns: str) -> bool:
    """The idempotent side effect: one sink entry per idempotency key."""
    occurrence = _context()
    return bool(client.hsetnx(f"{ns}:sink", occurrence.idempotency_key, occurrence.occurrence_id))


@shared_task(name="e2e.sleep")
def sleep(*, redis_url: str, ns: str, seconds: float, cooperative: bool = False) -> str:
    """Run for ``seconds``; with ``cooperative`` stop early when asked (``check_cancelled``)."""
    client = _redis(redis_url)
    run = _start(client, ns)
    outcome = "error"
    try:
        until = time.monotonic() + seconds
        while time.monotonic() < until:
            if cooperative:
                check_cancelled()
            time.sleep(0.1)
        outcome = "done"
    except OccurrenceCancelled:
        outcome = "cancelled"
        raise
    finally:
        _finish(client, ns, run, outcome)
    return outcome


@shared_task(name="e2e.effect")
def effect(
    *, redis_url: str, ns: str, seconds: float = 0.0, hold_first_attempt: float = 0.0
) -> bool:
    """Apply the effect keyed by the idempotency key, then take ``seconds``.

    ``hold_first_attempt``: the first attempt then waits this long before returning (before
    the message is acknowledged), and sets ``{ns}:applied:1`` so a test knows when to kill
    the worker.
    """
    client = _redis(redis_url)
    run = _start(client, ns)
    applied = _apply_effect(client, ns)
    run["applied"] = applied
    attempt = _context().attempt
    client.set(f"{ns}:applied:{attempt}", 1)
    if hold_first_attempt and attempt == 1:
        time.sleep(hold_first_attempt)
    elif seconds:
        time.sleep(seconds)
    _finish(client, ns, run, "done")
    return applied


@shared_task(name="e2e.rate_limited")
def rate_limited(*, redis_url: str, ns: str, fail_times: int | None = None) -> bool:
    """Raise a simulated HTTP 429 on the first ``fail_times`` executions (always when None)."""
    client = _redis(redis_url)
    run = _start(client, ns)
    if fail_times is None or int(client.get(f"{ns}:executions") or 0) <= fail_times:
        _finish(client, ns, run, "429")
        raise TooManyRequests("429 Too Many Requests (simulated)")
    applied = _apply_effect(client, ns)
    _finish(client, ns, run, "done")
    return applied


@shared_task(name="e2e.permanent")
def permanent(*, redis_url: str, ns: str) -> bool:
    """Fail permanently until the test sets ``{ns}:fixed`` (a bad payload, then fixed)."""
    client = _redis(redis_url)
    run = _start(client, ns)
    if not client.exists(f"{ns}:fixed"):
        _finish(client, ns, run, "permanent")
        raise PermanentTaskError("the payload is invalid (simulated); fix it and replay")
    applied = _apply_effect(client, ns)
    _finish(client, ns, run, "done")
    return applied
