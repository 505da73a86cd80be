"""The ticker with a fake clock and an in-memory broker: due instants, misfire policies, DST."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pytest_django.fixtures import Settings as SettingsWrapper

from scheduler_app.clock import FakeClock
from scheduler_app.definition.schedule import timing_for
from scheduler_app.models import OccurrenceState, Schedule, ScheduleStatus, Trigger
from scheduler_app.timing import slots_between
from tests.integration.support import START, MemoryPublisher, reload, rows, schedule, slots, ticker

pytestmark = pytest.mark.django_db
HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
FIRST = datetime(2026, 1, 5, 1, 0, tzinfo=UTC)
"""The first slot of an hourly cron created at START."""


def hourly(clock: FakeClock, policy: str, **fields: object) -> Schedule:
    return schedule(clock, kind="cron", rule="0 * * * *", misfire_policy=policy, **fields)


def hours_from(first: datetime, count: int) -> list[datetime]:
    return [first + HOUR * i for i in range(count)]


def test_nothing_before_the_due_instant_then_exactly_one() -> None:
    clock, broker = FakeClock(START), MemoryPublisher()
    target = schedule(clock, kind="cron", rule="*/5 * * * *")
    beat = ticker(broker, clock)
    due = datetime(2026, 1, 5, 0, 5, tzinfo=UTC)
    assert reload(target).next_run_at == due

    clock.set(due - timedelta(microseconds=1))
    assert beat.tick().created == 0
    assert rows(target) == []

    clock.set(due)
    result = beat.tick()
    assert (result.created, result.published) == (1, 1)
    clock.advance(30)
    assert beat.tick().created == 0
    [row] = rows(target)
    assert (row.scheduled_for, row.trigger, row.state) == (due, Trigger.SCHEDULED, "dispatched")
    assert broker.ids == [str(row.id)]
    assert reload(target).next_run_at == due + timedelta(minutes=5)


def test_a_tick_within_the_grace_is_on_time() -> None:
    clock, broker = FakeClock(START), MemoryPublisher()
    target = hourly(clock, "skip", max_lateness=120)
    clock.set(FIRST + timedelta(seconds=120))
    ticker(broker, clock).tick()
    assert [(r.scheduled_for, r.trigger) for r in rows(target)] == [(FIRST, Trigger.SCHEDULED)]


def test_a_schedule_that_never_ran_has_nothing_to_catch_up() -> None:
    clock = FakeClock(datetime(2026, 1, 5, 12, 0, 10, tzinfo=UTC))
    target = hourly(clock, "catch_up")
    clock.advance(30)
    assert ticker(MemoryPublisher(), clock).tick().created == 0
    assert reload(target).next_run_at == datetime(2026, 1, 5, 13, 0, tzinfo=UTC)


# Hourly slots 01:00 .. 06:00 are all later than the 60 s grace at 06:30.
HOURS_LATE = [
    ("skip", [], 6, 6, 0),
    ("fire_once", [datetime(2026, 1, 5, 6, 0, tzinfo=UTC)], 6, 5, 1),
    ("catch_up", hours_from(FIRST, 6), 6, 0, 6),
]


@pytest.mark.parametrize(("policy", "expected", "missed", "skipped", "caught_up"), HOURS_LATE)
def test_clock_advanced_by_hours(
    policy: str, expected: list[datetime], missed: int, skipped: int, caught_up: int
) -> None:
    clock, broker = FakeClock(START), MemoryPublisher()
    target = hourly(clock, policy)
    clock.set(datetime(2026, 1, 5, 6, 30, tzinfo=UTC))
    assert ticker(broker, clock).tick().created == len(expected)
    found = rows(target)
    assert [r.scheduled_for for r in found] == expected
    assert all(r.trigger == Trigger.CATCH_UP and r.catch_up for r in found)
    assert sorted(broker.ids) == sorted(str(r.id) for r in found)
    stored = reload(target)
    assert (stored.missed_count, stored.skipped_count, stored.caught_up_count) == (
        missed,
        skipped,
        caught_up,
    )
    assert stored.occurrence_count == len(expected)
    assert stored.next_run_at == datetime(2026, 1, 5, 7, 0, tzinfo=UTC)
    assert stored.last_scheduled_for == datetime(2026, 1, 5, 6, 0, tzinfo=UTC)


# At 06:00:30 the 06:00 slot is on time; 01:00 .. 05:00 are late.
ON_TIME_TOO = [
    ("skip", [], 5),
    ("fire_once", [], 5),
    ("catch_up", hours_from(FIRST, 5), 0),
]


@pytest.mark.parametrize(("policy", "late_emitted", "skipped"), ON_TIME_TOO)
def test_late_slots_and_an_on_time_slot(
    policy: str, late_emitted: list[datetime], skipped: int
) -> None:
    clock = FakeClock(START)
    target = hourly(clock, policy)
    on_time = datetime(2026, 1, 5, 6, 0, tzinfo=UTC)
    clock.set(on_time + timedelta(seconds=30))
    ticker(MemoryPublisher(), clock).tick()
    found = [(r.scheduled_for, r.trigger) for r in rows(target)]
    assert found == [(s, Trigger.CATCH_UP) for s in late_emitted] + [(on_time, Trigger.SCHEDULED)]
    stored = reload(target)
    assert (stored.missed_count, stored.skipped_count) == (5, skipped)
    assert stored.caught_up_count == len(late_emitted)


# Three days of hourly slots (72) missed by 00:30 on Jan 8; window 24 h, limit 12.
DAYS_LATE = [
    ("skip", [], 72, 0),
    ("fire_once", [datetime(2026, 1, 8, 0, 0, tzinfo=UTC)], 71, 1),
    ("catch_up", hours_from(datetime(2026, 1, 7, 13, 0, tzinfo=UTC), 12), 60, 12),
]


@pytest.mark.parametrize(("policy", "expected", "skipped", "caught_up"), DAYS_LATE)
def test_clock_advanced_by_days(
    policy: str, expected: list[datetime], skipped: int, caught_up: int
) -> None:
    clock = FakeClock(START)
    target = hourly(clock, policy)
    clock.set(datetime(2026, 1, 8, 0, 30, tzinfo=UTC))
    ticker(MemoryPublisher(), clock).tick()
    assert slots(target) == expected
    stored = reload(target)
    assert (stored.missed_count, stored.skipped_count, stored.caught_up_count) == (
        72,
        skipped,
        caught_up,
    )
    assert stored.next_run_at == datetime(2026, 1, 8, 1, 0, tzinfo=UTC)


def test_catch_up_window_bounds_what_is_caught_up() -> None:
    clock = FakeClock(START)
    target = hourly(clock, "catch_up", catch_up_window=int(2.5 * 3600), catch_up_limit=12)
    clock.set(datetime(2026, 1, 6, 0, 30, tzinfo=UTC))
    ticker(MemoryPublisher(), clock).tick()
    expected = hours_from(datetime(2026, 1, 5, 22, 0, tzinfo=UTC), 3)
    assert slots(target) == expected
    stored = reload(target)
    assert (stored.missed_count, stored.skipped_count, stored.caught_up_count) == (24, 21, 3)


def test_skipped_slots_stay_skipped_after_a_policy_change() -> None:
    clock = FakeClock(START)
    target = hourly(clock, "skip")
    beat = ticker(MemoryPublisher(), clock)
    clock.set(datetime(2026, 1, 5, 6, 30, tzinfo=UTC))
    beat.tick()
    from scheduler_app.services import update_schedule

    update_schedule(target.id, expected_version=1, clock=clock, misfire_policy="catch_up")
    clock.set(datetime(2026, 1, 5, 7, 0, 20, tzinfo=UTC))
    beat.tick()
    assert [(r.scheduled_for.hour, r.trigger) for r in rows(target)] == [(7, Trigger.SCHEDULED)]


def test_window_start_is_the_previous_slot_and_window_end_the_slot() -> None:
    clock = FakeClock(START)
    target = hourly(clock, "catch_up")
    clock.set(datetime(2026, 1, 5, 3, 30, tzinfo=UTC))
    ticker(MemoryPublisher(), clock).tick()
    clock.set(datetime(2026, 1, 5, 4, 0, 5, tzinfo=UTC))
    ticker(MemoryPublisher(), clock).tick()
    windows = [(r.window_start, r.window_end, r.scheduled_for) for r in rows(target)]
    expected_ends = hours_from(FIRST, 4)
    assert [(s - HOUR, s, s) for s in expected_ends] == windows


def test_a_one_time_run_has_a_point_window_and_completes_the_schedule() -> None:
    clock = FakeClock(START)
    at = START + timedelta(minutes=5)
    target = schedule(clock, kind="once", rule=at.isoformat())
    clock.set(at + timedelta(seconds=1))
    beat = ticker(MemoryPublisher(), clock)
    assert beat.tick().created == 1
    [row] = rows(target)
    assert (row.window_start, row.window_end, row.trigger) == (at, at, Trigger.SCHEDULED)
    stored = reload(target)
    assert (stored.status, stored.next_run_at) == (ScheduleStatus.COMPLETED, None)
    clock.advance(DAY)
    assert beat.tick().created == 0


def test_a_rule_that_ends_completes_after_its_last_slot() -> None:
    clock = FakeClock(START)
    ends = datetime(2026, 1, 5, 3, 0, tzinfo=UTC)
    target = hourly(clock, "catch_up", ends_at=ends)
    beat = ticker(MemoryPublisher(), clock)
    clock.set(datetime(2026, 1, 5, 2, 0, 1, tzinfo=UTC))
    beat.tick()
    assert reload(target).status == ScheduleStatus.ACTIVE
    clock.set(datetime(2026, 1, 5, 3, 0, 1, tzinfo=UTC))
    beat.tick()
    assert slots(target) == hours_from(FIRST, 3)
    stored = reload(target)
    assert (stored.status, stored.next_run_at) == (ScheduleStatus.COMPLETED, None)


def test_shadow_mode_records_skipped_rows_and_publishes_nothing() -> None:
    clock, broker = FakeClock(START), MemoryPublisher()
    target = hourly(clock, "catch_up", mode="shadow")
    clock.set(datetime(2026, 1, 5, 2, 0, 1, tzinfo=UTC))
    result = ticker(broker, clock).tick()
    assert result.published == 0
    assert broker.sent == []
    found = rows(target)
    assert [r.scheduled_for for r in found] == hours_from(FIRST, 2)
    assert {(r.state, r.reason) for r in found} == {(OccurrenceState.SKIPPED, "shadow")}


@pytest.mark.parametrize(
    ("rule", "start", "end"),
    [
        # spring forward: 03:00 EET -> 04:00 EEST on 2026-03-29
        ("30 3 * * *", datetime(2026, 3, 27, tzinfo=UTC), datetime(2026, 4, 1, tzinfo=UTC)),
        (
            "*/30 * * * *",
            datetime(2026, 3, 28, 22, tzinfo=UTC),
            datetime(2026, 3, 29, 3, tzinfo=UTC),
        ),
        # fall back: 04:00 EEST -> 03:00 EET on 2026-10-25
        ("30 3 * * *", datetime(2026, 10, 23, tzinfo=UTC), datetime(2026, 10, 28, tzinfo=UTC)),
        (
            "*/30 * * * *",
            datetime(2026, 10, 24, 22, tzinfo=UTC),
            datetime(2026, 10, 25, 3, tzinfo=UTC),
        ),
    ],
)
def test_dst_zone_cron_follows_the_engine(rule: str, start: datetime, end: datetime) -> None:
    clock = FakeClock(start)
    target = schedule(clock, kind="cron", rule=rule, timezone="Europe/Riga")
    beat = ticker(MemoryPublisher(), clock, MAX_INTERVAL=86_400.0)
    while clock.now() <= end:
        result = beat.tick()
        clock.advance(max(result.sleep, 1.0))
    # created at ``start``: a slot at that very instant is its first
    expected = slots_between(timing_for(target), start - timedelta(microseconds=1), end)
    found = rows(target)
    assert [r.scheduled_for for r in found] == expected
    assert {r.trigger for r in found} == {Trigger.SCHEDULED}
    assert {r.timezone for r in found} == {"Europe/Riga"}
    assert len({r.idempotency_key for r in found}) == len(found)


def test_slots_beyond_the_per_tick_cap_are_still_counted(settings: SettingsWrapper) -> None:
    settings.SCHEDULER_MAX_SLOTS_PER_TICK = 5
    clock = FakeClock(START)
    target = schedule(clock, kind="interval", rule="60", catch_up_limit=3, max_lateness=0)
    clock.advance(timedelta(minutes=20, seconds=30))  # 21 late slots, only 5 listed
    ticker(MemoryPublisher(), clock).tick()
    stored = reload(target)
    assert len(rows(target)) == 3
    assert (stored.missed_count, stored.skipped_count, stored.caught_up_count) == (21, 18, 3)
    assert stored.next_run_at == START + timedelta(minutes=21)
