"""Nothing stays stuck and no duplicate ends a run: lost messages, revoked copies, resume with
overlap, fixed delay bounds, cancelled debounce, lost runs of cancelled schedules."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from scheduler_app import services
from scheduler_app.authoring import api
from scheduler_app.clock import FakeClock
from scheduler_app.dispatch.reconcile import reconcile
from scheduler_app.handoff.protocol import context_headers
from scheduler_app.models import Occurrence, OccurrenceState, Schedule, ScheduleStatus
from scheduler_app.signals import record_revoked
from scheduler_app.worker import claiming, lifecycle
from tests.integration.support import MemoryPublisher, schedule, ticker
from tests.integration.worker_support import due_one, fetch

pytestmark = pytest.mark.django_db
START = datetime(2026, 1, 5, tzinfo=UTC)
LEASE = timedelta(seconds=60)


def test_a_message_that_never_reaches_a_worker_is_republished_then_failed() -> None:
    clock = FakeClock(START)
    broker = MemoryPublisher()
    occurrence = due_one(clock, broker, overlap_policy="skip")
    beat = ticker(broker, clock, RECONCILE_INTERVAL=1.0, DISPATCH_TIMEOUT=600.0, MAX_PUBLISHES=2)
    beat.tick()  # starts the reconciler cadence
    for _ in range(3):  # the broker loses every copy: nobody ever starts it
        clock.advance(timedelta(minutes=11))
        beat.tick()
    final = fetch(occurrence)
    assert (final.state, final.reason) == (OccurrenceState.FAILED, "never_started")
    assert broker.ids.count(str(occurrence.pk)) == 2  # republished with the same task id
    # It no longer blocks the schedule: the slots that came due next are started again.
    started = Occurrence.objects.filter(
        schedule=occurrence.schedule, state=OccurrenceState.DISPATCHED
    ).exclude(pk=occurrence.pk)
    assert started.exists()


def test_a_revoked_copy_does_not_end_the_running_attempt() -> None:
    clock = FakeClock(START)
    occurrence = due_one(clock, overlap_policy="buffer_all", deadline=120)
    claim = claiming.claim(occurrence.pk, owner="w1", now=clock.now(), lease=LEASE)
    assert claim.claimed
    copy = SimpleNamespace(scheduler=context_headers(occurrence), retries=0)
    record_revoked(request=copy, expired=True)
    assert fetch(occurrence).state == OccurrenceState.RUNNING
    assert lifecycle.finish(
        occurrence.pk, token=claim.token, state="succeeded", reason="", now=clock.now()
    )


def test_resume_applies_the_overlap_policy_to_the_catch_up_batch() -> None:
    clock = FakeClock(START)
    target = schedule(clock, kind="cron", rule="0 * * * *", overlap_policy="skip")
    clock.set(target.next_run_at)
    beat = ticker(MemoryPublisher(), clock)
    beat.tick()
    running = Occurrence.objects.get(schedule=target)
    claiming.claim(running.pk, owner="w1", now=clock.now(), lease=timedelta(days=1))
    services.pause_schedule(target.pk, clock=clock)
    clock.advance(timedelta(hours=6))
    services.resume_schedule(target.pk, clock=clock)
    states = list(
        Occurrence.objects.filter(schedule=target)
        .exclude(pk=running.pk)
        .values_list("state", flat=True)
    )
    assert states and set(states) == {OccurrenceState.SKIPPED}


def test_fixed_delay_respects_ends_at() -> None:
    clock = FakeClock(START)
    occurrence = due_one(
        clock,
        interval_mode="fixed_delay",
        ends_at=START + timedelta(hours=1, minutes=5),
    )
    target = Schedule.objects.get(pk=occurrence.schedule_id)
    claim = claiming.claim(occurrence.pk, owner="w1", now=clock.now(), lease=LEASE)
    clock.set(target.ends_at - timedelta(seconds=30))
    lifecycle.finish(
        occurrence.pk, token=claim.token, state="succeeded", reason="", now=clock.now()
    )
    target.refresh_from_db()
    assert (target.status, target.next_run_at) == (ScheduleStatus.COMPLETED, None)


def test_debounce_after_its_schedule_was_cancelled_starts_a_new_one() -> None:
    clock = FakeClock(START)
    first = api.debounce("demo.ping", key="k", quiet="10m", clock=clock)
    services.cancel_schedule(first.pk, clock=clock)
    second = api.debounce("demo.ping", key="k", quiet="10m", clock=clock)
    assert second.pk != first.pk and second.status == ScheduleStatus.ACTIVE
    assert Schedule.objects.get(pk=first.pk).key.startswith("debounce:k~retired~")


def test_a_lost_run_of_a_cancelled_schedule_does_not_run_again() -> None:
    clock = FakeClock(START)
    occurrence = due_one(clock)
    claiming.claim(occurrence.pk, owner="w1", now=clock.now(), lease=LEASE)
    services.cancel_schedule(occurrence.schedule_id, clock=clock)
    clock.advance(timedelta(minutes=5))
    reconcile(clock.now(), retry_grace=timedelta(seconds=60))
    final = fetch(occurrence)
    assert (final.state, final.reason) == (OccurrenceState.CANCELLED, "schedule_cancelled")


def test_a_tick_waits_a_little_when_due_rows_are_locked_elsewhere() -> None:
    clock = FakeClock(START)
    target = schedule(clock, kind="interval", rule="60s")
    beat = ticker(MemoryPublisher(), clock)
    clock.set(target.next_run_at)
    # Simulate another process holding the row: the claim finds nothing to take.
    from unittest import mock

    with mock.patch("scheduler_app.ticker.materialize_batch") as claim:
        claim.return_value = SimpleNamespace(claimed=0, created=0, fresh=[])
        assert beat.tick().sleep == pytest.approx(0.2)
