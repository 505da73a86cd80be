"""The worker-side lifecycle run in-process: claim, heartbeat, finish, fencing, duplicates.

No broker and no worker: transitions are called directly (``lifecycle``) or through
``OccurrenceTask`` with ``task.apply``; every instant comes from a ``FakeClock``.
"""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest

from project.demo.tasks import ping
from scheduler_app.clock import FakeClock
from scheduler_app.context import OccurrenceContext
from scheduler_app.dispatch.reconcile import reconcile
from scheduler_app.models import Occurrence, OccurrenceState, Trigger
from scheduler_app.worker import claiming, lifecycle
from tests.integration.support import START, MemoryPublisher, schedule, ticker
from tests.integration.worker_support import (
    context_task,
    due_one,
    fetch,
    load_task_modules,
    run,
)

pytestmark = pytest.mark.django_db
LEASE = timedelta(seconds=60)
GRACE = timedelta(seconds=60)


@pytest.fixture(autouse=True, scope="module")
def _task_modules_loaded() -> None:
    load_task_modules()  # before any test captures logs


def refusals(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str]]:
    return [
        (str(getattr(r, "occurrence_id", "")), str(getattr(r, "reason", "")))
        for r in caplog.records
        if getattr(r, "action", "") == "occurrence.refused"
    ]


def test_claim_takes_a_lease_and_a_fencing_token() -> None:
    clock = FakeClock(START)
    occurrence = due_one(clock)
    assert occurrence.state == OccurrenceState.DISPATCHED
    now = clock.advance(2)

    claim = claiming.claim(occurrence.pk, owner="host:1", now=now, lease=LEASE)

    assert (claim.claimed, claim.token, claim.attempt) == (True, 1, 1)
    row = fetch(occurrence)
    assert (row.state, row.attempts, row.fencing_token) == (OccurrenceState.RUNNING, 1, 1)
    assert (row.lease_owner, row.lease_expires_at, row.started_at) == ("host:1", now + LEASE, now)
    assert row.finished_at is None


def test_a_second_claim_is_refused_with_its_reason() -> None:
    clock = FakeClock(START)
    occurrence = due_one(clock)
    assert claiming.claim(occurrence.pk, owner="a", now=clock.now(), lease=LEASE).claimed
    again = claiming.claim(occurrence.pk, owner="b", now=clock.now(), lease=LEASE)
    assert (again.claimed, again.reason) == (False, "already_running")
    assert fetch(occurrence).lease_owner == "a"
    unknown = claiming.claim(
        "00000000-0000-0000-0000-000000000000", owner="b", now=clock.now(), lease=LEASE
    )
    assert (unknown.claimed, unknown.reason) == (False, "unknown_occurrence")


def test_heartbeat_extends_only_the_current_attempt() -> None:
    clock = FakeClock(START)
    occurrence = due_one(clock)
    claim = claiming.claim(occurrence.pk, owner="a", now=clock.now(), lease=LEASE)
    later = clock.advance(20)
    assert lifecycle.heartbeat(occurrence.pk, token=claim.token, now=later, lease=LEASE)
    assert fetch(occurrence).lease_expires_at == later + LEASE
    assert not lifecycle.heartbeat(occurrence.pk, token=claim.token + 1, now=later, lease=LEASE)


