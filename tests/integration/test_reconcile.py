"""The reconciler: lost workers, deadlines passed while waiting, lost retry messages, cadence."""

from __future__ import annotations

from datetime import datetime, timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command

from scheduler_app import ticker as ticker_module
from scheduler_app.clock import FakeClock
from scheduler_app.dispatch.reconcile import ReconcileReport, reconcile
from scheduler_app.models import OccurrenceState
from scheduler_app.publishing.calls import eta_of
from scheduler_app.worker import claiming
from tests.integration.support import START, MemoryPublisher, rows, schedule, ticker
from tests.integration.worker_support import due_one, fetch, rate_limited, run

pytestmark = pytest.mark.django_db
LEASE = timedelta(seconds=30)
GRACE = timedelta(seconds=60)
SECOND = timedelta(seconds=1)


def test_a_lost_worker_is_requeued_then_failed_lost_releasing_the_buffered_one() -> None:
    clock, broker = FakeClock(START), MemoryPublisher()
    target = schedule(
        clock, kind="interval", rule="60s", overlap_policy="buffer_all", max_attempts=2
    )
    assert target.next_run_at is not None
    clock.set(target.next_run_at)
    beat = ticker(broker, clock, RECONCILE_INTERVAL=3600)  # this test calls the reconciler
    beat.tick()
    [first] = rows(target)
    claiming.claim(first.pk, owner="killed", now=clock.now(), lease=LEASE)

    clock.advance(LEASE)  # not expired yet: the lease runs until its expiry instant
    assert reconcile(clock.now(), retry_grace=GRACE) == ReconcileReport()
    clock.advance(SECOND)
    assert reconcile(clock.now(), retry_grace=GRACE).requeued == 1
    row = fetch(first)
    assert (row.state, row.reason, row.attempts) == (OccurrenceState.PENDING, "lost_retry", 1)
    assert (row.lease_expires_at, row.finished_at) == (None, None)
    assert "stopped heartbeating" in row.last_error

    clock.set(first.scheduled_for + timedelta(seconds=60))
    beat.tick()  # republishes the same id; the next slot waits behind it
    assert broker.ids == [str(first.pk)] * 2
    assert [r.state for r in rows(target)] == [OccurrenceState.DISPATCHED, "buffered"]
    second_try = claiming.claim(first.pk, owner="killed-again", now=clock.now(), lease=LEASE)
    assert (second_try.claimed, second_try.attempt) == (True, 2)

    clock.advance(LEASE + SECOND)
    report = reconcile(clock.now(), retry_grace=GRACE)
    assert (report.lost, report.requeued) == (1, 0)
    row = fetch(first)
    assert (row.state, row.reason, row.attempts) == (OccurrenceState.FAILED, "lost", 2)
    assert row.finished_at == clock.now()
    assert [(r.state, r.reason) for r in rows(target)] == [
        (OccurrenceState.FAILED, "lost"),
        (OccurrenceState.PENDING, "released"),
    ]


def test_a_lost_worker_past_the_deadline_is_failed_lost_not_retried() -> None:
    clock = FakeClock(START)
    occurrence = due_one(clock, deadline=20, max_attempts=5)
    claiming.claim(occurrence.pk, owner="killed", now=clock.now(), lease=LEASE)
    clock.advance(LEASE + SECOND)
    assert reconcile(clock.now(), retry_grace=GRACE).lost == 1
    assert fetch(occurrence).state == OccurrenceState.FAILED


def test_a_lost_worker_asked_to_stop_is_cancelled_and_the_newest_one_starts(
    django_capture_on_commit_callbacks: Any,
) -> None:
    clock, broker = FakeClock(START), MemoryPublisher()
    target = schedule(clock, kind="interval", rule="60s", overlap_policy="cancel_previous")
    assert target.next_run_at is not None
    clock.set(target.next_run_at)
    beat = ticker(broker, clock, RECONCILE_INTERVAL=3600)
    beat.tick()
    [first] = rows(target)
    claiming.claim(first.pk, owner="killed", now=clock.now(), lease=LEASE)
    clock.set(first.scheduled_for + timedelta(seconds=60))
    beat.tick()  # asks the first to stop; its worker dies instead
    clock.advance(LEASE)
    report = reconcile(clock.now(), retry_grace=GRACE)
    assert (report.lost, report.requeued) == (1, 0)
    assert [(r.state, r.reason) for r in rows(target)] == [
        (OccurrenceState.CANCELLED, "cancel_requested"),
        (OccurrenceState.PENDING, "released"),
    ]


def test_a_buffered_one_past_its_deadline_expires() -> None:
    clock = FakeClock(START)
    target = schedule(clock, kind="interval", rule="60s", overlap_policy="buffer_all", deadline=30)
    assert target.next_run_at is not None
    clock.set(target.next_run_at)
    beat = ticker(MemoryPublisher(), clock, RECONCILE_INTERVAL=3600)
    beat.tick()
    [first] = rows(target)
    claiming.claim(first.pk, owner="slow", now=clock.now(), lease=timedelta(hours=1))
    clock.advance(timedelta(seconds=60))
    beat.tick()
    second = rows(target)[1]
    assert second.state == "buffered" and second.deadline_at is not None
    assert reconcile(second.deadline_at, retry_grace=GRACE).expired == 1
    row = fetch(second)
    assert (row.state, row.reason) == (OccurrenceState.EXPIRED, "deadline_passed")
    assert fetch(first).state == OccurrenceState.RUNNING


