"""Retry decisions: backoff with jitter, bounded by attempts and the deadline (pure)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.core.exceptions import ValidationError

from scheduler_app.errors import PermanentTaskError
from scheduler_app.policies.retry import RetryPolicy, backoff, classify, decide_retry

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
POLICY = RetryPolicy(max_attempts=4, base_delay=10, max_delay=60, jitter=0.5)


def test_backoff_doubles_then_caps_and_jitter_adds_at_most_half() -> None:
    assert backoff(1, POLICY, lambda: 0.0) == timedelta(seconds=10)
    assert backoff(2, POLICY, lambda: 0.0) == timedelta(seconds=20)
    assert backoff(3, POLICY, lambda: 0.0) == timedelta(seconds=40)
    assert backoff(4, POLICY, lambda: 0.0) == timedelta(seconds=60)
    assert backoff(1, POLICY, lambda: 1.0) == timedelta(seconds=15)


@pytest.mark.parametrize(
    "exc", [PermanentTaskError("x"), ValidationError("x"), PermissionError("x")]
)
def test_permanent_errors_never_retry(exc: BaseException) -> None:
    decision = decide_retry(exc, attempt=1, now=NOW, deadline_at=None, policy=POLICY)
    assert (decision.retry, decision.reason) == (False, "permanent_error")


def test_a_task_may_declare_its_own_permanent_errors() -> None:
    assert classify(KeyError("x"), (KeyError,))
    assert not classify(KeyError("x"))


def test_transient_error_retries_with_backoff() -> None:
    decision = decide_retry(
        ConnectionError(), attempt=1, now=NOW, deadline_at=None, policy=POLICY, rand=lambda: 0.0
    )
    assert decision.retry and decision.at == NOW + timedelta(seconds=10)


def test_retries_stop_after_max_attempts() -> None:
    decision = decide_retry(ConnectionError(), attempt=4, now=NOW, deadline_at=None, policy=POLICY)
    assert (decision.retry, decision.reason) == (False, "retries_exhausted")


def test_retries_never_go_past_the_deadline() -> None:
    deadline = NOW + timedelta(seconds=15)
    first = decide_retry(
        ConnectionError(), attempt=1, now=NOW, deadline_at=deadline, policy=POLICY, rand=lambda: 0
    )
    second = decide_retry(
        ConnectionError(), attempt=2, now=NOW, deadline_at=deadline, policy=POLICY, rand=lambda: 0
    )
    assert first.retry
    assert (second.retry, second.reason) == (False, "retry_past_deadline")
