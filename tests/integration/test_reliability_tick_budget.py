"""The work of one tick is bounded: after years of downtime a dense schedule costs one catch-up
of at most ``catch_up_limit`` (<= 1,000) runs, and one batch creates at most
``SCHEDULER_MAX_ROWS_PER_BATCH`` occurrences; the rest waits for the next batch."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pytest_django.fixtures import Settings

from scheduler_app.clock import FakeClock
from scheduler_app.dispatch import materialize
from scheduler_app.dispatch.materialize import materialize_batch
from scheduler_app.models import Occurrence, Schedule
from tests.integration.support import START, MemoryPublisher, reload, schedule, ticker

pytestmark = pytest.mark.django_db
WIDEST = {"catch_up_window": 7 * 86400, "catch_up_limit": 1000}


def test_a_minutely_schedule_three_years_behind_costs_one_bounded_tick() -> None:
    clock = FakeClock(START)
    target = schedule(clock, kind="cron", rule="* * * * *", **WIDEST)
    clock.set(START + timedelta(days=3 * 365))
    ticker(MemoryPublisher(), clock).tick()
    created = Occurrence.objects.filter(schedule=target).count()
    assert created <= 1000 + 1  # the catch-up limit, plus the slot that is on time
    stored = reload(target)
    assert stored.next_run_at is not None and stored.next_run_at > clock.now()
    # Counted up to what the walk examines (SCHEDULER_MAX_SLOTS_PER_TICK older slots, then
    # the catch-up window), not one by one over three years.
    assert stored.skipped_count > 10_000


def test_one_batch_stops_at_the_row_budget_and_the_next_takes_the_rest(
    settings: Settings,
) -> None:
    settings.SCHEDULER_MAX_ROWS_PER_BATCH = 1500
    clock = FakeClock(START)
    targets = [schedule(clock, kind="cron", rule="* * * * *", **WIDEST) for _ in range(3)]
    clock.set(START + timedelta(days=2))
    first = materialize_batch(clock.now(), 10)
    assert first.claimed == 2  # 1,001 rows each: the second crosses the budget
    untouched = [t for t in targets if not Occurrence.objects.filter(schedule=t).exists()]
    assert len(untouched) == 1
    assert Schedule.objects.get(pk=untouched[0].pk).next_run_at == targets[0].next_run_at
    second = materialize_batch(clock.now(), 10)
    assert second.claimed == 1
    assert all(Occurrence.objects.filter(schedule=t).count() == 1001 for t in targets)


def test_one_batch_stops_planning_at_its_time_budget_and_the_next_takes_the_rest(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rules slow to evaluate cannot hold the batch's row locks for longer than
    ``SCHEDULER_PLAN_SECONDS_PER_BATCH``: here each plan costs 0.6 s of a fake timer."""
    settings.SCHEDULER_PLAN_SECONDS_PER_BATCH = 1.0
    elapsed = [0.0]
    real_plan = materialize.plan_schedule

    def slow_plan(*args: object, **kwargs: object) -> list[Occurrence]:
        elapsed[0] += 0.6
        return real_plan(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(materialize, "monotonic", lambda: elapsed[0])
    monkeypatch.setattr(materialize, "plan_schedule", slow_plan)
    clock = FakeClock(START)
    targets = [schedule(clock, kind="cron", rule="*/5 * * * *") for _ in range(5)]
    clock.set(START + timedelta(minutes=1))
    due = min(reload(t).next_run_at for t in targets)
    clock.set(due)
    first = materialize_batch(clock.now(), 10)
    assert first.claimed == 2  # 0.6 s, then 1.2 s: the third waits
    waiting = [t for t in targets if not Occurrence.objects.filter(schedule=t).exists()]
    assert len(waiting) == 3
    assert all(Schedule.objects.get(pk=t.pk).next_run_at == due for t in waiting)
    assert materialize_batch(clock.now(), 10).claimed == 2
    assert materialize_batch(clock.now(), 10).claimed == 1
    assert all(Occurrence.objects.filter(schedule=t).count() == 1 for t in targets)
