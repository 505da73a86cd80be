"""Retry decisions for one occurrence: exponential backoff with jitter, bounded by the deadline.

Pure: the caller passes the attempt number, the instant and a random source.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.core.exceptions import PermissionDenied, ValidationError

from scheduler_app.errors import PermanentTaskError, ScheduleValidationError

PERMANENT_EXCEPTIONS: tuple[type[BaseException], ...] = (
    PermanentTaskError,
    ValidationError,
    PermissionDenied,
    ScheduleValidationError,
    PermissionError,
)
"""Failures that no retry can fix: they fail the occurrence at once."""


@dataclass(frozen=True, kw_only=True)
class RetryPolicy:
    max_attempts: int = 3
    """Attempts in all, the first one included."""
    base_delay: float = 10.0
    """Seconds before the second attempt; doubles each time."""
    max_delay: float = 3600.0
    jitter: float = 0.5
    """Up to this fraction of the delay is added at random (spreads retry storms)."""


@dataclass(frozen=True)
class RetryDecision:
    retry: bool
    reason: str
    """``retry``, ``permanent_error``, ``retries_exhausted`` or ``retry_past_deadline``."""
    at: datetime | None = None


def classify(exc: BaseException, extra_permanent: tuple[type[BaseException], ...] = ()) -> bool:
    """True when ``exc`` is permanent (validation, permission, or declared by the task)."""
    return isinstance(exc, PERMANENT_EXCEPTIONS + tuple(extra_permanent))


def backoff(attempt: int, policy: RetryPolicy, rand: Callable[[], float]) -> timedelta:
    """Delay after failed ``attempt`` (1-based): base * 2**(attempt-1), capped, plus jitter."""
    delay = min(policy.base_delay * 2 ** (attempt - 1), policy.max_delay)
    return timedelta(seconds=delay * (1 + policy.jitter * rand()))


def decide_retry(
    exc: BaseException,
    *,
    attempt: int,
    now: datetime,
    deadline_at: datetime | None,
    policy: RetryPolicy,
    extra_permanent: tuple[type[BaseException], ...] = (),
    rand: Callable[[], float] = random.random,
) -> RetryDecision:
    if classify(exc, extra_permanent):
        return RetryDecision(False, "permanent_error")
    if attempt >= policy.max_attempts:
        return RetryDecision(False, "retries_exhausted")
    at = now + backoff(attempt, policy, rand)
    if deadline_at is not None and at >= deadline_at:
        return RetryDecision(False, "retry_past_deadline")
    return RetryDecision(True, "retry", at)