@pytest.mark.parametrize("broker_down", [False, True])
def test_a_deadline_passed_while_waiting_expires(broker_down: bool) -> None:
    clock, broker = FakeClock(START), MemoryPublisher()
    broker.down = broker_down  # pending (never published) or dispatched (never delivered)
    occurrence = due_one(clock, broker, deadline=30)
    assert occurrence.state == ("pending" if broker_down else "dispatched")
    assert occurrence.deadline_at is not None
    assert reconcile(occurrence.deadline_at - SECOND, retry_grace=GRACE).expired == 0
    assert reconcile(occurrence.deadline_at, retry_grace=GRACE).expired == 1
    row = fetch(occurrence)
    assert (row.state, row.reason, row.attempts) == (OccurrenceState.EXPIRED, "deadline_passed", 0)
    assert row.finished_at == occurrence.deadline_at


def test_a_lost_run_stays_due_at_once_when_the_clock_steps_back() -> None:
    """A requeued lost run keeps its passed ``not_before``: after an NTP step back its message
    goes without an ``eta`` and a worker may claim it at once, instead of both waiting for as
    long as the step (the reconciler's "now" is no delay)."""
    clock, broker = FakeClock(START), MemoryPublisher()
    target = schedule(clock, kind="interval", rule="60s")
    assert target.next_run_at is not None
    clock.set(target.next_run_at)
    beat = ticker(broker, clock, RECONCILE_INTERVAL=3600)
    beat.tick()
    [first] = rows(target)
    claiming.claim(first.pk, owner="killed", now=clock.now(), lease=LEASE)
    clock.advance(timedelta(hours=2))  # stepped forward: the lease reads expired
    assert reconcile(clock.now(), retry_grace=GRACE).requeued == 1
    assert fetch(first).not_before == first.not_before

    clock.advance(-timedelta(minutes=5))  # and back
    assert eta_of(fetch(first), clock.now()) is None
    beat.tick()  # republished at once
    assert broker.ids.count(str(first.pk)) == 2
    retried = claiming.claim(first.pk, owner="alive", now=clock.now(), lease=LEASE)
    assert (retried.claimed, retried.attempt) == (True, 2)


def test_a_lost_retry_message_is_published_again() -> None:
    clock, broker = FakeClock(START), MemoryPublisher()
    occurrence = due_one(clock, broker, task="tests.rate_limited", retry_delay=10)
    beat = ticker(broker, clock, RECONCILE_INTERVAL=3600)
    run(rate_limited, occurrence, clock)
    beat.tick()  # the retry is published ... and the broker loses it
    retry = fetch(occurrence)
    assert retry.state == OccurrenceState.RETRYING and retry.dispatched_at is not None
    assert broker.ids == [str(occurrence.pk)] * 2

    assert reconcile(retry.not_before + GRACE, retry_grace=GRACE).republished == 0
    clock.set(retry.not_before + GRACE + SECOND)
    assert reconcile(clock.now(), retry_grace=GRACE).republished == 1
    assert fetch(occurrence).dispatched_at is None
    beat.tick()
    assert broker.ids.count(str(occurrence.pk)) == 3
    assert fetch(occurrence).state == OccurrenceState.RETRYING
    assert run(rate_limited, fetch(occurrence), clock).state == "IGNORED"  # attempt 2 ran
    assert fetch(occurrence).attempts == 2


def test_the_ticker_reconciles_only_every_reconcile_interval(monkeypatch: Any) -> None:
    passes: list[datetime] = []

    def counting(now: datetime, **kwargs: Any) -> ReconcileReport:
        passes.append(now)
        return reconcile(now, **kwargs)

    monkeypatch.setattr(ticker_module, "reconcile", counting)
    clock = FakeClock(START)
    occurrence = due_one(clock, deadline=90)  # a tick here starts its own beat, unwatched
    assert occurrence.deadline_at is not None
    beat = ticker(MemoryPublisher(), clock, RECONCILE_INTERVAL=60)
    begin = clock.now()
    for seconds in range(0, 181, 15):
        clock.set(begin + timedelta(seconds=seconds))
        beat.tick()
    assert passes == [begin + timedelta(seconds=s) for s in (60, 120, 180)]
    row = fetch(occurrence)  # expired by the pass at +120 s (its deadline was +90 s)
    assert (row.state, row.finished_at) == (OccurrenceState.EXPIRED, begin + timedelta(seconds=120))


def test_the_command_runs_one_pass() -> None:
    out = StringIO()
    call_command("reconcile_occurrences", stdout=out)
    assert out.getvalue().strip() == (
        "lost: 0, requeued: 0, expired: 0, republished: 0, released: 0"
    )
