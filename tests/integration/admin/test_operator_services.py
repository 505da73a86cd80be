"""``services.run_now``, ``services.backfill`` and ``services.restore_schedule``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from scheduler_app import services
from scheduler_app.clock import FakeClock
from scheduler_app.definition.schedule import idempotency_key
from scheduler_app.errors import ScheduleStateError, ScheduleValidationError
from scheduler_app.models import Occurrence, OccurrenceState, Schedule, ScheduleStatus, Trigger
from scheduler_app.ticker import Ticker
from tests.integration.support import MemoryPublisher

pytestmark = pytest.mark.django_db

START = datetime(2026, 3, 2, 0, 0, tzinfo=UTC)  # a Monday


def hourly(clock: FakeClock, **fields: object) -> Schedule:
    return services.create_schedule(
        task="demo.ping", kind="cron", rule="0 * * * *", clock=clock, **fields
    )


def test_run_now_is_manual_with_its_own_key_user_and_reason() -> None:
    clock = FakeClock(START)
    schedule = hourly(clock)
    clock.set(START.replace(hour=5))
    occurrence = services.run_now(schedule, reason="month end", clock=clock)
    assert occurrence.trigger == Trigger.MANUAL
    assert occurrence.note == "month end"
    assert occurrence.scheduled_for == START.replace(hour=5)  # exactly a rule slot's instant...
    assert occurrence.idempotency_key != idempotency_key(schedule.pk, occurrence.scheduled_for)
    assert ":manual:" in occurrence.idempotency_key  # ...but never its key
    Ticker(MemoryPublisher(), clock=clock).tick()  # the rule's own 05:00 slot still runs
    assert Occurrence.objects.filter(schedule=schedule, trigger=Trigger.SCHEDULED).exists()


def test_run_now_twice_makes_two_runs_and_takes_a_business_window() -> None:
    clock = FakeClock(START)
    schedule = hourly(clock, overlap_policy="allow")
    window = (START - timedelta(days=1), START)
    first = services.run_now(schedule, window_start=window[0], window_end=window[1], clock=clock)
    second = services.run_now(schedule, clock=clock)
    assert first.pk != second.pk
    assert (first.window_start, first.window_end) == window


def test_run_now_respects_the_overlap_policy_unless_told_otherwise() -> None:
    clock = FakeClock(START)
    schedule = hourly(clock, overlap_policy="skip")
    services.run_now(schedule, clock=clock)  # pending: counts as running
    skipped = services.run_now(schedule, clock=clock)
    forced = services.run_now(schedule, respect_overlap=False, clock=clock)
    assert (skipped.state, skipped.reason) == (OccurrenceState.SKIPPED, "overlap")
    assert forced.state == OccurrenceState.PENDING


def test_run_now_refuses_a_cancelled_schedule() -> None:
    clock = FakeClock(START)
    schedule = hourly(clock)
    services.cancel_schedule(schedule.pk, clock=clock)
    with pytest.raises(ScheduleStateError, match="cancelled"):
        services.run_now(schedule, clock=clock)


def backfilled(clock: FakeClock, schedule: Schedule, hours: int, **options: object) -> object:
    return services.backfill(
        schedule, start=START, end=START + timedelta(hours=hours), clock=clock, **options
    )


def test_backfill_plans_counts_and_costs_without_writing_on_a_dry_run() -> None:
    clock = FakeClock(START - timedelta(days=1))
    schedule = hourly(clock)
    Schedule.objects.filter(pk=schedule.pk).update(cost_estimate=0.25)
    schedule.refresh_from_db()
    clock.set(START + timedelta(days=1))
    plan = backfilled(clock, schedule, 9, dry_run=True)
    assert (plan.count, plan.new, plan.created) == (10, 10, 0)  # type: ignore[attr-defined]
    assert plan.first == START and plan.last == START + timedelta(hours=9)  # type: ignore[attr-defined]
    assert plan.estimated_cost == 2.5  # type: ignore[attr-defined]
    assert not Occurrence.objects.exists()


def test_backfill_is_idempotent_per_slot_whatever_the_trigger() -> None:
    clock = FakeClock(START)
    schedule = hourly(clock)
    clock.set(START + timedelta(hours=2, seconds=1))
    Ticker(MemoryPublisher(), clock=clock).tick()  # the rule ran 00:00..02:00 (catch-up)
    ran = Occurrence.objects.filter(schedule=schedule).count()
    assert ran == 3
    clock.set(START + timedelta(days=1))
    first = backfilled(clock, schedule, 5)
    again = backfilled(clock, schedule, 5)
    assert first.created == 6 - ran and first.existing == ran  # type: ignore[attr-defined]
    assert (again.created, again.existing) == (0, 6)  # type: ignore[attr-defined]
    slots = Occurrence.objects.filter(schedule=schedule).values_list("scheduled_for", flat=True)
    assert len(slots) == len(set(slots)) == 6


def test_backfilled_rows_queue_one_after_another_by_default() -> None:
    clock = FakeClock(START - timedelta(days=1))
    schedule = hourly(clock, overlap_policy="skip")
    clock.set(START + timedelta(days=1))
    backfilled(clock, schedule, 3, user=None, reason="outage")
    states = list(
        Occurrence.objects.order_by("scheduled_for").values_list("state", "trigger", "note")
    )
    assert states[0] == ("pending", "backfill", "outage")
    assert {state for state, _, _ in states[1:]} == {"buffered"}


def test_backfill_above_the_limit_needs_a_second_confirmation(settings: object) -> None:
    settings.SCHEDULER_BACKFILL_MAX = 5  # type: ignore[attr-defined]
    clock = FakeClock(START - timedelta(days=1))
    schedule = hourly(clock)
    clock.set(START + timedelta(days=1))
    with pytest.raises(ScheduleValidationError, match="more than the limit of 5"):
        backfilled(clock, schedule, 9)
    assert not Occurrence.objects.exists()
    assert backfilled(clock, schedule, 9, confirm_over_max=True).created == 10  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("start", "end", "words"),
    [
        (START + timedelta(hours=2), START, "after end"),
        (START, START + timedelta(days=9), "future"),
    ],
)
def test_bad_ranges_are_refused(start: datetime, end: datetime, words: str) -> None:
    clock = FakeClock(START - timedelta(days=1))
    schedule = hourly(clock)
    clock.set(START + timedelta(days=1))
    with pytest.raises(ScheduleValidationError, match=words):
        services.backfill(schedule, start=start, end=end, clock=clock)


def test_undoing_a_cancel_brings_the_schedule_back_paused() -> None:
    clock = FakeClock(START)
    schedule = hourly(clock)
    clock.set(START + timedelta(seconds=1))
    Ticker(MemoryPublisher(), clock=clock).tick()
    services.cancel_schedule(schedule.pk, clock=clock)
    restored = services.restore_schedule(schedule, clock=clock)
    assert restored.status == ScheduleStatus.PAUSED
    assert restored.next_run_at == START + timedelta(hours=1)
    stopped = Occurrence.objects.get(schedule=schedule)
    assert stopped.attempt_history.get().kind == "restore"
    with pytest.raises(ScheduleStateError, match="not cancelled"):
        services.restore_schedule(schedule, clock=clock)