def test_a_late_writer_with_an_old_token_cannot_overwrite_a_newer_attempt() -> None:
    clock = FakeClock(START)
    occurrence = due_one(clock)
    old = claiming.claim(occurrence.pk, owner="slow", now=clock.now(), lease=LEASE)
    # The slow worker stops heartbeating; the reconciler hands the occurrence to another.
    clock.advance(LEASE + timedelta(seconds=1))
    assert reconcile(clock.now(), retry_grace=GRACE).requeued == 1
    # The outbox hands it off again (a pending row is claimable only while a beat holds it).
    Occurrence.objects.filter(pk=occurrence.pk).update(publish_lease_until=clock.now() + LEASE)
    new = claiming.claim(occurrence.pk, owner="fast", now=clock.now(), lease=LEASE)
    assert (new.claimed, new.token, new.attempt) == (True, 2, 2)

    now = clock.advance(5)
    assert not lifecycle.finish(
        occurrence.pk, token=old.token, state=OccurrenceState.SUCCEEDED, reason="", now=now
    )
    assert not lifecycle.retry_later(
        occurrence.pk, token=old.token, at=now + LEASE, now=now, error="late"
    )
    assert not lifecycle.heartbeat(occurrence.pk, token=old.token, now=now, lease=LEASE)
    row = fetch(occurrence)
    assert (row.state, row.lease_owner, row.fencing_token) == (OccurrenceState.RUNNING, "fast", 2)

    assert lifecycle.finish(
        occurrence.pk, token=new.token, state=OccurrenceState.FAILED, reason="boom", now=now
    )
    # Once ended, even the token that ended it cannot rewrite the outcome.
    assert not lifecycle.finish(
        occurrence.pk, token=new.token, state=OccurrenceState.SUCCEEDED, reason="", now=now
    )
    row = fetch(occurrence)
    assert (row.state, row.reason, row.attempts) == (OccurrenceState.FAILED, "boom", 2)


def test_task_records_attempt_and_timestamps() -> None:
    clock = FakeClock(START)
    occurrence = due_one(clock)
    started = clock.advance(3)

    result = run(ping, occurrence, clock)

    assert (result.state, result.result) == ("SUCCESS", "pong")
    row = fetch(occurrence)
    assert (row.state, row.reason, row.attempts) == (OccurrenceState.SUCCEEDED, "", 1)
    assert (row.started_at, row.finished_at) == (started, started)
    assert row.lease_expires_at is None
    assert row.dispatched_at is not None and row.dispatched_at <= started


def test_duplicate_delivery_after_success_is_ignored_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock(START)
    occurrence = due_one(clock)
    assert run(ping, occurrence, clock).state == "SUCCESS"
    finished = fetch(occurrence).finished_at
    clock.advance(30)

    with caplog.at_level(logging.INFO, logger="scheduler_app"):
        again = run(ping, occurrence, clock)

    assert again.state == "IGNORED"
    assert refusals(caplog) == [(str(occurrence.pk), "already_succeeded")]
    row = fetch(occurrence)
    assert (row.state, row.attempts, row.finished_at) == (OccurrenceState.SUCCEEDED, 1, finished)


def test_duplicate_delivery_while_running_is_ignored_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock(START)
    occurrence = due_one(clock)
    first = claiming.claim(occurrence.pk, owner="other-worker", now=clock.now(), lease=LEASE)

    with caplog.at_level(logging.INFO, logger="scheduler_app"):
        duplicate = run(ping, occurrence, clock)

    assert duplicate.state == "IGNORED"
    assert refusals(caplog) == [(str(occurrence.pk), "already_running")]
    row = fetch(occurrence)
    assert (row.state, row.attempts, row.fencing_token) == (OccurrenceState.RUNNING, 1, first.token)
    assert row.lease_owner == "other-worker"


def test_context_is_one_frozen_object_with_the_claimed_attempt() -> None:
    clock = FakeClock(START)
    target = schedule(
        clock,
        task="tests.context",
        kind="interval",
        rule="60s",
        timezone="Europe/Paris",
        objective="fresh",
        deadline=300,
    )
    assert target.next_run_at is not None
    broker = MemoryPublisher()
    beat = ticker(broker, clock)
    for slot in (target.next_run_at, target.next_run_at + timedelta(seconds=60)):
        clock.set(slot)  # two slots: the second one's window starts at the first
        beat.tick()
    first, second = Occurrence.objects.filter(schedule=target).order_by("scheduled_for")
    # The first attempt of the second slot was lost: the next delivery is attempt 2.
    claiming.claim(second.pk, owner="died", now=clock.now(), lease=LEASE)
    clock.advance(LEASE + timedelta(seconds=1))
    reconcile(clock.now(), retry_grace=GRACE)
    second = fetch(second)
    checked_at = second.scheduled_for + timedelta(seconds=100)

    result = run(context_task, second, clock, at=checked_at.isoformat())
    assert result.state == "SUCCESS", result.traceback
    context: OccurrenceContext = result.result["context"]
    assert context.attempt == 2
    assert (context.occurrence_id, context.idempotency_key) == (
        str(second.pk),
        second.idempotency_key,
    )
    assert context.window == (first.scheduled_for, second.scheduled_for)
    assert (context.timezone, context.objective) == ("Europe/Paris", "fresh")
    assert (context.trigger, context.catch_up) == (Trigger.SCHEDULED, False)
    assert (context.schedule_id, context.schedule_version) == (str(target.pk), 1)
    assert context.deadline_at == second.scheduled_for + timedelta(seconds=300)
    assert result.result["remaining"] == 200.0
    with pytest.raises(AttributeError):
        context.attempt = 3  # type: ignore[misc]


