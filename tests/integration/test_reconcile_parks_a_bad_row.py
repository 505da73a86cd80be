"""Attacks the promise "the reconciler parks a bad row, the beat goes on" (docs/guarantees.md,
crash windows: "the reconciler meets a row it cannot process (a stored value out of range) |
the schedule is paused with the error in `last_error` (`reconcile.parked`), the pass goes on
with the others").

Four runs lose their workers at once; the beat's reconciler pass meets them in one batch. One
of them raises in the middle of its handling (after its row was moved back to the outbox,
before its attempt was closed: the error a stored value out of range gives, ``OverflowError``).
No field the services or the database let through makes that path raise on both databases,
so the failure is injected there, for that row only. The pass must put the others back (or
end them), park the bad one's schedule with the error and a ``reconcile.parked`` log line,
leave the bad row as it was (not half moved), and the beat's next passes must still work.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import pytest

from scheduler_app import events, services
from scheduler_app.clock import FakeClock
from scheduler_app.dispatch import reconcile as reconcile_module
from scheduler_app.errors import ScheduleStateError
from scheduler_app.models import (
    Occurrence,
    OccurrenceAttempt,
    OccurrenceState,
    Schedule,
    ScheduleStatus,
)
from scheduler_app.worker import claiming
from tests.integration.support import START, MemoryPublisher, reload, rows, schedule, ticker
from tests.integration.worker_support import fetch, load_task_modules

pytestmark = pytest.mark.django_db
LEASE = timedelta(seconds=30)
RECONCILE_EVERY = 60


def test_a_row_that_raises_is_parked_and_the_rest_of_the_pass_is_reconciled(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    load_task_modules()  # before the log capture (see there)
    clock, broker = FakeClock(START), MemoryPublisher()
    # Hourly: no new slot comes due while the test runs; only the reconciler moves rows.
    retried = [schedule(clock, kind="interval", rule="1h", max_attempts=3) for _ in range(2)]
    exhausted = schedule(clock, kind="interval", rule="1h", max_attempts=1)
    bad = schedule(clock, kind="interval", rule="1h", max_attempts=3)
    every = [*retried, exhausted, bad]
    clock.set(max(reload(target).next_run_at for target in every))
    beat = ticker(broker, clock, RECONCILE_INTERVAL=RECONCILE_EVERY)
    beat.tick()
    runs = {target.pk: rows(target)[0] for target in every}
    for occurrence in runs.values():
        assert claiming.claim(occurrence.pk, owner="killed", now=clock.now(), lease=LEASE).claimed
    poisoned = {runs[bad.pk].pk}
    real_close_attempt = reconcile_module.close_attempt

    def close_attempt(occurrence_id: UUID | str, now: datetime, *args: Any, **kwargs: Any) -> int:
        if occurrence_id in poisoned:
            raise OverflowError("date value out of range")
        return real_close_attempt(occurrence_id, now, *args, **kwargs)

    monkeypatch.setattr(reconcile_module, "close_attempt", close_attempt)
    caplog.set_level(logging.INFO)

    # One reconcile interval later every lease has run out: the beat's pass takes all four.
    clock.advance(timedelta(seconds=RECONCILE_EVERY))
    sent_before = len(broker.sent)
    beat.tick()  # does not raise

    for target in retried:  # back in the outbox and published again in the same tick
        row = fetch(runs[target.pk])
        assert (row.state, row.reason, row.attempts) == (
            OccurrenceState.DISPATCHED,
            "lost_retry",
            1,
        )
        assert reload(target).status == ScheduleStatus.ACTIVE
    assert {row.id for row in broker.sent[sent_before:]} == {runs[t.pk].pk for t in retried}
    row = fetch(runs[exhausted.pk])
    assert (row.state, row.reason) == (OccurrenceState.FAILED, "lost")
    assert reload(exhausted).status == ScheduleStatus.ACTIVE

    parked = reload(bad)
    assert parked.status == ScheduleStatus.PAUSED
    assert parked.last_error == "reconciler: OverflowError: date value out of range"
    logged = parked_lines(caplog)
    assert [(r.levelno, r.schedule_id) for r in logged] == [(logging.ERROR, str(bad.pk))]
    assert "OverflowError" in logged[0].error
    stuck = fetch(runs[bad.pk])  # its own step rolled back whole: not half moved
    assert (stuck.state, stuck.reason, stuck.attempts) == (OccurrenceState.RUNNING, "", 1)
    open_attempts = OccurrenceAttempt.objects.filter(occurrence_id=stuck.pk, finished_at=None)
    assert open_attempts.count() == 1

    # The beat goes on: the next pass meets the bad row again and parks it again, alone.
    clock.advance(timedelta(seconds=RECONCILE_EVERY))
    caplog.clear()
    beat.tick()
    assert fetch(runs[bad.pk]).state == OccurrenceState.RUNNING
    assert [r.schedule_id for r in parked_lines(caplog)] == [str(bad.pk)]

    # Once the row can be read again, the next pass moves it on like the others.
    poisoned.clear()
    clock.advance(timedelta(seconds=RECONCILE_EVERY))
    caplog.clear()
    beat.tick()
    row = fetch(runs[bad.pk])
    assert (row.reason, row.attempts) == ("lost_retry", 1)
    assert row.state == OccurrenceState.DISPATCHED  # paused with on_pause=keep: it may run
    assert broker.sent[-1].id == row.id
    assert not parked_lines(caplog)
    assert Occurrence.objects.filter(state=OccurrenceState.RUNNING).count() == 0


def parked_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if getattr(r, "action", "") == "reconcile.parked"]


@pytest.mark.parametrize("step", ["expired", "never_started"])
def test_every_per_row_step_parks_its_bad_row_and_ends_the_others(
    monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    """The deadline's and the lost message's steps end rows through the same path as a run's
    outcome: a row that raises there parks its schedule (as the materializer parks one: by the
    scheduler, with a note) and the pass ends the others."""
    clock, broker = FakeClock(START), MemoryPublisher()
    targets = [schedule(clock, kind="interval", rule="1h", deadline=60) for _ in range(3)]
    clock.set(max(reload(target).next_run_at for target in targets))
    ticker(broker, clock).tick()
    runs = {target.pk: rows(target)[0] for target in targets}
    assert {row.state for row in runs.values()} == {OccurrenceState.DISPATCHED}
    bad = targets[1]
    real_end = reconcile_module.end

    def end(occurrence: Occurrence, *args: Any, **kwargs: Any) -> bool:
        if occurrence.pk == runs[bad.pk].pk:
            raise OverflowError("date value out of range")
        return bool(real_end(occurrence, *args, **kwargs))

    monkeypatch.setattr(reconcile_module, "end", end)
    if step == "expired":
        clock.advance(timedelta(minutes=2))  # past every row's deadline
        report = reconcile_module.reconcile(clock.now(), retry_grace=timedelta(minutes=5))
        assert report.expired == 2
        ended = (OccurrenceState.EXPIRED, "deadline_passed")
    else:
        clock.advance(timedelta(seconds=30))  # within the deadline, past the dispatch timeout
        report = reconcile_module.reconcile(
            clock.now(),
            retry_grace=timedelta(minutes=5),
            dispatch_timeout=timedelta(seconds=10),
            max_publishes=1,
        )
        assert report.lost == 2
        ended = (OccurrenceState.FAILED, "never_started")

    for target in targets:
        row = fetch(runs[target.pk])
        if target is bad:
            assert (row.state, row.reason) == (OccurrenceState.DISPATCHED, "")
            parked = reload(target)
            assert (parked.status, parked.paused_by) == (ScheduleStatus.PAUSED, "scheduler")
            assert parked.last_error == "reconciler: OverflowError: date value out of range"
            assert parked.pause_note == f"parked by the scheduler: {parked.last_error}"
        else:
            assert (row.state, row.reason) == ended
            assert reload(target).status == ScheduleStatus.ACTIVE


def poison_end(monkeypatch: pytest.MonkeyPatch, bad: Occurrence, *, wrote: bool = False) -> None:
    """``end`` raises for ``bad`` (after writing to its row first when ``wrote``)."""
    real_end = reconcile_module.end

    def end(occurrence: Occurrence, *args: Any, **kwargs: Any) -> bool:
        if occurrence.pk == bad.pk:
            if wrote:
                Occurrence.objects.filter(pk=bad.pk).update(reason="half_written")
            raise OverflowError("date value out of range")
        return bool(real_end(occurrence, *args, **kwargs))

    monkeypatch.setattr(reconcile_module, "end", end)


def one_run_past_its_deadline(clock: FakeClock, **fields: Any) -> tuple[Schedule, Occurrence]:
    target = schedule(clock, deadline=60, **{"kind": "interval", "rule": "1h", **fields})
    clock.set(reload(target).next_run_at)
    ticker(MemoryPublisher(), clock).tick()
    return target, rows(target)[0]


def test_a_schedule_an_operator_paused_keeps_their_note_when_its_row_is_parked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = FakeClock(START)
    target, run = one_run_past_its_deadline(clock)  # on_pause=keep: the row stays
    services.pause_schedule(target.pk, clock=clock, note="DB maintenance until 18:00", by="alice")
    poison_end(monkeypatch, run)
    clock.advance(timedelta(minutes=2))
    reconcile_module.reconcile(clock.now(), retry_grace=timedelta(minutes=5))
    after = reload(target)
    assert (after.status, after.paused_by, after.pause_note) == (
        ScheduleStatus.PAUSED,
        "alice",
        "DB maintenance until 18:00",
    )
    assert after.last_error == "reconciler: OverflowError: date value out of range"


def test_a_cancelled_schedule_is_not_revived_by_parking_its_lost_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Parking a cancelled schedule as paused would let a plain resume run it again, past the
    restore (and its approval check) an undo of a cancel takes."""
    clock = FakeClock(START)
    target = schedule(clock, kind="interval", rule="1h", max_attempts=3)
    clock.set(reload(target).next_run_at)
    ticker(MemoryPublisher(), clock).tick()
    run = rows(target)[0]
    assert claiming.claim(run.pk, owner="killed", now=clock.now(), lease=LEASE).claimed
    services.cancel_schedule(target.pk, clock=clock)  # the running one keeps running
    poison_end(monkeypatch, run)
    clock.advance(timedelta(minutes=2))  # its lease ran out
    reconcile_module.reconcile(clock.now(), retry_grace=timedelta(minutes=5))
    after = reload(target)
    assert (after.status, after.paused_by) == (ScheduleStatus.CANCELLED, "")
    assert after.last_error.startswith("reconciler: OverflowError")
    with pytest.raises(ScheduleStateError):
        services.resume_schedule(target.pk, clock=clock)


