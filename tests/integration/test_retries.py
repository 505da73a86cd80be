"""Retries, deadlines, dead letters and replay, run in-process with a fake clock.

A retry is another attempt of the same occurrence: same id (= Celery task id), same key,
same slot. The failing attempt puts the row back in the outbox as ``retrying`` with
``not_before``; the ticker publishes it again with that ``eta``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest

from scheduler_app.clock import FakeClock
from scheduler_app.dispatch.reconcile import reconcile
from scheduler_app.errors import ScheduleStateError
from scheduler_app.models import Occurrence, OccurrenceState
from scheduler_app.publishing import CeleryPublisher
from scheduler_app.services import replay_occurrence
from tests.integration.support import START, MemoryPublisher, ticker
from tests.integration.worker_support import (
    declared_permanent,
    due_one,
    fetch,
    flaky,
    invalid,
    rate_limited,
    run,
)

pytestmark = pytest.mark.django_db
SECOND = timedelta(seconds=1)


class RecordingApp:
    """Stands in for the Celery app under ``CeleryPublisher``: keeps every ``send_task``."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    @contextmanager
    def producer_or_acquire(self) -> Iterator[None]:
        yield None

    def send_task(self, name: str, **options: Any) -> None:
        self.sent.append({"task": name, **options})


def test_a_transient_error_is_retried_with_backoff_until_max_attempts() -> None:
    clock, app = FakeClock(START), RecordingApp()
    beat = ticker(CeleryPublisher(app, clock=clock), clock)  # type: ignore[arg-type]
    occurrence = due_one(clock, task="tests.rate_limited", max_attempts=3, retry_delay=10)
    occurrence_id = str(occurrence.pk)
    waits = []
    for attempt in (1, 2):
        started = clock.now()
        assert run(rate_limited, occurrence, clock).state == "IGNORED"
        row = fetch(occurrence)
        assert (row.state, row.reason, row.attempts) == (OccurrenceState.RETRYING, "retry", attempt)
        assert row.last_error == "TooManyRequests: 429 Too Many Requests"
        assert (row.dispatched_at, row.finished_at) == (None, None)
        waits.append(row.not_before - started)

        beat.tick()  # the retry goes out again: same task id and key, eta = not_before
        message = app.sent[-1]
        assert (message["task_id"], message["eta"]) == (occurrence_id, row.not_before)
        header = message["headers"]["scheduler"]
        assert header["idempotency_key"] == occurrence.idempotency_key
        assert fetch(occurrence).dispatched_at is not None
        assert fetch(occurrence).state == OccurrenceState.RETRYING

        # The message arrives early (a redelivery of the old one): not run yet.
        clock.set(row.not_before - 2 * SECOND)
        assert run(rate_limited, occurrence, clock).state == "IGNORED"
        assert fetch(occurrence).attempts == attempt
        clock.set(row.not_before)
        occurrence = fetch(occurrence)

    assert timedelta(seconds=10) <= waits[0] <= timedelta(seconds=15)  # 10 s + jitter
    assert timedelta(seconds=20) <= waits[1] <= timedelta(seconds=30)  # doubled
    result = run(rate_limited, occurrence, clock)
    assert result.state == "FAILURE"
    row = fetch(occurrence)
    assert (row.state, row.reason, row.attempts) == (
        OccurrenceState.FAILED,
        "retries_exhausted",
        3,
    )
    assert row.last_error == "TooManyRequests: 429 Too Many Requests"
    assert row.finished_at == clock.now()
    assert [m["task_id"] for m in app.sent] == [occurrence_id] * 2  # the first went via due_one
    assert Occurrence.objects.filter(schedule_id=row.schedule_id).count() == 1


def test_a_retry_that_succeeds_sees_its_attempt_number() -> None:
    clock, broker = FakeClock(START), MemoryPublisher()
    occurrence = due_one(clock, broker, task="tests.flaky", kwargs={"succeed_on": 2})
    assert run(flaky, occurrence, clock).state == "IGNORED"
    clock.set(fetch(occurrence).not_before)
    result = run(flaky, fetch(occurrence), clock)
    assert (result.state, result.result) == ("SUCCESS", 2)
    row = fetch(occurrence)
    # The success clears the retried error; the first attempt's row keeps it.
    assert (row.state, row.attempts, row.last_error) == (OccurrenceState.SUCCEEDED, 2, "")