class Flaky:
    """A lifecycle write that fails ``failures`` times with ``error``, then runs for real."""

    def __init__(self, write: object, failures: int, error: Exception) -> None:
        self.write, self.failures, self.error, self.calls = write, failures, error, 0

    def __call__(self, *args: object, **kwargs: object) -> object:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error
        return self.write(*args, **kwargs)  # type: ignore[operator]


@pytest.mark.django_db(transaction=True)  # outside a transaction: the worker may reconnect
def test_an_outcome_write_through_a_dropped_connection_is_retried(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from django.db import OperationalError

    from scheduler_app.tasks import OccurrenceTask

    clock = FakeClock(START)
    occurrence = due_one(clock)
    finish = Flaky(lifecycle.finish, 2, OperationalError("server closed the connection"))
    monkeypatch.setattr(lifecycle, "finish", finish)
    pauses: list[float] = []
    monkeypatch.setattr(OccurrenceTask, "pause", staticmethod(pauses.append))

    assert run(ping, occurrence, clock).state == "SUCCESS"
    stored = fetch(occurrence)
    assert (stored.state, stored.attempts) == (OccurrenceState.SUCCEEDED, 1)
    assert (finish.calls, pauses) == (3, [0.5, 1.0])


@pytest.mark.django_db(transaction=True)
def test_a_retry_decision_through_a_locked_database_is_retried(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from django.db import OperationalError

    from scheduler_app.tasks import OccurrenceTask
    from tests.integration.worker_support import flaky

    clock = FakeClock(START)
    occurrence = due_one(clock, task="tests.flaky", max_attempts=3)
    retry_later = Flaky(lifecycle.retry_later, 1, OperationalError("database is locked"))
    monkeypatch.setattr(lifecycle, "retry_later", retry_later)
    monkeypatch.setattr(OccurrenceTask, "pause", staticmethod(lambda seconds: None))

    assert run(flaky, occurrence, clock, succeed_on=2).state == "IGNORED"
    stored = fetch(occurrence)
    assert (stored.state, stored.reason, retry_later.calls) == (
        OccurrenceState.RETRYING,
        "retry",
        2,
    )


@pytest.mark.django_db(transaction=True)
def test_an_outcome_that_cannot_be_recorded_is_left_to_the_lease(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Four failures: the error surfaces; the run stays ``running`` until its lease runs out,
    and the reconciler then puts it back in the outbox (the documented crash path)."""
    from django.db import OperationalError

    from scheduler_app.tasks import RECORD_ATTEMPTS, OccurrenceTask

    clock = FakeClock(START)
    occurrence = due_one(clock, max_attempts=3)
    finish = Flaky(lifecycle.finish, 99, OperationalError("could not connect"))
    monkeypatch.setattr(lifecycle, "finish", finish)
    monkeypatch.setattr(OccurrenceTask, "pause", staticmethod(lambda seconds: None))

    assert run(ping, occurrence, clock).state == "FAILURE"
    assert finish.calls == RECORD_ATTEMPTS
    assert fetch(occurrence).state == OccurrenceState.RUNNING
    clock.advance(LEASE + timedelta(seconds=1))
    assert reconcile(clock.now(), retry_grace=GRACE).requeued == 1
    assert fetch(occurrence).state == OccurrenceState.PENDING
