"""One-time runs, delays, deadlines, debounce and active windows through the Python API."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from scheduler_app import services
from scheduler_app.authoring import api
from scheduler_app.clock import FakeClock
from scheduler_app.errors import ScheduleValidationError
from scheduler_app.models import Occurrence, Schedule, ScheduleStatus
from tests.integration.support import MemoryPublisher, ticker

pytestmark = pytest.mark.django_db
TASK = "demo.ping"
START = datetime(2026, 3, 20, 10, 0, tzinfo=UTC)


def occurrences() -> list[Occurrence]:
    return list(Occurrence.objects.order_by("scheduled_for"))


def test_run_once_at_an_instant_fires_once() -> None:
    clock = FakeClock(START)
    schedule = api.run_once(TASK, at=START + timedelta(hours=1), clock=clock)
    beat = ticker(MemoryPublisher(), clock)
    clock.advance(timedelta(hours=1))
    beat.tick()
    clock.advance(timedelta(hours=1))
    beat.tick()
    [only] = occurrences()
    assert only.scheduled_for == START + timedelta(hours=1)
    assert only.window_start == only.window_end == only.scheduled_for
    schedule.refresh_from_db()
    assert schedule.status == ScheduleStatus.COMPLETED


def test_run_once_at_a_local_time_that_does_not_exist_is_shifted() -> None:
    # Riga skips 03:00-04:00 on 2026-03-29: 03:30 local is read with the winter offset (+02).
    schedule = api.run_once(
        TASK, at=datetime(2026, 3, 29, 3, 30), timezone="Europe/Riga", clock=FakeClock(START)
    )
    assert schedule.next_run_at == datetime(2026, 3, 29, 1, 30, tzinfo=UTC)


def test_run_in_is_relative_to_the_clock() -> None:
    schedule = api.run_in(TASK, "20m", clock=FakeClock(START))
    assert schedule.next_run_at == START + timedelta(minutes=20)


def test_run_after_an_event() -> None:
    event = START - timedelta(days=1)
    schedule = api.run_after(TASK, event_at=event, delay="3d", clock=FakeClock(START))
    assert schedule is not None and schedule.next_run_at == event + timedelta(days=3)


@pytest.mark.parametrize("if_past", ["error", "run_now", "skip"])
def test_run_after_an_event_long_ago(if_past: str) -> None:
    event = START - timedelta(days=30)
    clock = FakeClock(START)
    if if_past == "error":
        with pytest.raises(ScheduleValidationError) as error:
            api.run_after(TASK, event_at=event, delay="7d", clock=clock)
        assert error.value.field == "event_at"
        assert not Schedule.objects.exists()
    elif if_past == "skip":
        assert api.run_after(TASK, event_at=event, delay="7d", if_past="skip", clock=clock) is None
    else:
        schedule = api.run_after(TASK, event_at=event, delay="7d", if_past="run_now", clock=clock)
        assert schedule is not None and schedule.next_run_at == START


def test_deadline_alarm_is_a_one_time_run_labelled_deadline() -> None:
    schedule = api.deadline_alarm(TASK, deadline=START + timedelta(days=2), clock=FakeClock(START))
    assert (schedule.kind, schedule.objective) == ("once", "deadline")


def test_debounce_fires_once_after_the_quiet_period_with_the_burst_as_window() -> None:
    clock = FakeClock(START)
    beat = ticker(MemoryPublisher(), clock)
    for _ in range(5):  # a change every 3 minutes: the run keeps moving
        api.debounce(TASK, key="catalog", quiet="10m", clock=clock)
        clock.advance(timedelta(minutes=3))
        beat.tick()
    assert occurrences() == []
    clock.advance(timedelta(minutes=10))
    beat.tick()
    [run] = occurrences()
    assert run.scheduled_for == START + timedelta(minutes=12 + 10)  # last call + quiet
    assert run.window_start == START  # the first call of the burst
    assert Schedule.objects.get().version == 1  # moving the run makes no version


def test_a_new_burst_after_firing_runs_again() -> None:
    clock = FakeClock(START)
    beat = ticker(MemoryPublisher(), clock)
    api.debounce(TASK, key="catalog", quiet="10m", clock=clock)
    clock.advance(timedelta(minutes=11))
    beat.tick()
    api.debounce(TASK, key="catalog", quiet="10m", clock=clock)
    clock.advance(timedelta(minutes=11))
    beat.tick()
    _first, second = occurrences()
    assert second.window_start == START + timedelta(minutes=11)
    assert Schedule.objects.count() == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_debounce_is_safe_under_concurrent_callers() -> None:
    clock = FakeClock(START)
    errors: list[BaseException] = []

    def caller() -> None:
        try:
            for _ in range(5):
                api.debounce(TASK, key="busy", quiet="10m", clock=clock)
        except BaseException as exc:  # surfaced below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=caller) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert Schedule.objects.filter(key="debounce:busy").count() == 1
    clock.advance(timedelta(minutes=11))
    ticker(MemoryPublisher(), clock).tick()
    assert Occurrence.objects.count() == 1


def test_active_window_defers_slots_to_the_next_opening_across_dst() -> None:
    # Hourly, only Mon-Fri 09:00-18:00 Paris. Friday 2026-03-27 17:00 CET is the last slot;
    # the weekend's slots become one run at Monday 09:00 CEST (clocks went forward Sunday).
    clock = FakeClock(datetime(2026, 3, 27, 15, 30, tzinfo=UTC))
    services.create_schedule(
        task=TASK,
        kind="cron",
        rule="0 * * * *",
        timezone="Europe/Paris",
        active_window="MON-FRI 09:00-18:00",
        overlap_policy="allow",
        clock=clock,
    )
    beat = ticker(MemoryPublisher(), clock)
    for _ in range(70):
        clock.advance(timedelta(hours=1))
        beat.tick()
    slots = [row.scheduled_for for row in occurrences()]
    assert slots[:3] == [
        datetime(2026, 3, 27, 16, tzinfo=UTC),
        datetime(2026, 3, 30, 7, tzinfo=UTC),
        datetime(2026, 3, 30, 8, tzinfo=UTC),
    ]


def test_a_bad_active_window_is_refused() -> None:
    with pytest.raises(ScheduleValidationError) as error:
        services.create_schedule(task=TASK, kind="cron", rule="0 * * * *", active_window="weekdays")
    assert error.value.field == "window"
    assert not Schedule.objects.exists()


def test_a_key_used_twice_is_a_clear_error() -> None:
    clock = FakeClock(START)
    event = START + timedelta(days=1)
    api.run_after(TASK, event_at=event, delay="7d", key="lead:42:d7", clock=clock)
    with pytest.raises(ScheduleValidationError) as error:
        api.run_after(TASK, event_at=event, delay="7d", key="lead:42:d7", clock=clock)
    assert (error.value.field, error.value.code) == ("key", "duplicate_key")
    assert Schedule.objects.count() == 1