def test_retries_stop_at_the_deadline() -> None:
    clock = FakeClock(START)
    occurrence = due_one(
        clock, task="tests.rate_limited", deadline=30, retry_delay=10, max_attempts=10
    )
    run(rate_limited, occurrence, clock)  # retry at +10..15 s: before the deadline
    row = fetch(occurrence)
    assert row.state == OccurrenceState.RETRYING
    assert row.deadline_at is not None and row.not_before < row.deadline_at
    clock.set(row.not_before)
    assert run(rate_limited, row, clock).state == "FAILURE"  # next would be at +30..45 s
    row = fetch(occurrence)
    assert (row.state, row.reason, row.attempts) == (
        OccurrenceState.FAILED,
        "retry_past_deadline",
        2,
    )


def test_a_retry_started_after_the_deadline_expires_instead() -> None:
    clock = FakeClock(START)
    occurrence = due_one(clock, task="tests.rate_limited", deadline=30, retry_delay=10)
    run(rate_limited, occurrence, clock)
    row = fetch(occurrence)
    assert row.deadline_at is not None
    clock.set(row.deadline_at + SECOND)  # the worker was busy; the retry arrives too late
    assert run(rate_limited, row, clock).state == "IGNORED"
    row = fetch(occurrence)
    assert (row.state, row.reason, row.attempts) == (
        OccurrenceState.EXPIRED,
        "deadline_passed",
        1,
    )
    assert row.started_at == occurrence.scheduled_for  # the one attempt that ran


def test_the_reconciler_expires_a_retry_whose_deadline_passed() -> None:
    clock = FakeClock(START)
    occurrence = due_one(clock, task="tests.rate_limited", deadline=30, retry_delay=10)
    run(rate_limited, occurrence, clock)
    deadline = fetch(occurrence).deadline_at
    assert deadline is not None
    assert reconcile(deadline - SECOND, retry_grace=timedelta(hours=1)).expired == 0
    assert reconcile(deadline, retry_grace=timedelta(hours=1)).expired == 1
    row = fetch(occurrence)
    assert (row.state, row.reason) == (OccurrenceState.EXPIRED, "deadline_passed")


@pytest.mark.parametrize(
    ("task", "error"),
    [
        (invalid, "ValidationError: ['the report period is malformed']"),
        (declared_permanent, "QuotaGone: the API key was revoked"),
    ],
)
def test_a_permanent_error_fails_at_once(task: Any, error: str) -> None:
    clock, broker = FakeClock(START), MemoryPublisher()
    occurrence = due_one(clock, broker, task=task.name, max_attempts=5)
    assert run(task, occurrence, clock).state == "FAILURE"
    row = fetch(occurrence)
    assert (row.state, row.reason, row.attempts) == (OccurrenceState.FAILED, "permanent_error", 1)
    assert row.last_error == error
    clock.advance(timedelta(minutes=10))
    ticker(broker, clock).tick()
    assert broker.ids.count(str(occurrence.pk)) == 1  # never published again


def test_replay_from_failed_reuses_the_key_with_a_new_attempt() -> None:
    clock, broker = FakeClock(START), MemoryPublisher()
    occurrence = due_one(
        clock, broker, task="tests.flaky", kwargs={"succeed_on": 2}, max_attempts=1, deadline=30
    )
    run(flaky, occurrence, clock)
    failed = fetch(occurrence)
    assert (failed.state, failed.reason) == (OccurrenceState.FAILED, "retries_exhausted")

    clock.advance(timedelta(hours=2))  # long past the deadline: a replay is deliberate
    replayed = replay_occurrence(occurrence.pk, clock=clock)
    assert (replayed.state, replayed.reason, replayed.deadline_at) == ("pending", "replay", None)
    ticker(broker, clock).tick()
    assert broker.ids.count(str(occurrence.pk)) == 2

    result = run(flaky, fetch(occurrence), clock)
    assert (result.state, result.result) == ("SUCCESS", 2)
    row = fetch(occurrence)
    assert (row.state, row.attempts) == (OccurrenceState.SUCCEEDED, 2)
    assert (row.idempotency_key, row.scheduled_for) == (
        occurrence.idempotency_key,
        occurrence.scheduled_for,
    )


def test_replaying_a_succeeded_occurrence_needs_force() -> None:
    clock = FakeClock(START)
    occurrence = due_one(clock, task="tests.flaky", kwargs={"succeed_on": 1})
    assert run(flaky, occurrence, clock).state == "SUCCESS"
    with pytest.raises(ScheduleStateError, match="force"):
        replay_occurrence(occurrence.pk, clock=clock)
    assert fetch(occurrence).state == OccurrenceState.SUCCEEDED

    assert replay_occurrence(occurrence.pk, force=True, clock=clock).state == "pending"
    result = run(flaky, fetch(occurrence), clock)
    assert (result.state, result.result) == ("SUCCESS", 2)