def test_a_completed_schedule_stays_completed_when_its_expired_row_is_parked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = FakeClock(START)
    at = START + timedelta(minutes=5)
    target = schedule(clock, kind="once", rule=at.isoformat(), deadline=60)
    clock.set(at)
    ticker(MemoryPublisher(), clock).tick()
    assert reload(target).status == ScheduleStatus.COMPLETED
    poison_end(monkeypatch, rows(target)[0])
    clock.advance(timedelta(minutes=2))
    reconcile_module.reconcile(clock.now(), retry_grace=timedelta(minutes=5))
    assert reload(target).status == ScheduleStatus.COMPLETED


@pytest.mark.django_db(transaction=True)
def test_a_step_that_fails_after_writing_leaves_nothing_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Outside a transaction, as the beat runs: the step's own transaction rolls its write
    back when it fails after it."""
    clock = FakeClock(START)
    target, run = one_run_past_its_deadline(clock)
    poison_end(monkeypatch, run, wrote=True)
    clock.advance(timedelta(minutes=2))
    reconcile_module.reconcile(clock.now(), retry_grace=timedelta(minutes=5))
    assert fetch(run).reason == ""
    assert reload(target).status == ScheduleStatus.PAUSED


@pytest.mark.django_db(transaction=True)
def test_a_receiver_that_raises_after_the_commit_parks_nothing() -> None:
    """The beat runs outside a transaction: the step's commit runs the ``occurrence_finished``
    receivers. One that raises is not the row's fault: the row stays ended, the schedule
    active."""
    clock = FakeClock(START)
    target, run = one_run_past_its_deadline(clock)

    def receiver(**_: Any) -> None:
        raise ValueError("a receiver's bug")

    events.occurrence_finished.connect(receiver, dispatch_uid="test-raising-receiver")
    try:
        clock.advance(timedelta(minutes=2))
        report = reconcile_module.reconcile(clock.now(), retry_grace=timedelta(minutes=5))
    finally:
        events.occurrence_finished.disconnect(dispatch_uid="test-raising-receiver")
    assert report.expired == 1
    assert fetch(run).state == OccurrenceState.EXPIRED
    after = reload(target)
    assert (after.status, after.last_error) == (ScheduleStatus.ACTIVE, "")
