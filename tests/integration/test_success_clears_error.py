"""A success clears the occurrence's ``last_error`` (a lost or retried attempt's); the attempt
history keeps each attempt's error. Both outcome paths: the one-statement finish and the ORM
path (a buffering schedule)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from scheduler_app.clock import FakeClock
from scheduler_app.dispatch.reconcile import reconcile
from scheduler_app.models import OccurrenceState
from scheduler_app.worker import claiming
from tests.integration.support import START, MemoryPublisher, ticker
from tests.integration.worker_support import due_one, fetch, flaky, run

pytestmark = pytest.mark.django_db
LEASE = timedelta(seconds=30)


@pytest.mark.parametrize("overlap_policy", ["skip", "buffer_all"])
def test_a_run_that_succeeds_after_a_lost_attempt_clears_its_error(overlap_policy: str) -> None:
    clock, broker = FakeClock(START), MemoryPublisher()
    occurrence = due_one(
        clock, broker, task="tests.flaky", kwargs={"succeed_on": 0}, overlap_policy=overlap_policy
    )
    claiming.claim(occurrence.pk, owner="killed", now=clock.now(), lease=LEASE)
    clock.advance(LEASE + timedelta(seconds=1))
    assert reconcile(clock.now(), retry_grace=timedelta(seconds=60)).requeued == 1
    assert "stopped heartbeating" in fetch(occurrence).last_error

    ticker(broker, clock, RECONCILE_INTERVAL=3600).tick()  # handed off again
    assert run(flaky, fetch(occurrence), clock).state == "SUCCESS"
    row = fetch(occurrence)
    assert (row.state, row.last_error) == (OccurrenceState.SUCCEEDED, "")
    errors = [a.error for a in row.attempt_history.order_by("number", "started_at")]
    assert "stopped heartbeating" in errors[0] and errors[-1] == ""


def test_a_retry_that_succeeds_clears_the_retried_error() -> None:
    clock = FakeClock(START)
    occurrence = due_one(clock, task="tests.flaky", kwargs={"succeed_on": 2})
    run(flaky, occurrence, clock)
    assert fetch(occurrence).last_error == "TooManyRequests: 429 on attempt 1"
    clock.set(fetch(occurrence).not_before)
    assert run(flaky, fetch(occurrence), clock).state == "SUCCESS"
    row = fetch(occurrence)
    assert (row.state, row.last_error) == (OccurrenceState.SUCCEEDED, "")
    history = [(a.outcome, a.error) for a in row.attempt_history.order_by("number", "started_at")]
    assert history[0] == ("retrying", "TooManyRequests: 429 on attempt 1")
